"""Findings: every rule in the registry, told as a table of servers and the verdict each one gets.

Each row changes one thing on the A+ model server of the factories and names the finding it
should produce. A coverage test makes sure no rule goes untested, and a second table checks
that a check whose input was not measured says "not tested", never "pass".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest

from tests.domain.factories import (
    NOW, ca_cert, deployment, ec_cert, make_facts, preference, rsa_cert, suite, suites_for,
)
from tlsaudit.domain.findings import RULES, SEVERITIES, STATUSES, Finding, derive_findings
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, PROTOCOLS, Check, Hsts, ScanFacts

MODERN = ("TLSv1.2", "TLSv1.3")
ALL_TLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")


def modern_plus(*names, protocol="TLSv1.2", **suite_kwargs):
    return suites_for(MODERN) + [suite(n, protocol, **suite_kwargs) for n in names]


def with_deployment(**changes) -> ScanFacts:
    return make_facts(cert=replace(deployment(), **changes))


def finding(facts: ScanFacts, rule_id: str) -> Finding:
    found = {f.id: f for f in derive_findings(facts, now=NOW)}
    assert rule_id in found, f"{rule_id} produced no finding"
    return found[rule_id]


@dataclass
class Row:
    rule: str
    facts: ScanFacts
    status: str
    severity: str | None = None
    evidence: str = ""          # a piece of the evidence (or of the reason, for not_tested)


ROWS = [
    # --- protocols
    Row("proto.sslv2", make_facts(protocols=("SSLv2",) + MODERN), "fail", "critical", "DROWN"),
    Row("proto.sslv2", make_facts(), "pass", "critical", "SSL 2.0 refused"),
    Row("proto.sslv3", make_facts(protocols=("SSLv3",) + MODERN), "fail", "high", "POODLE: 2 CBC suites"),
    Row("proto.tls10", make_facts(protocols=ALL_TLS), "fail", "medium", "TLSv1.0 accepted (2 suites)"),
    Row("proto.tls11", make_facts(protocols=("TLSv1.1",) + MODERN), "fail", "medium", "TLSv1.1 accepted"),
    Row("proto.tls12_missing", make_facts(protocols=("TLSv1.0", "TLSv1.1")), "fail", "high", "best protocol: TLS 1.1"),
    Row("proto.tls12_missing", make_facts(protocols=("TLSv1.3",)), "info", "low", "TLSv1.2 refused"),
    Row("proto.tls13_missing", make_facts(protocols=("TLSv1.2",)), "fail", "low", "TLSv1.3 refused"),
    # --- cipher suites
    Row("cipher.forward_secrecy", make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256"]),
        "fail", "high", "TLS_RSA_WITH_AES_128_GCM_SHA256 accepted on TLSv1.2"),
    Row("cipher.forward_secrecy", make_facts(suites=modern_plus("TLS_RSA_WITH_AES_256_GCM_SHA384")),
        "fail", "low", "some suites lack forward secrecy"),
    Row("cipher.forward_secrecy", make_facts(), "pass", "high", "all 6 accepted suites"),
    Row("cipher.aead", make_facts(protocols=("TLSv1.2",), suites=["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"]),
        "fail", "medium", "no AEAD suite accepted"),
    Row("cipher.aead", make_facts(), "pass", "medium", "AEAD suites accepted"),
    Row("vuln.beast", make_facts(protocols=ALL_TLS), "fail", "low", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA accepted on TLSv1.0"),
    Row("vuln.lucky13", make_facts(protocols=ALL_TLS), "info", "info", "CBC_SHA accepted on TLSv1.0, TLSv1.1"),
    Row("vuln.lucky13", make_facts(), "pass", "info"),
    Row("vuln.sweet32", make_facts(suites=modern_plus("TLS_RSA_WITH_3DES_EDE_CBC_SHA")), "fail", "medium",
        "TLS_RSA_WITH_3DES_EDE_CBC_SHA accepted on TLSv1.2"),
    Row("cipher.rc4", make_facts(suites=modern_plus("TLS_RSA_WITH_RC4_128_SHA")), "fail", "high",
        "TLS_RSA_WITH_RC4_128_SHA accepted on TLSv1.2"),
    Row("cipher.null", make_facts(suites=modern_plus("TLS_RSA_WITH_NULL_SHA256")), "fail", "critical", "NULL_SHA256"),
    Row("cipher.anonymous", make_facts(suites=modern_plus("TLS_DH_anon_WITH_AES_128_GCM_SHA256")),
        "fail", "critical", "TLS_DH_anon_WITH_AES_128_GCM_SHA256"),
    Row("cipher.export", make_facts(suites=modern_plus("TLS_RSA_EXPORT_WITH_RC4_40_MD5")), "fail", "critical",
        "EXPORT_WITH_RC4_40_MD5"),
    Row("cipher.weak_encryption", make_facts(suites=modern_plus("TLS_RSA_WITH_DES_CBC_SHA")), "fail", "critical",
        "TLS_RSA_WITH_DES_CBC_SHA"),
    Row("cipher.weak_encryption", make_facts(), "pass", "critical"),
    Row("vuln.logjam", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1024)),
        "fail", "high", "DH group 1024 bits"),
    Row("vuln.logjam", make_facts(suites=modern_plus("TLS_DHE_RSA_EXPORT_WITH_DES40_CBC_SHA")), "fail", "high",
        "DHE_RSA_EXPORT"),
    Row("vuln.logjam", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1536)),
        "pass", "high", "DH group size 1536 bits"),
    Row("kx.weak_dh", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1536)),
        "fail", "medium", "DH group 1536 bits"),
    Row("kx.weak_dh", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256")), "pass", "medium",
        "DH group size 2048 bits"),
    Row("kx.weak_ecdh", make_facts(suites=modern_plus("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", kx_bits=192,
                                                      curve="secp192r1")), "fail", "medium", "secp192r1 (192 bits)"),
    Row("kx.weak_ecdh", replace(make_facts(), curves=["X25519", "secp160r1"]), "fail", "medium", "secp160r1"),
    Row("kx.weak_ecdh", make_facts(), "pass", "medium", "X25519, prime256v1"),
    Row("cipher.server_preference",
        make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_CBC_SHA"),
                   preferences=[preference("TLSv1.2", "TLS_RSA_WITH_AES_128_CBC_SHA", enforced=False)]),
        "fail", "medium", "TLS 1.2 (client order wins"),
    Row("cipher.server_preference",
        make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_CBC_SHA"),
                   preferences=[preference("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")]),
        "pass", "medium", "server order enforced on TLS 1.2"),
    Row("cipher.server_preference", make_facts(), "pass", "medium", "only strong suites"),
    Row("scan.suite_timeouts", replace(make_facts(), timed_out_suite_tests=25), "fail", "medium", "25 suite tests"),
    Row("scan.suite_timeouts", replace(make_facts(), timed_out_suite_tests=3), "pass", "medium"),
    # --- vulnerabilities and protocol features
    Row("vuln.heartbleed", make_facts(heartbleed=BAD), "fail", "critical", "CVE-2014-0160"),
    Row("vuln.ccs_injection", make_facts(ccs_injection=BAD), "fail", "critical", "CVE-2014-0224"),
    Row("vuln.robot", make_facts(robot=Check(BAD, value="VULNERABLE_STRONG_ORACLE")), "fail", "critical", "strong"),
    Row("vuln.robot", make_facts(robot=Check(BAD, value="VULNERABLE_WEAK_ORACLE")), "fail", "high", "weak oracle"),
    Row("vuln.robot", make_facts(robot=Check("ok", value="NOT_VULNERABLE_RSA_NOT_SUPPORTED")), "pass", "critical",
        "RSA key exchange not offered"),
    Row("vuln.crime", make_facts(compression=BAD), "fail", "high", "DEFLATE"),
    Row("vuln.fallback_scsv", make_facts(fallback_scsv=BAD), "fail", "low", "not honoured"),
    Row("vuln.fallback_scsv", make_facts(protocols=("TLSv1.3",), fallback_scsv=BAD), "pass", "low",
        "only one protocol version"),
    Row("reneg.secure", make_facts(secure_renegotiation=BAD), "fail", "medium", "RFC 5746 not supported"),
    Row("reneg.secure", make_facts(secure_renegotiation=BAD, client_renegotiation=BAD), "fail", "critical",
        "insecure renegotiation"),
    Row("reneg.client_initiated", make_facts(client_renegotiation=BAD), "fail", "medium", "client-initiated"),
    Row("tls.early_data", make_facts(early_data=BAD), "info", "low", "0-RTT"),
    Row("tls.early_data", make_facts(protocols=("TLSv1.2",), early_data=BAD), "pass", "low", "TLS 1.3 not enabled"),
    Row("tls.extended_master_secret", make_facts(extended_master_secret=BAD), "fail", "low", "RFC 7627"),
    Row("perf.session_resumption", make_facts(session_id_resumption=BAD, session_ticket_resumption=BAD),
        "fail", "info", "neither session IDs nor session tickets"),
    Row("perf.session_resumption", make_facts(session_id_resumption=BAD), "pass", "info", "session tickets"),
    Row("perf.http2", replace(make_facts(), alpn=["http/1.1"]), "fail", "info", "ALPN: http/1.1"),
    Row("perf.http2", make_facts(), "pass", "info", "h2"),
    # --- certificates
    Row("cert.expired", make_facts(cert=rsa_cert(not_before=NOW - timedelta(days=400),
                                                 not_after=NOW - timedelta(days=1))), "fail", "critical",
        "expired on 2026-03-01"),
    Row("cert.expired", make_facts(), "pass", "critical", "valid until 2026-05-01"),
    Row("cert.not_yet_valid", make_facts(cert=rsa_cert(not_before=NOW + timedelta(days=2))), "fail", "critical",
        "valid from 2026-03-04"),
    Row("cert.expires_soon", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=5))), "fail", "high", "in 5 days"),
    Row("cert.expires_soon", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=10))), "fail", "medium",
        "in 10 days"),
    Row("cert.expires_soon", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=20))), "fail", "low", "in 20 days"),
    Row("cert.expires_soon", make_facts(), "pass", "low", "in 60 days"),
    Row("cert.hostname_mismatch", make_facts(cert=deployment(rsa_cert(san=("www.example.org",)), hostname_matches=False)),
        "fail", "critical", "localhost is not in the certificate's names: www.example.org"),
    Row("cert.untrusted", make_facts(cert=deployment(trusted=False)), "fail", "critical", "Mozilla: candidates exhausted"),
    # A mismatch fails every store with a name error: that is the mismatch rule's business, not trust's.
    Row("cert.untrusted", make_facts(cert=deployment(hostname_matches=False)), "pass", "critical"),
    # The organisation's own CA counts only when it asked for it.
    Row("cert.untrusted", make_facts(cert=deployment(trusted=False, custom_ca=True), trust_use_custom_ca=True),
        "pass", "critical", "Custom CA: trusted"),
    Row("cert.untrusted", make_facts(cert=deployment(trusted=False, custom_ca=True)), "fail", "critical"),
    Row("cert.self_signed", make_facts(cert=rsa_cert(self_signed=True)), "fail", "critical", "signed by itself"),
    Row("cert.chain_incomplete", make_facts(cert=deployment(chain_complete=False)), "fail", "medium",
        "an intermediate for CN=Test Intermediate CA"),
    Row("cert.chain_order", with_deployment(chain_in_order=False), "fail", "low", "CN=localhost -> CN=Test"),
    Row("cert.chain_anchor", with_deployment(chain_has_anchor=True), "fail", "info", "root sent"),
    Row("cert.sha1", make_facts(cert=deployment(chain_has_sha1=True)), "fail", "high", "SHA-1 signed"),
    Row("cert.sha1", make_facts(cert=rsa_cert(signature_hash="sha1")), "fail", "high", "CN=localhost"),
    Row("cert.md5", make_facts(cert=rsa_cert(signature_hash="md5")), "fail", "critical", "CN=localhost (md5)"),
    Row("cert.md5", make_facts(cert=deployment(chain=(rsa_cert(), ca_cert(signature_hash="md2")))), "fail",
        "critical", "Test Intermediate CA,O=TLS Audit Tests (md2)"),
    Row("cert.rsa_weak", make_facts(cert=rsa_cert(bits=1024)), "fail", "high", "RSA 1024 bits"),
    Row("cert.rsa_weak", make_facts(cert=rsa_cert(bits=512)), "fail", "critical", "RSA 512 bits"),
    Row("cert.rsa_exponent_1", make_facts(cert=rsa_cert(exponent=1)), "fail", "critical", "exponent 1"),
    Row("cert.ec_weak", make_facts(cert=ec_cert("secp224r1", 224)), "fail", "medium", "EC 224 bits (secp224r1)"),
    Row("cert.ec_weak", make_facts(cert=ec_cert()), "pass", "medium", "EC 256 bits"),
    Row("cert.lifetime", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=400))), "fail", "high",
        "valid for 430 days"),
    Row("cert.lifetime", make_facts(cert=rsa_cert(not_before=NOW - timedelta(days=2500),
                                                  not_after=NOW + timedelta(days=100))),
        "fail", "low", "issued before 2020-09-01"),
    Row("cert.symantec", make_facts(cert=deployment(symantec_distrusted=True)), "fail", "high", "Symantec root"),
    Row("cert.ocsp_stapling", make_facts(cert=deployment(ocsp_stapled=Check(BAD))), "fail", "low",
        "no OCSP response stapled"),
    Row("cert.must_staple", make_facts(cert=deployment(must_staple=True, ocsp_stapled=Check(BAD))), "fail", "high",
        "must-staple set"),
    Row("cert.must_staple", make_facts(cert=deployment(must_staple=True)), "pass", "high", "must-staple and stapled"),
    Row("cert.sct", with_deployment(sct_count=0), "fail", "low", "0 SCTs"),
    Row("cert.ev", with_deployment(is_ev=True), "info", "info", "EV certificate for CN=localhost"),
    # --- HSTS
    Row("hsts.missing", make_facts(hsts_max_age=None), "fail", "medium", "no Strict-Transport-Security header"),
    Row("hsts.missing", make_facts(), "pass", "medium", "max-age=31536000"),
    Row("hsts.invalid", make_facts(hsts_valid=False), "fail", "medium", 'max-age="soon"'),
    Row("hsts.disabled", make_facts(hsts_max_age=0), "fail", "medium", "max-age=0"),
    Row("hsts.short_max_age", make_facts(hsts_max_age=86400), "fail", "low", "max-age=86400 (1 days)"),
    Row("hsts.include_subdomains", make_facts(), "fail", "low", "max-age=31536000"),
    Row("hsts.preload_ready", make_facts(), "info", "info", "missing: includeSubDomains, preload"),
    Row("hsts.preload_ready",
        replace(make_facts(), hsts=Hsts("max-age=63072000; includeSubDomains; preload", 63072000, True, True)),
        "pass", "info"),
]

NOT_TESTED_ROWS = [
    Row("proto.sslv2", make_facts(not_tested_protocols=("SSLv2",)), "not_tested", evidence="timed out"),
    Row("proto.tls10", make_facts(not_tested_protocols=("TLSv1.0",)), "not_tested", evidence="timed out"),
    Row("proto.tls13_missing", make_facts(protocols=("TLSv1.2",), not_tested_protocols=("TLSv1.3",)), "not_tested"),
    Row("proto.tls12_missing", make_facts(protocols=("TLSv1.0",), not_tested_protocols=("TLSv1.2", "TLSv1.3")),
        "not_tested", evidence="TLS 1.2: handshakes timed out"),
    Row("cipher.rc4", make_facts(not_tested_protocols=("TLSv1.0",)), "not_tested", evidence="TLS 1.0"),
    Row("vuln.beast", make_facts(not_tested_protocols=("SSLv3",)), "not_tested", evidence="SSL 3.0"),
    Row("cipher.server_preference", make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_CBC_SHA")), "not_tested",
        evidence="preference not measured"),
    Row("vuln.heartbleed", make_facts(heartbleed=NOT_TESTED), "not_tested", evidence="probe failed"),
    Row("vuln.robot", make_facts(robot=NOT_TESTED), "not_tested"),
    Row("reneg.secure", make_facts(secure_renegotiation=NOT_TESTED), "not_tested"),
    Row("tls.early_data", make_facts(early_data=NOT_TESTED), "not_tested"),
    Row("perf.session_resumption", make_facts(session_id_resumption=BAD, session_ticket_resumption=NOT_TESTED),
        "not_tested"),
    Row("perf.http2", replace(make_facts(), alpn=[], alpn_check=Check(NOT_TESTED, reason="ALPN probe failed")),
        "not_tested", evidence="ALPN probe failed"),
    Row("kx.weak_ecdh", replace(make_facts(), curves=[], curves_check=Check(NOT_TESTED, reason="elliptic_curves error")),
        "not_tested", evidence="elliptic_curves error"),
    Row("hsts.missing", make_facts(hsts_tested=False), "not_tested", evidence="BUG_IN_SSLYZE"),
    Row("hsts.preload_ready", make_facts(hsts_tested=False), "not_tested"),
    Row("cert.ocsp_stapling", make_facts(cert=deployment(ocsp_stapled=Check(NOT_TESTED, reason="OCSP timeout"))),
        "not_tested", evidence="OCSP timeout"),
    Row("cert.chain_incomplete", make_facts(cert=deployment(chain_complete=None)), "not_tested"),
    Row("cert.sha1", make_facts(cert=deployment(chain_has_sha1=None)), "not_tested"),
    Row("cert.symantec", make_facts(cert=deployment(symantec_distrusted=None)), "not_tested"),
    Row("cert.sct", with_deployment(sct_count=None), "not_tested"),
    Row("cert.untrusted", replace(make_facts(), errors={"certificate_info": "CONNECTIVITY_ISSUE"}, certificates=[]),
        "not_tested", evidence="CONNECTIVITY_ISSUE"),
]


@pytest.mark.parametrize("row", ROWS + NOT_TESTED_ROWS, ids=lambda r: f"{r.rule}-{r.status}")
def test_it_gives_each_rule_its_verdict(row: Row):
    f = finding(row.facts, row.rule)
    assert f.status == row.status, f"{row.rule}: {f}"
    if row.severity:
        assert f.severity == row.severity, f"{row.rule}: {f}"
    assert row.evidence in (f.evidence if f.status != "not_tested" else f.reason), f
    assert f.title and f.explanation.count(".") >= 2


def test_every_rule_in_the_registry_has_a_table_row():
    covered = {r.rule for r in ROWS}
    assert set(RULES) - covered == set()
    assert {r.rule for r in ROWS if r.status == "fail"} | {r.rule for r in ROWS if r.status == "info"} == set(RULES)


def test_it_never_passes_a_check_whose_input_was_not_measured():
    # Given a scan where nothing could be measured
    blind = replace(
        make_facts(not_tested_protocols=PROTOCOLS, protocols=(), hsts_tested=False,
                   **{name: NOT_TESTED for name in ("heartbleed", "ccs_injection", "robot", "compression",
                                                    "fallback_scsv", "secure_renegotiation", "client_renegotiation",
                                                    "early_data", "extended_master_secret", "session_id_resumption",
                                                    "session_ticket_resumption")}),
        suites=[], certificates=[], curves=[], curves_check=Check(NOT_TESTED, reason="not run"),
        alpn=[], alpn_check=Check(NOT_TESTED, reason="not run"))
    # When its findings are derived
    findings = derive_findings(blind, now=NOW)
    # Then nothing passes (the timeout counter describes the scan itself) and every verdict says why
    passed = [f.id for f in findings if f.status == "pass" and f.id != "scan.suite_timeouts"]
    assert passed == []
    assert all(f.reason for f in findings if f.status == "not_tested")
    assert {f.status for f in findings} == {"not_tested", "pass"}


def test_it_sorts_failures_first_by_severity_then_not_tested_info_and_passes():
    facts = make_facts(protocols=ALL_TLS, hsts_max_age=None, heartbleed=BAD, early_data=NOT_TESTED)
    findings = derive_findings(facts, now=NOW)
    keys = [(STATUSES.index(f.status), SEVERITIES.index(f.severity)) for f in findings]
    assert keys == sorted(keys)
    assert findings[0].id == "vuln.heartbleed"
    assert [f.status for f in findings[:4]] == ["fail"] * 4


def test_it_reports_both_certificates_of_a_dual_deployment():
    facts = make_facts(certs=[deployment(rsa_cert(bits=1024)), deployment(ec_cert())])
    f = finding(facts, "cert.rsa_weak")
    assert (f.status, f.evidence) == ("fail", "RSA certificate: RSA 1024 bits")
    assert finding(facts, "cert.ec_weak").evidence == "EC certificate: EC 256 bits (secp256r1)"


def test_its_expiry_clock_defaults_to_the_scan_start_so_stored_audits_rederive_the_same():
    facts = make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=10)))
    by_default = {f.id: f for f in derive_findings(facts)}["cert.expires_soon"]
    assert by_default.evidence == "expires on 2026-03-12, in 10 days"


def test_a_finding_serialises_to_json_with_its_category():
    f = finding(make_facts(heartbleed=BAD), "vuln.heartbleed")
    data = json.loads(json.dumps(f.to_dict()))
    assert data["id"] == "vuln.heartbleed" and data["category"] == "vuln" and data["status"] == "fail"
    assert set(data) == {"id", "severity", "status", "title", "explanation", "evidence", "reason", "category"}
