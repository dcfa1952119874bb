"""#28 item 9: a Go server offering RC4 had the TLS 1.2 order of its two RC4 suites appended ("2 accepted
suite(s) Python's OpenSSL cannot offer") rather than measured. Our own ClientHello names every suite, and
the server's choice is in its ServerHello: the whole order is measured."""

from workers.tls.engine import run_scan
from workers.tls.hello_preference import pick
from workers.tls.probes import Endpoint

SUITES = ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_RC4_128_SHA")


def test_a_go_server_with_rc4_has_its_whole_tls12_order_measured(go_tls_server, test_pki):
    port = go_tls_server(suites=",".join(SUITES))
    endpoint = Endpoint("localhost", "127.0.0.1", port, 3.0)
    # Go keeps its own order whatever the client lists: RC4 last, forward secrecy first
    assert pick(endpoint, "TLSv1.2", SUITES[::-1]) == pick(endpoint, "TLSv1.2", SUITES) == SUITES[0]
    assert pick(endpoint, "TLSv1.2", SUITES[:0:-1]) == "TLS_ECDHE_RSA_WITH_RC4_128_SHA"
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    preference = outcome.facts.preferences["TLSv1.2"]
    assert sorted(s.name for s in outcome.facts.suites_for("TLSv1.2")) == sorted(SUITES)
    assert (preference.enforced, preference.order, preference.reason) == (True, SUITES, "")
