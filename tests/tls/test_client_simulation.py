"""Issue #18 item 1: recorded ClientHellos of Chromium, Firefox ESR, curl, GnuTLS, Go, Java, Node and
Python, and the published ClientHellos of clients that cannot run here (Safari, old Android, IE 11,
Java 8), replayed against nginx configurations whose negotiation is known, and a Go server."""

import pytest

from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.grading import grade
from workers.tls.clients import load_profiles, simulate_clients
from workers.tls.engine import run_scan
from workers.tls.hello import parse_client_hello
from workers.tls.probes import Endpoint

RECORDED = ["chromium", "firefox", "curl", "gnutls", "go", "java", "node", "python"]
PUBLISHED = ["safari_15_4", "android_4_4_2", "ie11_win7", "java_8u31", "java_8u161"]
CLIENTS = RECORDED + PUBLISHED
TLS12_ONLY_CLIENTS = ["android_4_4_2", "ie11_win7", "java_8u31", "java_8u161"]


def simulate(port: int) -> dict:
    return {c.client: c for c in simulate_clients(Endpoint("localhost", "127.0.0.1", port, 3.0))}


def test_the_profiles_are_the_recorded_client_hellos_read_back():
    """Each profile keeps the raw ClientHello it was read from; reading it again gives the same offer."""
    profiles = load_profiles()
    assert list(profiles) == CLIENTS
    for profile in profiles.values():
        parsed = parse_client_hello(bytes.fromhex(profile["client_hello"]))
        assert {k: profile[k] for k in parsed} == parsed
    assert profiles["chromium"]["key_share_groups"] == [0x11EC, 0x001D]     # X25519MLKEM768 first, then X25519
    assert profiles["firefox"]["key_share_groups"][0] == 0x11EC and profiles["go"]["key_share_groups"][0] == 0x11EC
    assert profiles["firefox"]["client"].startswith("Mozilla Firefox") and "esr" in profiles["firefox"]["client"]
    assert profiles["gnutls"]["client"].startswith("gnutls-cli 3.")


def test_recorded_profiles_say_so_and_published_ones_name_their_source():
    profiles = load_profiles()
    for name in RECORDED:
        assert profiles[name]["source"].startswith("recorded here") and profiles[name].get("recorded", True)
    for name in PUBLISHED:
        assert profiles[name]["recorded"] is False, name
        assert "https://api.ssllabs.com/api/v3/getClients" in profiles[name]["source"]
        assert "cipher suites, groups, signature algorithms and protocol versions" in profiles[name]["source"]
    assert [n for n, p in profiles.items() if not p.get("modern", True)] == TLS12_ONLY_CLIENTS
    for name in TLS12_ONLY_CLIENTS:                           # no supported_versions: TLS 1.2 at most
        assert profiles[name]["versions"] == [0x0303], name


def test_every_modern_client_gets_tls13_from_a_modern_nginx(tls_lab):
    results = simulate(tls_lab.port("a_plus_rsa_hsts"))
    assert list(results) == CLIENTS
    for name in RECORDED + ["safari_15_4"]:
        c = results[name]
        # Debian's OpenSSL 3.0 has no ML-KEM; GnuTLS sends a P-256 share first and the server takes it.
        assert (c.protocol, c.group, c.error) == ("TLSv1.3", "secp256r1" if name == "gnutls" else "x25519", ""), c
        assert c.suite.startswith("TLS_AES_") or c.suite.startswith("TLS_CHACHA20")


def test_old_clients_get_tls12_and_ie11_on_windows7_has_no_suite_in_common(tls_lab):
    """The lab offers ECDHE-RSA with AES-GCM / ChaCha20 only: IE 11 on Windows 7 has ECDHE-RSA with
    CBC only (its GCM suites are RSA key exchange or ECDSA), so it fails, as SSL Labs shows it."""
    results = simulate(tls_lab.port("a_plus_rsa_hsts"))
    for name in ("android_4_4_2", "java_8u31", "java_8u161"):
        assert (results[name].protocol, results[name].suite) == ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
        assert results[name].recorded is False
    assert results["ie11_win7"].protocol is None and results["ie11_win7"].tested
    assert results["ie11_win7"].error == "handshake failure: no cipher suite or group in common"


def test_ie11_on_windows7_takes_the_1024_bit_dhe_suite(tls_lab):
    """b_dh1024 adds DHE-RSA-AES128-GCM (1024-bit group) after the ECDHE suites: the only one IE 11 /
    Windows 7 shares with it, so that is the client the weak DH group hurts."""
    results = simulate(tls_lab.port("b_dh1024"))
    ie = results["ie11_win7"]
    assert (ie.protocol, ie.suite, ie.dh_bits) == ("TLSv1.2", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 1024)
    assert all(results[name].protocol == "TLSv1.3" for name in RECORDED)


def test_a_tls12_only_server_gives_each_client_the_servers_first_ecdhe_suite(tls_lab):
    """The lab enforces its order (ssl_prefer_server_ciphers on), so every client gets its first suite."""
    results = simulate(tls_lab.port("a_minus_tls12_only"))
    assert {(c.protocol, c.suite, c.group) for name, c in results.items() if name in RECORDED} == {
        ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "x25519")}


def test_clients_without_tls10_fail_on_a_tls10_only_server_and_say_why(tls_lab):
    results = simulate(tls_lab.port("c_tls10_only"))
    for name in ("chromium", "firefox", "go", "java", "node", "python"):     # they offer TLS 1.2 and 1.3 only
        assert results[name].protocol is None and results[name].tested
        assert results[name].error == "no protocol version in common", results[name]
    for name in ("curl", "gnutls", "safari_15_4", *TLS12_ONLY_CLIENTS):
        assert (results[name].protocol, results[name].suite) == ("TLSv1.0", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")


def test_chromium_gets_x25519mlkem768_from_go_and_the_report_shows_the_table(go_tls_server, test_pki):
    outcome = run_scan("localhost", go_tls_server(), ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    sims = {c.client: c for c in outcome.facts.client_simulation}
    assert (sims["chromium"].protocol, sims["chromium"].group) == ("TLSv1.3", "X25519MLKEM768")
    assert sims["java"].group == "x25519"
    text = render_text(outcome.facts, build_report(outcome.facts, outcome.mozilla), outcome.duration_s)
    row = next(line for line in text.splitlines() if line.strip().startswith("Chromium 156"))
    assert "TLSv1.3" in row and "X25519MLKEM768" in row
    assert (sims["firefox"].group, sims["go"].group) == ("X25519MLKEM768", "X25519MLKEM768")
    ie_row = next(line for line in text.splitlines() if line.strip().startswith("IE 11 on Windows 7"))
    assert "IE 11 on Windows 7 *" in ie_row and "* = from published lists" in text


@pytest.mark.parametrize("name", CLIENTS)
def test_a_closed_port_is_not_tested_rather_than_failed(closed_port, name):
    (result,) = [c for c in simulate_clients(Endpoint("localhost", "127.0.0.1", closed_port, 2.0))
                 if c.client == name]
    assert result.tested is False and result.error.startswith("could not be tested")


def audit_lab(tls_lab, name: str):
    outcome = run_scan("localhost", tls_lab.port(name), ip="127.0.0.1", ca_file=str(tls_lab.ca_file),
                       allow_private=True, network_timeout=3, max_retries=1)
    assert outcome.error is None, outcome.error
    return build_report(outcome.facts, outcome.mozilla).grade


def test_the_grade_caps_forward_secrecy_on_what_modern_clients_negotiate(tls_lab):
    """b_no_forward_secrecy (RSA key exchange only, server order): Chromium, Firefox, curl, Java... get
    TLS_RSA_WITH_AES_128_GCM_SHA256; the cap names them (Go and Python offer no RSA key exchange: they fail)."""
    result = audit_lab(tls_lab, "b_no_forward_secrecy")
    (cap,) = [c for c in result.caps if c.rule_id == "cap.no_forward_secrecy"]
    assert result.grade == "B"
    assert cap.reason.startswith("Some modern clients get no forward secrecy: Chromium 156 (Debian 12) gets "
                                 "TLS_RSA_WITH_AES_128_GCM_SHA256")


def test_the_grade_caps_aead_on_what_modern_clients_negotiate(tls_lab):
    result = audit_lab(tls_lab, "b_cbc_only")
    (cap,) = [c for c in result.caps if c.rule_id == "cap.no_aead"]
    assert result.grade == "B" and "gets TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA" in cap.reason


def test_an_old_client_on_a_weaker_suite_does_not_cap_a_modern_server(tls_lab):
    """b_dh1024: IE 11 / Windows 7 gets DHE with the 1024-bit group (B for the weak key, as before), but
    every modern client gets TLS 1.3: no forward-secrecy or AEAD cap."""
    result = audit_lab(tls_lab, "b_dh1024")
    assert {c.rule_id for c in result.caps} == {"cap.weak_key"}


def audit_go(go_tls_server, test_pki, suites: str):
    port = go_tls_server(suites=suites, hsts="max-age=63072000")
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    assert outcome.error is None, outcome.error
    return outcome.facts, build_report(outcome.facts, outcome.mozilla).grade


def test_3des_accepted_but_chosen_by_no_client_does_not_cap_the_grade(go_tls_server, test_pki):
    """Debian's OpenSSL 3.0 has no 3DES, so a Go server offers it: Go ranks 3DES last, every client that
    offers it also offers AES-GCM, so nobody negotiates it (grading.md §6: "3DES last -> A/A+")."""
    facts, result = audit_go(go_tls_server, test_pki,
                             "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA")
    assert "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA" in {s.name for s in facts.suites_for("TLSv1.2")}
    assert not any("3DES" in (c.suite or "") for c in facts.client_simulation)
    assert result.grade == "A+" and "cap.sweet32" not in {c.rule_id for c in result.caps}
    facts.client_simulation = None                  # the offered rule, as audits before the simulation
    assert grade(facts).grade == "C"


def test_3des_that_old_clients_negotiate_on_tls12_caps_c_and_names_them(go_tls_server, test_pki):
    """3DES as the only TLS 1.2 suite: the modern clients get TLS 1.3, Java 8 (no TLS 1.3) gets 3DES."""
    facts, result = audit_go(go_tls_server, test_pki, "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA")
    sims = {c.client: c for c in facts.client_simulation}
    assert sims["chromium"].protocol == "TLSv1.3"
    assert (sims["java_8u31"].protocol, sims["java_8u31"].suite) == ("TLSv1.2", "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA")
    (cap,) = [c for c in result.caps if c.rule_id == "cap.sweet32"]
    assert result.grade == "C" and "Java 8u31 (no TLS 1.3) gets TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA" in cap.reason


def simulated_in_audit(tls_lab, name: str) -> dict:
    outcome = run_scan("localhost", tls_lab.port(name), ip="127.0.0.1", ca_file=str(tls_lab.ca_file),
                       allow_private=True, network_timeout=3, max_retries=1)
    return {c.client: c for c in outcome.facts.client_simulation}, build_report(outcome.facts, outcome.mozilla)


def test_curl_fails_a_tls10_11_server_as_real_curl_does_and_caps_no_grade(tls_lab):
    """#28 item 4: the replay says the server picks TLS 1.1 ECDHE-RSA for curl; real curl then refuses
    the SHA-1/MD5 key-exchange signature (OpenSSL 3.0 at level 2). The report says so, and that false
    handshake no longer feeds "some modern clients get no AEAD suite: curl"."""
    sims, report = simulated_in_audit(tls_lab, "c_tls10_tls11")
    assert sims["curl"].protocol is None
    assert "SHA-1/MD5 signature TLS 1.1 puts on the server's key exchange" in sims["curl"].error
    assert sims["gnutls"].protocol == "TLSv1.1"                       # GnuTLS 3.7 accepts it (measured)
    assert not any("curl" in c.reason for c in report.grade.caps)


def test_openssl_clients_refuse_an_rsa1024_leaf_and_the_others_take_it(tls_lab):
    sims, _ = simulated_in_audit(tls_lab, "b_rsa1024")
    for name in ("curl", "python"):
        assert sims[name].protocol is None
        assert "refuses the certificate CN=localhost" in sims[name].error and "1024 bits" in sims[name].error
    assert sims["gnutls"].protocol == "TLSv1.3" and sims["node"].protocol == "TLSv1.3"
