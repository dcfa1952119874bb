"""#28 item 8: the two notices the report lacked, each against a real `openssl s_server` and what a real
client sees there: "SNI required" (testssl.sh's "SNI mandatory") and "Client certificate requested"."""

import subprocess

import pki
import pytest

from tlsaudit.domain.findings import derive_findings
from workers.tls.engine import run_scan


def audit(port: int, test_pki):
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    assert outcome.error is None, outcome.error
    return outcome.facts, {f.id: f for f in derive_findings(outcome.facts)}


def subject_seen(port: int, *args: str) -> str:
    """The leaf's subject as openssl s_client sees it (`-noservername`: a client that sends no SNI)."""
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args], input="",
                          capture_output=True, text=True, timeout=30)
    return next(line for line in done.stdout.splitlines() if line.startswith("subject="))


@pytest.fixture(scope="module")
def default_site(test_pki, tmp_path_factory):
    """Another site's certificate, which the server sends to clients that name no site."""
    folder = tmp_path_factory.mktemp("default-site")
    leaf = pki.issue_leaf(test_pki.intermediate, dns=("default.example",), ips=())
    return pki.write_pem(folder / "default.pem", leaf, test_pki.intermediate), pki.write_key(folder / "d.key", leaf)


def test_a_server_with_another_default_certificate_gets_the_sni_notice(s_server, test_pki, default_site):
    cert, key = default_site
    # -cert: what a client without SNI (or naming another site) gets; -cert2: the site named localhost
    port = s_server("-servername", "localhost", "-cert2", str(test_pki.chain_file), "-key2", str(test_pki.key_file),
                    cert=cert, key=key, send_intermediate=False)
    assert subject_seen(port, "-noservername").endswith("CN = default.example")
    assert subject_seen(port, "-servername", "localhost").endswith("CN = localhost")
    facts, findings = audit(port, test_pki)
    assert facts.certificates[0].leaf.subject.startswith("CN=localhost")
    notice = findings["tls.sni_required"]
    assert (notice.status, notice.severity) == ("info", "info")
    assert notice.evidence.startswith("without SNI the server sends another certificate: CN=default.example")


def test_one_certificate_for_every_client_gets_no_sni_notice(go_tls_server, test_pki):
    # a Go server: it answers the audit's connections side by side (openssl s_server takes one at a time)
    _, findings = audit(go_tls_server(), test_pki)
    assert findings["tls.sni_required"].status == "pass"
    assert findings["tls.client_auth"].status == "pass"


def test_a_server_that_asks_for_a_client_certificate_is_reported_and_curl_still_connects(s_server, test_pki):
    port = s_server("-verify", "1")      # request a client certificate, go on without one
    done = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--cacert", str(test_pki.root_file), "--resolve",
                           f"localhost:{port}:127.0.0.1", f"https://localhost:{port}/"], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    facts, findings = audit(port, test_pki)
    assert facts.client_auth == "optional"
    notice = findings["tls.client_auth"]
    assert notice.status == "info" and "requests a client certificate, and goes on without one" in notice.evidence
