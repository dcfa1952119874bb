"""Our own probes against real local servers: cipher preference, ALPN, the HSTS header, wire diagnosis."""

from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK, CipherSuite
from workers.tls import probes

# (IANA, OpenSSL) names, in the order the preferring server is configured with.
SERVER_ORDER = [
    ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
    ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"),
    ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"),
    ("TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"),
]
CIPHER_STRING = ":".join(openssl for _, openssl in SERVER_ORDER)


def suites(pairs, protocol="TLSv1.2"):
    return [CipherSuite(name=iana, openssl_name=openssl, protocol=protocol, key_size=128) for iana, openssl in pairs]


def endpoint(port: int, host: str = "localhost") -> probes.Endpoint:
    return probes.Endpoint(host=host, ip="127.0.0.1", port=port, timeout=3.0)


def test_it_finds_the_full_order_of_a_server_that_enforces_its_own(s_server):
    port = s_server("-serverpref", "-cipher", CIPHER_STRING)
    offered = suites(reversed(SERVER_ORDER))            # our list is the server's order reversed
    preference = probes.probe_preference(endpoint(port), "TLSv1.2", offered)
    assert preference.enforced is True
    assert preference.order == tuple(iana for iana, _ in SERVER_ORDER)
    assert preference.reason == ""


def test_it_sees_a_server_that_follows_the_client_order(s_server):
    port = s_server("-cipher", CIPHER_STRING)
    preference = probes.probe_preference(endpoint(port), "TLSv1.2", suites(SERVER_ORDER))
    assert preference.enforced is False


def test_suites_python_cannot_offer_go_last_with_a_note(s_server):
    port = s_server("-serverpref", "-cipher", CIPHER_STRING)
    legacy = ("TLS_RSA_EXPORT_WITH_RC4_40_MD5", "EXP-RC4-MD5")     # removed from OpenSSL 3
    preference = probes.probe_preference(endpoint(port), "TLSv1.2", suites([legacy, *SERVER_ORDER]))
    assert preference.enforced is True
    assert preference.order[-1] == legacy[0]
    assert preference.order[:4] == tuple(iana for iana, _ in SERVER_ORDER)
    assert "cannot offer" in preference.reason and legacy[0] in preference.reason


def test_a_single_suite_has_no_order():
    preference = probes.probe_preference(endpoint(1), "TLSv1.2", suites(SERVER_ORDER[:1]))
    assert preference.enforced is None and "single suite" in preference.reason


def test_a_failed_preference_probe_says_why(closed_port):
    preference = probes.probe_preference(endpoint(closed_port), "TLSv1.2", suites(SERVER_ORDER))
    assert preference.enforced is None and preference.reason.startswith("The probe failed")


def test_alpn_with_h2_and_http11(s_server):
    port = s_server("-alpn", "h2,http/1.1")
    agreed, check = probes.probe_alpn(endpoint(port))
    assert agreed == ["h2", "http/1.1"]
    assert check.status == OK and check.value["preferred"] == "h2"


def test_alpn_with_http11_only(s_server):
    port = s_server("-alpn", "http/1.1")
    agreed, check = probes.probe_alpn(endpoint(port))
    assert agreed == ["http/1.1"] and check.value["preferred"] == "http/1.1"


def test_a_server_without_alpn(s_server):
    agreed, check = probes.probe_alpn(endpoint(s_server()))
    assert agreed == [] and check.status == BAD


def test_alpn_on_a_dead_port_is_not_tested(closed_port):
    agreed, check = probes.probe_alpn(endpoint(closed_port))
    assert agreed == [] and check.status == NOT_TESTED and check.reason


def test_it_reads_the_hsts_header_over_tls(http_server):
    port = http_server({"/": (200, {"Strict-Transport-Security": "max-age=31536000; includeSubDomains"})})
    answer = probes.fetch_hsts_header(endpoint(port))
    assert answer.hsts_header == "max-age=31536000; includeSubDomains" and answer.status == 200


def test_it_follows_same_host_redirects_to_find_hsts(http_server):
    port = http_server({"/": (301, {"Location": "/en/"}),
                        "/en/": (200, {"Strict-Transport-Security": 'max-age="600"'})})
    answer = probes.fetch_hsts_header(endpoint(port))
    assert (answer.hsts_header, answer.path) == ('max-age="600"', "/en/")


def test_it_does_not_follow_redirects_to_other_hosts(http_server):
    port = http_server({"/": (302, {"Location": "https://elsewhere.example/"})})
    answer = probes.fetch_hsts_header(endpoint(port))
    assert answer.hsts_header is None and answer.status == 302


def test_wire_diagnosis_of_plain_http_silence_and_refusal(http_server, blackhole_port, closed_port, s_server):
    assert probes.diagnose_wire("127.0.0.1", http_server({}, tls=False), 2) == "http"
    assert probes.diagnose_wire("127.0.0.1", blackhole_port, 0.5) == "silent"
    assert probes.diagnose_wire("127.0.0.1", closed_port, 2) == "refused"
    assert probes.diagnose_wire("127.0.0.1", s_server(), 2) in ("tls", "closed")
