"""#28 item 7: an unrelated certificate in the sent chain is "extra", not "out of order" (sslyze's
`received_chain_has_valid_order` says False for both); a swapped pair is "out of order". Each
against a real `openssl s_server` sending the chain as written, and real curl, which accepts both."""

import subprocess

import pki
import pytest

from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.findings import derive_findings
from workers.tls.certs import chain_layout
from workers.tls.engine import run_scan

STRAY = "CN=Stray Unrelated CA,O=TLS Audit tests"


@pytest.fixture(scope="module")
def stray(test_pki):
    """A CA of another hierarchy, which issued nothing on this chain."""
    return pki.make_ca("Stray Unrelated CA")


def test_the_layout_tells_an_extra_certificate_from_a_swapped_pair(test_pki, stray):
    leaf, inter, root = test_pki.leaf.cert, test_pki.intermediate.cert, test_pki.root.cert
    assert chain_layout([leaf, inter]) == (True, ())
    assert chain_layout([leaf, inter, stray.cert]) == (True, (STRAY,))
    assert chain_layout([leaf, stray.cert, inter]) == (True, (STRAY,))
    assert chain_layout([leaf, root, inter]) == (False, ())
    assert chain_layout([leaf]) == (True, ())
    assert chain_layout([]) == (None, None)


def served(s_server, test_pki, tmp_path, *chain) -> int:
    return s_server("-cert_chain", str(pki.write_pem(tmp_path / "chain.pem", *chain)), send_intermediate=False)


def curl_accepts(port: int, test_pki) -> bool:
    result = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--cacert", str(test_pki.root_file),
                             "--resolve", f"localhost:{port}:127.0.0.1", f"https://localhost:{port}/"],
                            capture_output=True, text=True, timeout=20)
    return result.returncode == 0


def audit(port, test_pki):
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    (deployment,) = outcome.facts.certificates
    text = render_text(outcome.facts, build_report(outcome.facts, outcome.mozilla), outcome.duration_s)
    return deployment, {f.id: f for f in derive_findings(outcome.facts)}, text


def test_an_unrelated_certificate_is_reported_extra_and_the_chain_in_order(s_server, test_pki, stray, tmp_path):
    port = served(s_server, test_pki, tmp_path, test_pki.intermediate, stray)
    assert curl_accepts(port, test_pki)
    deployment, findings, text = audit(port, test_pki)
    assert len(deployment.chain) == 3
    assert (deployment.chain_in_order, deployment.chain_extra) == (True, (STRAY,))
    assert findings["cert.chain_extra"].status == "fail"
    assert STRAY in findings["cert.chain_extra"].evidence
    assert findings["cert.chain_order"].status == "pass"
    # the text report lists every sent certificate, the intermediate too, and marks the extra one
    assert "2. CN=TLS Audit Test Intermediate" in text and f"3. {STRAY} (key EC 256, signature sha256, extra)" in text


def test_a_root_sent_before_its_intermediate_is_out_of_order_with_nothing_extra(s_server, test_pki, tmp_path):
    port = served(s_server, test_pki, tmp_path, test_pki.root, test_pki.intermediate)
    assert curl_accepts(port, test_pki)
    deployment, findings, _ = audit(port, test_pki)
    assert (deployment.chain_in_order, deployment.chain_extra) == (False, ())
    assert findings["cert.chain_order"].status == "fail" and findings["cert.chain_extra"].status == "pass"
