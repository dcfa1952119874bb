"""Issue #18 item 5: the TLS 1.3 suite preference measured with our own ClientHello
(workers/tls/tls13.py) against openssl s_server, with and without -serverpref."""

from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.scanfacts import CipherSuite
from workers.tls import hello, tls13
from workers.tls.engine import run_scan
from workers.tls.probes import Endpoint

SERVER_ORDER = ("TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256")
TLS13_ONLY = ("-tls1_3", "-ciphersuites", ":".join(SERVER_ORDER))


def suites(names):
    return [CipherSuite(name=n, openssl_name=n, protocol="TLSv1.3", key_size=128) for n in names]


def endpoint(port: int) -> Endpoint:
    return Endpoint(host="localhost", ip="127.0.0.1", port=port, timeout=3.0)


def test_it_reads_the_whole_tls13_order_of_a_server_that_imposes_it(s_server):
    port = s_server("-serverpref", *TLS13_ONLY)
    preference = tls13.probe_tls13_preference(endpoint(port), suites(reversed(SERVER_ORDER)))
    assert (preference.enforced, preference.order, preference.reason) == (True, SERVER_ORDER, "")


def test_it_sees_a_tls13_server_that_follows_the_client(s_server):
    port = s_server(*TLS13_ONLY)
    preference = tls13.probe_tls13_preference(endpoint(port), suites(SERVER_ORDER))
    assert preference.enforced is False and preference.reason == ""


def test_a_single_tls13_suite_has_no_order_and_says_so(s_server):
    preference = tls13.probe_tls13_preference(endpoint(1), suites(SERVER_ORDER[:1]))
    assert preference.enforced is None and "single" in preference.reason


def test_a_failed_tls13_probe_says_why(closed_port):
    preference = tls13.probe_tls13_preference(endpoint(closed_port), suites(SERVER_ORDER))
    assert preference.enforced is None and preference.reason.startswith("The probe failed")


def test_the_server_hello_names_version_suite_and_group(s_server):
    port = s_server("-serverpref", *TLS13_ONLY)
    spec = hello.ClientHelloSpec(suites=[0x1301, 0x1303], groups=[0x001D, 0x0017], key_share_groups=[0x001D])
    answer = hello.exchange(endpoint(port), spec)
    assert (answer.kind, answer.version_name, answer.suite_name, answer.group_name) == (
        "server_hello", "TLSv1.3", "TLS_CHACHA20_POLY1305_SHA256", "x25519")
    assert answer.server_share_bytes == 32


def test_a_share_for_a_group_the_server_does_not_want_gets_a_hello_retry(s_server):
    port = s_server("-groups", "P-256", *TLS13_ONLY)
    spec = hello.ClientHelloSpec(suites=[0x1301], groups=[0x001D, 0x0017], key_share_groups=[0x001D])
    answer = hello.exchange(endpoint(port), spec)
    assert (answer.kind, answer.group_name) == ("hello_retry", "secp256r1")


def test_the_audit_measures_tls13_order_and_the_text_report_says_how_it_lists(s_server, test_pki):
    """End to end: a TLS 1.2 + 1.3 server that imposes its order, and one that does not."""
    for args, enforced, heading in ((("-serverpref",), True, "TLSv1.3 (server order)"),
                                    ((), False, "TLSv1.3 (no server order: the client chooses; listed by name)")):
        port = s_server(*args, "-ciphersuites", ":".join(SERVER_ORDER))
        outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                           ca_file=str(test_pki.root_file))
        preference = outcome.facts.preferences["TLSv1.3"]
        assert preference.enforced is enforced
        text = render_text(outcome.facts, build_report(outcome.facts, outcome.mozilla), outcome.duration_s)
        lines = text.splitlines()
        at = lines.index(f"   {heading}")
        listed = [line.split()[0] for line in lines[at + 1:at + 4]]
        assert listed == (list(SERVER_ORDER) if enforced else sorted(SERVER_ORDER))
