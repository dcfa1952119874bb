"""run_scan end to end against real TLS servers on 127.0.0.1 (sslyze + our probes)."""

import json
import time

import pki
import pytest
from cryptography.hazmat.primitives import hashes

from tlsaudit.domain.scanfacts import BAD, CHECK_NAMES, OK, PROTOCOLS, ScanFacts
from workers.tls.engine import run_scan

SSLYZE_COMMANDS = {
    "certificate_info", "ssl_2_0_cipher_suites", "ssl_3_0_cipher_suites", "tls_1_0_cipher_suites",
    "tls_1_1_cipher_suites", "tls_1_2_cipher_suites", "tls_1_3_cipher_suites", "tls_compression",
    "tls_1_3_early_data", "openssl_ccs_injection", "tls_fallback_scsv", "heartbleed", "robot",
    "session_renegotiation", "elliptic_curves", "http_headers", "tls_extended_master_secret",
}


def scan_local(host, port, **kwargs):
    # sslyze's own 5 s: openssl s_server answers one connection at a time, and on a busy machine a queued
    # handshake waited past 2 s (the scan then failed as a slow server's would)
    kwargs.setdefault("network_timeout", 5)
    return run_scan(host, port, ip="127.0.0.1", allow_private=True, **kwargs)


@pytest.fixture(scope="module")
def modern_scan(s_server, test_pki):
    """Given a TLS 1.2 + 1.3 server sending leaf + intermediate, scanned with our root as the custom CA."""
    port = s_server("-alpn", "h2,http/1.1")
    events = []
    started = time.monotonic()
    outcome = scan_local("localhost", port, ca_file=str(test_pki.root_file),
                         on_progress=lambda name, status: events.append((name, status)))
    return outcome, events, time.monotonic() - started


def test_it_finds_tls12_and_tls13_only(modern_scan):
    outcome, _, elapsed = modern_scan
    assert outcome.error is None, outcome.error
    facts = outcome.facts
    assert [p for p in PROTOCOLS if facts.supports(p)] == ["TLSv1.2", "TLSv1.3"]
    assert all(facts.protocols[p].status == BAD for p in ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1"))
    assert facts.errors == {} and facts.timed_out_suite_tests == 0
    assert elapsed < 20
    print(f"\nfull scan on loopback: {elapsed:.2f} s, phases {outcome.timings}")


def test_accepted_suites_carry_their_key_exchange(modern_scan):
    facts = modern_scan[0].facts
    by_name = {(s.protocol, s.name): s for s in facts.suites}
    ecdhe = by_name[("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")]
    assert (ecdhe.openssl_name, ecdhe.kx_type, ecdhe.key_size) == ("ECDHE-RSA-AES128-GCM-SHA256", "ECDH", 128)
    assert ecdhe.kx_bits in (253, 256) and ecdhe.kx_curve in ("X25519", "secp256r1")
    dhe = by_name[("TLSv1.2", "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384")]
    assert (dhe.kx_type, dhe.kx_bits, dhe.kx_curve) == ("DH", 2048, None)
    rsa_kx = by_name[("TLSv1.2", "TLS_RSA_WITH_AES_128_GCM_SHA256")]
    assert rsa_kx.kx_type is None and rsa_kx.kx_bits is None
    assert {s.name for s in facts.suites_for("TLSv1.3")} == {
        "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
    assert "X25519" in facts.curves and facts.curves_check.status == OK


def test_the_certificate_is_trusted_by_the_custom_ca_only(modern_scan, test_pki):
    facts = modern_scan[0].facts
    assert facts.trust_use_custom_ca is True
    (deployment,) = facts.certificates
    trust = {t.store: t for t in deployment.trust}
    assert set(trust) == {"Mozilla", "Apple", "Android", "Windows", "Java", "Custom CA"}
    assert trust["Custom CA"].trusted and not trust["Mozilla"].trusted and trust["Mozilla"].error
    assert not deployment.publicly_trusted and deployment.trusted_by_any
    assert deployment.hostname_matches is True
    assert (deployment.chain_in_order, deployment.chain_complete, deployment.chain_has_anchor) == (True, True, False)
    assert deployment.ocsp_stapled.status == BAD and deployment.must_staple is False and deployment.sct_count == 0


def test_the_leaf_is_described(modern_scan, test_pki):
    leaf = modern_scan[0].facts.certificates[0].leaf
    assert (leaf.key_type, leaf.key_bits, leaf.rsa_exponent, leaf.curve) == ("RSA", 2048, 65537, None)
    assert (leaf.signature_hash, leaf.is_ca, leaf.self_signed) == ("sha256", False, False)
    assert leaf.san_dns == ("localhost",) and leaf.san_ip == ("127.0.0.1",)
    assert leaf.fingerprint_sha256 == test_pki.leaf.cert.fingerprint(hashes.SHA256()).hex()
    assert leaf.pem.startswith("-----BEGIN CERTIFICATE-----")
    intermediate = modern_scan[0].facts.certificates[0].chain[1]
    assert (intermediate.is_ca, intermediate.key_type, intermediate.curve) == (True, "EC", "secp256r1")


def test_every_named_check_is_filled(modern_scan):
    checks = modern_scan[0].facts.checks
    assert set(checks) == set(CHECK_NAMES)
    for name in ("heartbleed", "ccs_injection", "robot", "compression", "fallback_scsv", "secure_renegotiation",
                 "client_renegotiation", "early_data", "extended_master_secret", "session_ticket_resumption"):
        assert checks[name].status == OK, (name, checks[name])
    assert checks["session_id_resumption"].tested


def test_probes_add_preference_alpn_and_hsts(modern_scan):
    facts = modern_scan[0].facts
    assert facts.preferences["TLSv1.2"].enforced is False           # s_server follows the client by default
    assert facts.preferences["TLSv1.3"].enforced is False           # measured on our own ClientHello (#18)
    assert facts.alpn == ["h2", "http/1.1"] and facts.alpn_check.status == OK
    assert facts.hsts.header is None and facts.hsts_check.status == BAD     # s_server -www sends no HSTS


def test_progress_is_reported_per_phase_and_per_sslyze_command(modern_scan):
    events = modern_scan[1]
    done = {name for name, status in events if status == "done"}
    assert {"resolve", "connectivity", "sslyze", "preference", "alpn", "hsts", "resumption", "sni", "mozilla"} <= done
    assert SSLYZE_COMMANDS <= done
    assert events[0] == ("resolve", "started") and events[-1] == ("mozilla", "done")


def test_mozilla_profiles_are_checked_on_the_live_result(modern_scan):
    mozilla = modern_scan[0].mozilla
    assert set(mozilla) == {"modern", "intermediate"}
    assert mozilla["modern"]["compliant"] is False and "tls_versions" in mozilla["modern"]["issues"]
    assert all(isinstance(entry["issues"], dict) and entry["error"] == "" for entry in mozilla.values())


def test_facts_round_trip_through_json(modern_scan):
    facts = modern_scan[0].facts
    again = ScanFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again == facts


def test_raw_json_keeps_accepted_suites_but_no_rejected_ones_nor_store_paths(modern_scan):
    raw = modern_scan[0].raw
    text = json.dumps(raw)
    assert "rejected_cipher_suites" not in text
    assert "pem_files" not in text and '"path"' not in text
    accepted = raw["scan_result"]["tls_1_3_cipher_suites"]["result"]["accepted_cipher_suites"]
    assert len(accepted) == 3


def test_a_wrong_hostname_pinned_to_the_server_does_not_match(s_server, test_pki):
    outcome = scan_local("wrong.example", s_server(), ca_file=str(test_pki.root_file))
    (deployment,) = outcome.facts.certificates
    assert outcome.facts.host == "wrong.example"
    assert deployment.hostname_matches is False
    # The chain itself is fine, only the name is wrong: the store says so (the name is grade M's business).
    assert {t.store: t for t in deployment.trust}["Custom CA"].trusted is True
    assert deployment.chain_complete is True


def test_a_missing_intermediate_makes_the_chain_incomplete(s_server, test_pki, tmp_path):
    """Given an ECDSA P-384 leaf served without its intermediate, even our own root cannot be reached."""
    leaf = pki.issue_leaf(test_pki.intermediate, dns=("localhost",), key="ec384")
    port = s_server(send_intermediate=False, cert=pki.write_pem(tmp_path / "ec.pem", leaf),
                    key=pki.write_key(tmp_path / "ec.key", leaf))
    outcome = scan_local("localhost", port, ca_file=str(test_pki.root_file))
    (deployment,) = outcome.facts.certificates
    assert len(deployment.chain) == 1 and deployment.chain_complete is False
    assert not {t.store: t for t in deployment.trust}["Custom CA"].trusted
    assert (deployment.leaf.key_type, deployment.leaf.key_bits, deployment.leaf.curve) == ("EC", 384, "secp384r1")
    assert deployment.hostname_matches is True


def test_hsts_with_a_quoted_max_age_is_read_even_though_sslyze_chokes(http_server, test_pki):
    port = http_server({"/": (200, {"Strict-Transport-Security": 'max-age="31536000"; includeSubDomains'})})
    outcome = scan_local("localhost", port, ca_file=str(test_pki.root_file))
    hsts = outcome.facts.hsts
    assert (hsts.max_age, hsts.include_subdomains, hsts.valid) == (31536000, True, True)
    assert outcome.facts.hsts_check.status == OK
    assert "http_headers" in outcome.facts.errors          # sslyze's own parser raised (see sslyze-notes 1.4)
    assert outcome.facts.check("heartbleed").status == OK


def test_plain_hsts_header_through_the_engine(http_server, test_pki):
    port = http_server({"/": (200, {"Strict-Transport-Security": "max-age=31536000; includeSubDomains"})})
    outcome = scan_local("localhost", port)
    assert outcome.facts.hsts.header == "max-age=31536000; includeSubDomains"
    assert outcome.facts.hsts.max_age == 31536000 and "http_headers" not in outcome.facts.errors
    assert outcome.facts.trust_use_custom_ca is False


# --- errors --------------------------------------------------------------------------------

def timed_scan(*args, **kwargs):
    started = time.monotonic()
    outcome = scan_local(*args, **kwargs)
    elapsed = time.monotonic() - started
    return outcome, elapsed


def test_a_closed_port_is_refused_fast(closed_port):
    outcome, elapsed = timed_scan("localhost", closed_port)
    assert outcome.facts is None and outcome.error.code == "refused"
    assert outcome.error.message == (f"Port {closed_port} on 127.0.0.1 refused the connection: "
                                     "nothing is listening there.")
    assert elapsed < 2
    assert all(entry["compliant"] is None for entry in outcome.mozilla.values())
    print(f"\nclosed port: {elapsed:.2f} s")


def test_a_silent_port_times_out_within_30_seconds(blackhole_port):
    outcome, elapsed = timed_scan("localhost", blackhole_port, max_retries=1, network_timeout=2)
    assert outcome.error.code == "timeout"
    assert outcome.error.message == (f"No answer from 127.0.0.1:{blackhole_port} within 2 s: "
                                     "the port accepts connections but never answers the TLS handshake "
                                     "(the service is hung, or it waits for a protocol other than TLS).")
    assert elapsed < 30
    print(f"\nblack hole: {elapsed:.2f} s, phases {outcome.timings}")


def test_a_plain_http_port_does_not_speak_tls(http_server):
    port = http_server({"/": (200, {})}, tls=False)
    outcome, elapsed = timed_scan("localhost", port)
    assert outcome.error.code == "no_tls"
    assert outcome.error.message == f"The server on port {port} does not speak TLS (is it plain HTTP?)."
    # the pre-flight found no TLS: sslyze (and its ~600 connections) never started
    assert "sslyze" not in outcome.timings and outcome.raw == {}
    assert elapsed < 5
    print(f"\nplain HTTP: {elapsed:.2f} s")


def test_an_unresolvable_name_is_a_dns_error():
    outcome = run_scan("does-not-exist.invalid", 443)
    assert outcome.facts is None and outcome.error.code == "dns"
    assert outcome.error.message == ("The name does-not-exist.invalid does not resolve: names under .invalid "
                                     "and .onion are never looked up in the DNS.")


def test_loopback_is_refused_unless_private_targets_are_allowed():
    started = time.monotonic()
    outcome = run_scan("localhost", 443)
    assert outcome.error.code == "private_target" and outcome.facts is None
    outcome = run_scan("example.com", 443, ip="127.0.0.1")      # a pinned IP is checked too
    assert outcome.error.code == "private_target"
    assert time.monotonic() - started < 1


def test_a_failing_progress_callback_does_not_break_the_scan(s_server):
    def explode(name, status):
        raise RuntimeError("database is down")

    outcome = scan_local("localhost", s_server(), on_progress=explode)
    assert outcome.error is None and outcome.facts.supports("TLSv1.3")


def test_an_expired_leaf_of_the_custom_ca_is_refused_for_its_dates_only(tls_lab):
    """cryptography stops at the expired leaf; asked again inside its dates, the custom CA verifies the
    chain and the public stores still do not know it. Stored in words, never as a Python repr."""
    outcome = scan_local("localhost", tls_lab.port("t_expired"), ca_file=str(tls_lab.ca_file))
    (deployment,) = outcome.facts.certificates
    trust = {t.store: t for t in deployment.trust}
    assert trust["Custom CA"].dates_only and not trust["Custom CA"].trusted
    assert trust["Custom CA"].error == "a certificate is outside its validity dates"
    assert not trust["Mozilla"].dates_only
    assert trust["Mozilla"].error == ("no chain to a root this store trusts, "
                                      "and a certificate is outside its validity dates")
    assert all("<" not in t.error and "exhausted" not in t.error for t in deployment.trust)


def test_a_leaf_naming_no_ocsp_responder_is_not_told_to_staple(modern_scan):
    """#29 item 5: like Let's Encrypt's since 2025, the test PKI's leaves carry no OCSP URL; nginx would
    log "no OCSP responder URL" and staple nothing, so the report neither fails stapling nor advises it."""
    from tlsaudit.domain.audit_report import build_report

    outcome = modern_scan[0]
    assert outcome.facts.certificates[0].leaf.ocsp_urls == ()
    report = build_report(outcome.facts, outcome.mozilla)
    stapling = next(f for f in report.findings if f.id == "cert.ocsp_stapling")
    assert stapling.status == "pass" and "names no OCSP responder" in stapling.evidence
    assert "cert.ocsp_stapling" not in {r.id for r in report.recommendations}
    sct = next(f for f in report.findings if f.id == "cert.sct")
    assert sct.status == "pass" and "none needed" in sct.evidence     # trusted only through the custom CA
