"""Findings about certificates, told as a table of servers and verdicts, for one or two deployments."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from tests.domain.factories import NOW, ca_cert, deployment, ec_cert, make_facts, rsa_cert
from tests.domain.finding_rows import Row, finding, table_tests, with_deployment
from tlsaudit.domain.distrust import table
from tlsaudit.domain.findings import derive_findings
from tlsaudit.domain.scanfacts import (
    BAD,
    CRL,
    GOOD,
    NOT_TESTED,
    OCSP_RESPONDER,
    REVOKED,
    UNKNOWN,
    CaaFacts,
    CaaRecord,
    Check,
    Revocation,
    TrustResult,
)

UTC = timezone.utc
ENTRUST_G2 = "6a72267ad01eef7de73b6951d46c8d9f901266ab"     # Entrust Root Certification Authority - G2's key id
CHUNGHWA_EPKI = next(e.key_id for e in table() if e.root.startswith("OU=ePKI Root"))


OLD_FACTS_LEAF = replace(rsa_cert(), spki_sha256="", ekus=None)     # as audits before #29 stored it


LETS_ENCRYPT = "CN=R12,O=Let's Encrypt,C=US"


def caa(*records: str) -> CaaFacts:
    """The relevant RRset at shop.net, each record as a zone file writes it: flags tag "value"."""
    parsed = [r.split(" ", 2) for r in records]
    return CaaFacts(("shop.net",), tuple(CaaRecord("shop.net", int(f), t, v.strip('"')) for f, t, v in parsed))


def under_root(root_key_id: str, sct, not_before=None):
    """A leaf and an intermediate signed by the root whose key id is `root_key_id` (its AKI names it)."""
    leaf = replace(rsa_cert(not_before=not_before or sct), spki_sha256="11" * 32, earliest_sct=sct, ekus=("serverAuth",))
    intermediate = replace(ca_cert(), spki_sha256="22" * 32, authority_key_id=root_key_id, ekus=("serverAuth",))
    return deployment(leaf, chain=(leaf, intermediate))


ROWS = [
    Row("cert.expired", make_facts(cert=rsa_cert(not_before=NOW - timedelta(days=400),
                                                 not_after=NOW - timedelta(days=1))), "fail", "critical",
        "expired on 2026-03-01"),
    Row("cert.expired", make_facts(), "pass", "critical", "valid until 2026-05-01"),
    Row("cert.not_yet_valid", make_facts(cert=rsa_cert(not_before=NOW + timedelta(days=2))), "fail", "critical",
        "valid from 2026-03-04"),
    Row("cert.expires_soon", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=5))), "fail", "high", "in 5 days"),
    Row("cert.expires_soon", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=10))), "fail", "medium",
        "in 10 days"),
    Row("cert.expires_soon", make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=20))), "fail", "low",
        "in 20 days"),
    Row("cert.expires_soon", make_facts(), "pass", "low", "in 60 days"),
    Row("cert.hostname_mismatch",
        make_facts(cert=deployment(rsa_cert(san=("www.example.org",)), hostname_matches=False)), "fail", "critical",
        "localhost is not in the certificate's names: www.example.org"),
    Row("cert.untrusted", make_facts(cert=deployment(trusted=False)), "fail", "critical",
        "not trusted by Mozilla, Apple, Android, Windows: no chain to a root this store trusts"),
    # A mismatch fails every store with a name error: that is the mismatch rule's business, not trust's.
    Row("cert.untrusted", make_facts(cert=deployment(hostname_matches=False)), "pass", "critical"),
    # The organisation's own CA counts only when it asked for it.
    Row("cert.untrusted", make_facts(cert=deployment(trusted=False, custom_ca=True), trust_use_custom_ca=True),
        "pass", "critical", "trusted by Custom CA; not by Mozilla, Apple, Android, Windows"),
    Row("cert.untrusted", make_facts(cert=deployment(trusted=False, custom_ca=True)), "fail", "critical"),
    Row("cert.self_signed", make_facts(cert=rsa_cert(self_signed=True)), "fail", "critical", "signed by itself"),
    Row("cert.chain_incomplete", make_facts(cert=deployment(chain_complete=False)), "fail", "medium",
        "an intermediate for CN=Test Intermediate CA"),
    Row("cert.chain_order", with_deployment(chain_in_order=False), "fail", "low", "CN=localhost -> CN=Test"),
    Row("cert.chain_anchor", with_deployment(chain_has_anchor=True), "fail", "info", "root sent"),
    # #28 item 1: a weak intermediate is its own finding; the chain is trusted as browsers judge it
    Row("cert.weak_intermediate", make_facts(cert=deployment(chain=(rsa_cert(), ca_cert(bits=1024)))),
        "fail", "high", "CN=Test Intermediate CA,O=TLS Audit Tests has a 1024-bit RSA key"),
    Row("cert.weak_intermediate", make_facts(cert=replace(
        deployment(chain=(rsa_cert(), ca_cert(bits=1024)), trusted=False, custom_ca=True),
        trust=(TrustResult("Custom CA", True, weak_key_only=True),)), trust_use_custom_ca=True),
        "fail", "high", "(browsers accept the chain; OpenSSL clients at security level 2 refuse it)"),
    Row("cert.weak_intermediate", make_facts(), "pass", "high", "every intermediate key"),
    Row("cert.weak_intermediate", with_deployment(chain=(rsa_cert(), ca_cert(), ca_cert("CN=Stray", bits=1024)),
                                                  chain_extra=("CN=Stray",)), "pass", "high", "every intermediate key"),
    Row("cert.untrusted", make_facts(cert=replace(deployment(chain=(rsa_cert(), ca_cert(bits=1024))),
                                                  trust=(TrustResult("Custom CA", True, weak_key_only=True),)),
                                     trust_use_custom_ca=True),
        "pass", "critical", "trusted by Custom CA as browsers judge it"),
    # #28 item 7: an unrelated certificate is its own finding, not "out of order"
    Row("cert.chain_extra", with_deployment(chain_extra=("CN=Unrelated CA",)), "fail", "low",
        "1 extra: CN=Unrelated CA"),
    Row("cert.chain_extra", make_facts(), "pass", "low", "every sent certificate is on the way to the root"),
    Row("cert.chain_extra", with_deployment(chain_extra=None), "not_tested", None, "not examined"),
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
    # #28 item 6: the limit binds public CAs; an 826-day leaf of a private root loads in Chromium
    Row("cert.lifetime", make_facts(cert=deployment(rsa_cert(not_after=NOW + timedelta(days=796)), trusted=False,
                                                    custom_ca=True), trust_use_custom_ca=True),
        "info", "info", "this chain ends at a private root, which browsers exempt"),
    Row("cert.lifetime", make_facts(cert=deployment(rsa_cert(not_after=NOW + timedelta(days=796)), trusted=False)),
        "info", "info", "valid for 826 days"),
    Row("cert.symantec", make_facts(cert=deployment(symantec_distrusted=True)), "fail", "high", "Symantec root"),
    Row("cert.ocsp_stapling", make_facts(cert=deployment(ocsp_stapled=Check(BAD))), "fail", "low",
        "no OCSP response stapled"),
    Row("cert.must_staple", make_facts(cert=deployment(must_staple=True, ocsp_stapled=Check(BAD))), "fail", "high",
        "must-staple set"),
    Row("cert.must_staple", make_facts(cert=deployment(must_staple=True)), "pass", "high", "must-staple and stapled"),
    Row("cert.sct", with_deployment(sct_count=0), "fail", "low", "0 SCTs"),
    # #29 item 5: advice that can be followed
    Row("cert.sct", make_facts(cert=replace(deployment(trusted=False, custom_ca=True), sct_count=0),
                               trust_use_custom_ca=True), "pass", "low", "none needed: the chain ends at your private"),
    Row("cert.ocsp_stapling", make_facts(cert=deployment(rsa_cert(ocsp_urls=()), ocsp_stapled=Check(BAD))), "pass",
        "low", "names no OCSP responder (its CA publishes revocation by CRL): nothing to staple"),
    Row("cert.must_staple", make_facts(cert=deployment(rsa_cert(ocsp_urls=()), must_staple=True,
                                                       ocsp_stapled=Check(BAD))), "fail", "high",
        "names no OCSP responder: no server can ever staple it"),
    Row("cert.ev", with_deployment(is_ev=True), "info", "info", "EV certificate for CN=localhost"),
    # #29 item 4: distrust by date, the root found by its key (Entrust Root G2's, Chunghwa's ePKI)
    Row("cert.distrusted_after", make_facts(cert=under_root(ENTRUST_G2, sct=datetime(2025, 1, 3, tzinfo=UTC))),
        "fail", "critical", "Chrome distrusts Entrust certificates issued after 2024-11-11 and refuses this one "
                            "(earliest Certificate Transparency timestamp 2025-01-03)"),
    Row("cert.distrusted_after", make_facts(cert=under_root(ENTRUST_G2, sct=datetime(2024, 11, 5, tzinfo=UTC),
                                                            not_before=datetime(2024, 11, 5, tzinfo=UTC))),
        "fail", "medium", "Chrome does not trust Entrust certificates issued after 2024-11-11: this one "
                          "(earliest Certificate Transparency timestamp 2024-11-05) is still trusted until it expires"),
    Row("cert.distrusted_after", make_facts(cert=under_root(CHUNGHWA_EPKI, sct=datetime(2025, 8, 1, 0, 0, 1,
                                                                                         tzinfo=UTC))),
        "fail", "critical", "Chrome distrusts Chunghwa Telecom certificates issued after 2025-07-31"),
    Row("cert.distrusted_after", make_facts(cert=under_root("ab" * 20, sct=datetime(2025, 8, 1, tzinfo=UTC))),
        "pass", "critical", "no dated distrust applies to this chain"),
    Row("cert.server_auth_only", make_facts(cert=deployment(replace(rsa_cert(not_before=datetime(2026, 7, 1, tzinfo=UTC)),
                                                                     ekus=("serverAuth", "clientAuth"))),
                                            started_at=datetime(2026, 8, 1, tzinfo=UTC)),
        "fail", "medium", "the leaf also allows clientAuth; issued 2026-07-01, after Chrome's serverAuth-only rule"),
    Row("cert.server_auth_only", make_facts(cert=deployment(replace(rsa_cert(), ekus=("serverAuth", "clientAuth")))),
        "info", "low", "issued 2026-01-31, before the rule: its renewal will allow server authentication only"),
    Row("cert.server_auth_only", make_facts(cert=deployment(replace(rsa_cert(), ekus=("serverAuth",)))),
        "pass", "medium", "serverAuth only"),
    # #29 item 7: CAA, as the DNS answered
    Row("cert.caa", replace(make_facts(cert=rsa_cert(issuer=LETS_ENCRYPT)), caa=caa('0 issue "sectigo.com"')),
        "fail", "high", "CAA at shop.net allows only sectigo.com: Let's Encrypt, which issued this certificate, "
                        "may not issue its renewal"),
    Row("cert.caa", replace(make_facts(cert=rsa_cert(issuer=LETS_ENCRYPT)), caa=caa('0 issue "letsencrypt.org"')),
        "pass", "high", "Let's Encrypt (which issued this certificate) is among them"),
    Row("cert.caa", replace(make_facts(), caa=CaaFacts(("shop.net",), ()) ), "info", "low",
        "no CAA records at shop.net: any CA may issue"),
    Row("cert.revoked", with_deployment(revocation=Revocation(
        REVOKED, method=OCSP_RESPONDER, source="http://ocsp.test/", revocation_reason="key_compromise",
        revoked_at=NOW - timedelta(days=1))), "fail", "critical",
        "revoked on 2026-03-01 12:00 UTC (key compromise), according to the OCSP responder http://ocsp.test/"),
    Row("cert.revoked", with_deployment(revocation=Revocation(REVOKED, method=CRL, source="http://crl.test/ca.crl")),
        "fail", "critical", "revoked (no reason given), according to the CRL at http://crl.test/ca.crl"),
    Row("cert.revoked", with_deployment(revocation=Revocation(GOOD, method=OCSP_RESPONDER, source="http://ocsp.test/")),
        "pass", "critical", "good, according to the OCSP responder http://ocsp.test/"),
]

NOT_TESTED_ROWS = [
    Row("cert.ocsp_stapling", make_facts(cert=deployment(ocsp_stapled=Check(NOT_TESTED, reason="OCSP timeout"))),
        "not_tested", evidence="OCSP timeout"),
    Row("cert.chain_incomplete", make_facts(cert=deployment(chain_complete=None)), "not_tested"),
    Row("cert.sha1", make_facts(cert=deployment(chain_has_sha1=None)), "not_tested"),
    Row("cert.symantec", make_facts(cert=deployment(symantec_distrusted=None)), "not_tested"),
    Row("cert.sct", with_deployment(sct_count=None), "not_tested"),
    Row("cert.distrusted_after", make_facts(cert=deployment(OLD_FACTS_LEAF, chain=(OLD_FACTS_LEAF,))), "not_tested",
        evidence="the chain's keys were not recorded"),
    Row("cert.server_auth_only", make_facts(cert=OLD_FACTS_LEAF), "not_tested", evidence="were not recorded"),
    Row("cert.untrusted", replace(make_facts(), errors={"certificate_info": "CONNECTIVITY_ISSUE"}, certificates=[]),
        "not_tested", evidence="CONNECTIVITY_ISSUE"),
    Row("cert.revoked", with_deployment(revocation=Revocation(NOT_TESTED, why="timeout",
                                                              reason="the OCSP responder timed out")),
        "not_tested", evidence="the OCSP responder timed out"),
    Row("cert.revoked", with_deployment(revocation=Revocation(UNKNOWN, method=OCSP_RESPONDER,
                                                              reason="the OCSP responder does not know it")),
        "not_tested", evidence="does not know it"),
    # Audits stored before revocation was checked load without it, and say so.
    Row("cert.revoked", make_facts(), "not_tested", evidence="made before revocation was checked"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "cert", ROWS, NOT_TESTED_ROWS)


def test_it_reports_both_certificates_of_a_dual_deployment():
    facts = make_facts(certs=[deployment(rsa_cert(bits=1024)), deployment(ec_cert())])
    f = finding(facts, "cert.rsa_weak")
    assert (f.status, f.evidence) == ("fail", "RSA certificate: RSA 1024 bits")
    assert finding(facts, "cert.ec_weak").evidence == "EC certificate: EC 256 bits (secp256r1)"


def test_its_expiry_clock_defaults_to_the_scan_start_so_stored_audits_rederive_the_same():
    facts = make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=10)))
    by_default = {f.id: f for f in derive_findings(facts)}["cert.expires_soon"]
    assert by_default.evidence == "expires on 2026-03-12, in 10 days"
