"""Issue #18 item 1 (first set of profiles): recorded ClientHellos of Chromium, curl, Java, Node and
Python, replayed against nginx configurations whose negotiation is known, and a Go server."""

import pytest

from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from workers.tls.clients import load_profiles, simulate_clients
from workers.tls.engine import run_scan
from workers.tls.hello import parse_client_hello
from workers.tls.probes import Endpoint

CLIENTS = ["chromium", "curl", "java", "node", "python"]


def simulate(port: int) -> dict:
    return {c.client: c for c in simulate_clients(Endpoint("localhost", "127.0.0.1", port, 3.0))}


def test_the_profiles_are_the_recorded_client_hellos_read_back():
    """Each profile keeps the raw ClientHello it was read from; reading it again gives the same offer."""
    profiles = load_profiles()
    assert list(profiles) == CLIENTS
    for profile in profiles.values():
        parsed = parse_client_hello(bytes.fromhex(profile["client_hello"]))
        assert {k: profile[k] for k in parsed} == parsed
        assert profile["source"].startswith("recorded here")
    assert profiles["chromium"]["key_share_groups"] == [0x11EC, 0x001D]     # X25519MLKEM768 first, then X25519


def test_every_client_gets_tls13_from_a_modern_nginx(tls_lab):
    results = simulate(tls_lab.port("a_plus_rsa_hsts"))
    assert list(results) == CLIENTS
    for c in results.values():
        assert (c.protocol, c.group, c.error) == ("TLSv1.3", "x25519", ""), c    # Debian's OpenSSL 3.0: no ML-KEM
        assert c.suite.startswith("TLS_AES_") or c.suite.startswith("TLS_CHACHA20")


def test_a_tls12_only_server_gives_each_client_the_servers_first_ecdhe_suite(tls_lab):
    """The lab enforces its order (ssl_prefer_server_ciphers on), so every client gets its first suite."""
    results = simulate(tls_lab.port("a_minus_tls12_only"))
    assert {(c.protocol, c.suite, c.group) for c in results.values()} == {
        ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "x25519")}


def test_clients_without_tls10_fail_on_a_tls10_only_server_and_say_why(tls_lab):
    results = simulate(tls_lab.port("c_tls10_only"))
    for name in ("chromium", "java", "node", "python"):          # they offer TLS 1.2 and 1.3 only
        assert results[name].protocol is None and results[name].tested
        assert results[name].error == "no protocol version in common", results[name]
    assert (results["curl"].protocol, results["curl"].suite) == ("TLSv1.0", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")


def test_chromium_gets_x25519mlkem768_from_go_and_the_report_shows_the_table(go_tls_server, test_pki):
    outcome = run_scan("localhost", go_tls_server(), ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    sims = {c.client: c for c in outcome.facts.client_simulation}
    assert (sims["chromium"].protocol, sims["chromium"].group) == ("TLSv1.3", "X25519MLKEM768")
    assert sims["java"].group == "x25519"
    text = render_text(outcome.facts, build_report(outcome.facts, outcome.mozilla), outcome.duration_s)
    row = next(line for line in text.splitlines() if line.strip().startswith("Chromium 156"))
    assert "TLSv1.3" in row and "X25519MLKEM768" in row


@pytest.mark.parametrize("name", CLIENTS)
def test_a_closed_port_is_not_tested_rather_than_failed(closed_port, name):
    (result,) = [c for c in simulate_clients(Endpoint("localhost", "127.0.0.1", closed_port, 2.0))
                 if c.client == name]
    assert result.tested is False and result.error.startswith("could not be tested")
