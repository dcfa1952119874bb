"""#28 item 1: a leaf under a 1024-bit RSA intermediate, all sent, from a root the organization trusts.
sslyze's validation (cryptography) refuses the weak key and the report said T, "no chain to a root this
store trusts". Browsers and GnuTLS trust the chain; OpenSSL at Debian's security level 2 (curl) refuses
it. The report now says what browsers do, names the weak intermediate with its key size, and the fix
addresses it."""

import subprocess

import pki
import pytest

from tlsaudit.domain.audit_report import build_report
from workers.tls.engine import run_scan


@pytest.fixture(scope="module")
def weak_chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("weak-intermediate")
    root = pki.make_ca("Weak Chain Root", key="rsa2048")
    intermediate = pki.make_ca("Weak Chain Intermediate", key="rsa1024", issuer=root)
    leaf = pki.issue_leaf(intermediate, key="rsa2048")
    return (pki.write_pem(folder / "root.pem", root), pki.write_pem(folder / "leaf.pem", leaf),
            pki.write_key(folder / "leaf.key", leaf), pki.write_pem(folder / "intermediate.pem", intermediate))


def real_outcomes(port: int, root) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    curl = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--cacert", str(root), "--resolve",
                           f"localhost:{port}:127.0.0.1", f"https://localhost:{port}/"],
                          capture_output=True, text=True, timeout=30)
    gnutls = subprocess.run(["gnutls-cli", "--x509cafile", str(root), "-p", str(port), "localhost"],
                            input="", capture_output=True, text=True, timeout=30)
    return curl, gnutls


@pytest.fixture(scope="module")
def weak_chain_server(weak_chain):
    """A Go crypto/tls server sending leaf and weak intermediate (OpenSSL 3 would not even load such a chain
    at its default security level, and `openssl s_server` answers one connection at a time)."""
    from tests.support.gotls import GoTlsServers, build_server

    root, leaf, key, intermediate = weak_chain
    chain = leaf.with_name("chain.pem")
    chain.write_bytes(leaf.read_bytes() + intermediate.read_bytes())
    servers = GoTlsServers(build_server(), chain, key)
    yield servers(), root
    servers.stop()


def test_a_weak_intermediate_is_named_and_the_chain_trusted_as_browsers_judge_it(weak_chain_server):
    port, root = weak_chain_server
    curl, gnutls = real_outcomes(port, root)
    assert curl.returncode != 0 and "CA certificate key too weak" in curl.stderr
    assert gnutls.returncode == 0 and "The certificate is trusted" in gnutls.stdout

    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2, ca_file=str(root))
    (deployment,) = outcome.facts.certificates
    custom = next(t for t in deployment.trust if t.store == "Custom CA")
    assert (custom.trusted, custom.weak_key_only) == (True, True)
    report = build_report(outcome.facts, outcome.mozilla)
    assert report.grade.grade not in ("T", "M") and not report.grade.trust_issues
    findings = {f.id: f for f in report.findings}
    assert findings["cert.untrusted"].status == "pass"
    assert "as browsers judge it" in findings["cert.untrusted"].evidence
    weak = findings["cert.weak_intermediate"]
    assert (weak.status, weak.severity) == ("fail", "high")
    assert weak.evidence.startswith("CN=Weak Chain Intermediate") and "1024-bit RSA key" in weak.evidence
    fix = next(r for r in report.recommendations if r.id == "cert.replace")
    assert "its intermediate CN=Weak Chain Intermediate" in fix.why and "1024-bit RSA key" in fix.why
    # the simulation agrees with the real clients: curl refuses the intermediate, GnuTLS takes it
    sims = {c.client: c for c in outcome.facts.client_simulation}
    assert sims["curl"].protocol is None and "refuses the intermediate CN=Weak Chain Intermediate" in sims["curl"].error
    assert sims["gnutls"].protocol == "TLSv1.3"
