"""The SSL Labs 2009r grader, told as a table of servers and the grade each one earns.

Rows marked "spec #n" are the test matrix of /work/shared/grading.md §6 with its exact
scores; "legacy" rows are its extra rows. Every other row exists to exercise one rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.domain.factories import (
    DEFAULT_SUITES,
    NOW,
    ca_cert,
    deployment,
    ec_cert,
    make_facts,
    preference,
    rsa_cert,
    suite,
    suites_for,
)
from tests.domain.test_findings_cert import ENTRUST_G2, under_root
from tlsaudit.domain.grading import (
    RULE_EFFECTS,
    RULES,
    UNDECIDABLE,
    GradeResult,
    NotTested,
    grade,
)
from tlsaudit.domain.revocationwords import NOT_RECORDED
from tlsaudit.domain.scanfacts import (
    BAD,
    CRL,
    GOOD,
    NOT_TESTED,
    OCSP_RESPONDER,
    REVOKED,
    UNKNOWN,
    Check,
    Revocation,
    ScanFacts,
)

ALL_TLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")
MODERN = ("TLSv1.2", "TLSv1.3")


def modern_plus(*extra, protocol="TLSv1.2"):
    """The default modern suites plus a few more accepted on `protocol`."""
    return suites_for(MODERN) + [suite(name, protocol) for name in extra]


@dataclass
class Row:
    id: str
    facts: ScanFacts
    grade: str
    fired: set[str] = field(default_factory=set)   # exactly the caps, warnings and trust rules that apply
    ignoring: str | None = None                    # grade_ignoring_trust; defaults to `grade`
    score: int | None = None
    scores: tuple[int, int, int] | None = None     # protocol, key exchange, cipher
    not_tested: set[str] = field(default_factory=set)  # at least these rule ids


ROWS = [
    # --- spec §6 test matrix, column "SSL Labs 2009r (this spec)" -------------------------
    Row("spec #1 modern TLS 1.2+1.3, RSA-2048, HSTS 1 year", make_facts(), "A+", score=93, scores=(100, 90, 90)),
    Row("spec #2a no HSTS header", make_facts(hsts_max_age=None), "A", score=93),
    Row("spec #2b HSTS max-age=86400 is too short but no warning", make_facts(hsts_max_age=86400), "A", score=93),
    Row("spec #2c HSTS max-age=0", make_facts(hsts_max_age=0), "A-", {"warn.hsts_disabled"}, score=93),
    Row("spec #3 TLS 1.2 only", make_facts(protocols=("TLSv1.2",)), "A-", {"warn.no_tls13"}, score=93),
    Row("spec #3 variant: TLS 1.2 only, one AES-128-GCM suite",
        make_facts(protocols=("TLSv1.2",), suites=["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]),
        "A-", {"warn.no_tls13"}, score=89, scores=(100, 90, 80)),
    Row("spec #4 TLS 1.0-1.3, AEAD and CBC",
        make_facts(protocols=ALL_TLS, suites=suites_for(ALL_TLS) + suites_for(
            ("TLSv1.2",), ["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"])),
        "B", {"cap.tls10_11"}, score=91, scores=(95, 90, 90)),
    Row("spec #5 TLS 1.0+1.1 only, ECDHE AES-CBC", make_facts(protocols=("TLSv1.0", "TLSv1.1")),
        "C", {"cap.no_tls12", "cap.tls10_11", "cap.no_aead", "warn.no_tls13"}, score=90, scores=(92, 90, 90)),
    Row("spec #6 TLS 1.2 only, RSA key exchange only",
        make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256",
                                                   "TLS_RSA_WITH_AES_256_GCM_SHA384"]),
        "B", {"cap.no_forward_secrecy", "warn.no_tls13"}, score=93, scores=(100, 90, 90)),
    Row("spec #7 TLS 1.2 only, ECDHE AES-CBC only",
        make_facts(protocols=("TLSv1.2",), suites=[
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"]),
        "B", {"cap.no_aead", "warn.no_tls13"}, score=93, scores=(100, 90, 90)),
    Row("spec #8 RSA-1024 certificate", make_facts(cert=rsa_cert(bits=1024)),
        "B", {"cap.weak_key"}, score=90, scores=(100, 80, 90)),
    Row("spec #9 plus DHE with a 1024-bit group, ECDHE preferred",
        make_facts(suites=suites_for(MODERN) + [suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1024)],
                   preferences=[preference("TLSv1.2", *DEFAULT_SUITES["TLSv1.2"],
                                           "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256")]),
        "B", {"cap.weak_key"}, score=90, scores=(100, 80, 90)),
    Row("spec #10 ECDSA P-256 certificate",
        make_facts(cert=ec_cert(), suites=suites_for(("TLSv1.3",)) + suites_for(("TLSv1.2",), [
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"])),
        "A+", score=93, scores=(100, 90, 90)),
    Row("spec #11a expired certificate",
        make_facts(cert=rsa_cert(not_before=datetime(2020, 1, 1), not_after=datetime(2021, 1, 1))),
        "T", {"trust.expired"}, ignoring="A+", score=93),
    Row("spec #11b self-signed certificate", make_facts(cert=rsa_cert(self_signed=True)),
        "T", {"trust.self_signed"}, ignoring="A+", score=93),
    Row("spec #12 certificate for www.example.org scanned as localhost",
        make_facts(cert=deployment(rsa_cert(san=("www.example.org",)), hostname_matches=False)),
        "M", {"trust.hostname_mismatch"}, ignoring="A+", score=93),

    # --- spec §6 extra (legacy) rows --------------------------------------------------------
    Row("legacy: SSL 3.0 + TLS 1.2 with CBC on SSL 3.0 (POODLE)",
        make_facts(protocols=("SSLv3", "TLSv1.2")),
        "C", {"cap.sslv3", "cap.poodle_ssl3", "warn.no_tls13"}, score=90, scores=(90, 90, 90)),
    # Offered semantics: SSL Labs gives B here because no modern client negotiates RC4.
    Row("legacy: RC4-SHA offered last on TLS 1.2",
        make_facts(suites=modern_plus("TLS_RSA_WITH_RC4_128_SHA"),
                   preferences=[preference("TLSv1.2", *DEFAULT_SUITES["TLSv1.2"], "TLS_RSA_WITH_RC4_128_SHA")]),
        "C", {"cap.rc4", "cap.rc4_tls11"}),
    Row("legacy: RC4 only", make_facts(protocols=("TLSv1.2",), suites=[
        "TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_RC4_128_SHA"]),
        "F", {"cap.rc4_only", "cap.no_aead", "warn.no_tls13"}, score=89, scores=(100, 90, 80)),
    # Offered semantics: SSL Labs gives A/A+ here because no modern client negotiates 3DES.
    Row("legacy: DES-CBC3-SHA last in server order",
        make_facts(suites=modern_plus("TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
                   preferences=[preference("TLSv1.2", *DEFAULT_SUITES["TLSv1.2"], "TLS_RSA_WITH_3DES_EDE_CBC_SHA")]),
        "C", {"cap.sweet32"}, score=93, scores=(100, 90, 90)),
    Row("legacy: DES-CBC3-SHA preferred",
        make_facts(suites=modern_plus("TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
                   preferences=[preference("TLSv1.2", "TLS_RSA_WITH_3DES_EDE_CBC_SHA", *DEFAULT_SUITES["TLSv1.2"])]),
        "C", {"cap.sweet32"}, score=93),
    Row("legacy: EXP-RC4-MD5 (FREAK)", make_facts(suites=modern_plus("TLS_RSA_EXPORT_WITH_RC4_40_MD5")),
        "F", {"cap.export", "cap.weak_cipher", "cap.rc4", "cap.rc4_tls11"}, score=66, scores=(100, 40, 60)),
    Row("legacy: DES-CBC-SHA (56 bits)", make_facts(suites=modern_plus("TLS_RSA_WITH_DES_CBC_SHA")),
        "F", {"cap.weak_cipher", "cap.sweet32"}, score=81, scores=(100, 90, 60)),

    # --- one row per remaining rule ---------------------------------------------------------
    Row("SSL 2.0 supported even without suites", make_facts(protocols=("SSLv2", "TLSv1.2", "TLSv1.3")),
        "F", {"cap.sslv2"}, scores=(60, 90, 90)),
    Row("SSL 3.0 is the best protocol", make_facts(protocols=("SSLv3",)),
        "F", {"cap.sslv3_only", "cap.poodle_ssl3", "cap.no_tls12", "cap.no_forward_secrecy", "cap.no_aead",
              "warn.no_tls13"}, scores=(80, 90, 90)),
    Row("anonymous suite accepted: key exchange 0, total 0",
        make_facts(suites=modern_plus("TLS_DH_anon_WITH_AES_128_GCM_SHA256")),
        "F", {"cap.anon"}, score=0, scores=(100, 0, 90)),
    Row("DHE group of 768 bits (Logjam)",
        make_facts(suites=suites_for(MODERN) + [suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=768)]),
        "F", {"cap.insecure_key"}, score=78, scores=(100, 40, 90)),
    Row("RSA-512 certificate", make_facts(cert=rsa_cert(bits=512)),
        "F", {"cap.insecure_key"}, score=78, scores=(100, 40, 90)),
    Row("RSA-384 certificate", make_facts(cert=rsa_cert(bits=384)),
        "F", {"cap.insecure_key"}, score=72, scores=(100, 20, 90)),
    Row("RSA-4096 certificate with P-384 key exchange",
        make_facts(cert=rsa_cert(bits=4096), suites=[suite(s.name, s.protocol, kx_bits=384)
                                                     for s in suites_for(MODERN)]),
        "A+", score=96, scores=(100, 100, 90)),
    Row("MD5-signed certificate", make_facts(cert=rsa_cert(signature_hash="md5")), "F", {"cap.md5_signature"}),
    Row("MD5-signed intermediate, root's own MD5 signature ignored",
        make_facts(cert=deployment(rsa_cert(), chain=(rsa_cert(), ca_cert(signature_hash="md5"),
                                                      ca_cert("CN=Root", signature_hash="md5", root=True)))),
        "F", {"cap.md5_signature"}),
    Row("RSA public exponent 1", make_facts(cert=rsa_cert(exponent=1)), "F", {"cap.rsa_exponent_1"}),
    Row("insecure renegotiation",
        make_facts(secure_renegotiation=BAD, client_renegotiation=BAD), "F", {"cap.insecure_renegotiation"}),
    Row("no secure renegotiation, client renegotiation refused",
        make_facts(secure_renegotiation=BAD), "A-", {"warn.no_secure_renegotiation"}),
    Row("TLS 1.3 only: renegotiation does not apply",
        make_facts(protocols=("TLSv1.3",), secure_renegotiation=BAD, client_renegotiation=BAD),
        "A+", scores=(100, 90, 90)),
    Row("Heartbleed", make_facts(heartbleed=BAD), "F", {"cap.heartbleed"}),
    Row("CCS injection", make_facts(ccs_injection=BAD), "F", {"cap.ccs_injection"}),
    Row("ROBOT", make_facts(robot=Check(BAD, value="VULNERABLE_WEAK_ORACLE")), "F", {"cap.robot"}),
    Row("TLS compression (CRIME)", make_facts(compression=BAD), "C", {"cap.compression"}),
    Row("IDEA accepted on TLS 1.1 (SWEET32)",
        make_facts(protocols=("TLSv1.1", "TLSv1.2", "TLSv1.3"),
                   suites=suites_for(("TLSv1.1", "TLSv1.2", "TLSv1.3")) + [suite("TLS_RSA_WITH_IDEA_CBC_SHA",
                                                                                "TLSv1.1")]),
        "C", {"cap.sweet32", "cap.tls10_11"}),
    Row("3DES only on TLS 1.0 is not SWEET32's C",
        make_facts(protocols=ALL_TLS, suites=suites_for(ALL_TLS) + [suite("TLS_RSA_WITH_3DES_EDE_CBC_SHA",
                                                                          "TLSv1.0")]),
        "B", {"cap.tls10_11"}),
    Row("RC4 only on TLS 1.0 is B, not C",
        make_facts(protocols=ALL_TLS, suites=suites_for(ALL_TLS) + [suite("TLS_RSA_WITH_RC4_128_SHA", "TLSv1.0")]),
        "B", {"cap.tls10_11", "cap.rc4"}),
    Row("incomplete chain blocks A+", make_facts(cert=deployment(chain_complete=False)),
        "B", {"cap.incomplete_chain"}, score=93),
    Row("unparseable HSTS header", make_facts(hsts_valid=False), "A-", {"warn.hsts_invalid"}),
    Row("server prefers RSA key exchange on TLS 1.2 (no TLS 1.3)",
        make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256",
                                                   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
                   preferences=[preference("TLSv1.2", "TLS_RSA_WITH_AES_128_GCM_SHA256",
                                           "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")]),
        "B", {"cap.no_forward_secrecy", "warn.no_tls13"}),
    Row("RSA key exchange accepted but the client chooses: offered FS is enough",
        make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256",
                                                   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
                   preferences=[preference("TLSv1.2", "TLS_RSA_WITH_AES_128_GCM_SHA256",
                                           "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", enforced=False)]),
        "A-", {"warn.no_tls13"}),
    Row("server prefers CBC on TLS 1.2 (no TLS 1.3)",
        make_facts(protocols=("TLSv1.2",), suites=["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
                                                   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
                   preferences=[preference("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
                                           "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")]),
        "B", {"cap.no_aead", "warn.no_tls13"}),
    Row("TLS 1.3 makes a TLS 1.2 preference for RSA irrelevant",
        make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_GCM_SHA256"),
                   preferences=[preference("TLSv1.2", "TLS_RSA_WITH_AES_128_GCM_SHA256")]),
        "A+"),
    Row("chain not trusted by Mozilla", make_facts(cert=deployment(trusted=False)),
        "T", {"trust.untrusted"}, ignoring="A+"),
    Row("certificate not valid yet", make_facts(cert=rsa_cert(not_before=NOW + timedelta(days=2))),
        "T", {"trust.not_yet_valid"}, ignoring="A+"),
    Row("SHA-1 in the chain", make_facts(cert=deployment(chain_has_sha1=True)), "T", {"trust.sha1"}, ignoring="A+"),
    Row("SHA-1 intermediate sent, no verified chain",
        make_facts(cert=deployment(chain=(rsa_cert(), ca_cert(signature_hash="sha1")), chain_has_sha1=None)),
        "T", {"trust.sha1"}, ignoring="A+"),
    Row("distrusted Symantec root", make_facts(cert=deployment(symantec_distrusted=True)),
        "T", {"trust.symantec"}, ignoring="A+"),
    Row("Entrust chain, first logged after Chrome's distrust date (the root still in every store)",
        make_facts(cert=under_root(ENTRUST_G2, sct=datetime(2025, 1, 3, tzinfo=timezone.utc))),
        "T", {"trust.distrusted_after"}, ignoring="A+"),
    Row("Entrust chain logged before the date: still trusted (a finding says renew elsewhere)",
        make_facts(cert=under_root(ENTRUST_G2, sct=datetime(2024, 11, 5, tzinfo=timezone.utc),
                                   not_before=datetime(2024, 11, 5, tzinfo=timezone.utc))), "A+"),
    Row("revoked leaf", make_facts(cert=replace(deployment(), revocation=Revocation(
        REVOKED, method=OCSP_RESPONDER, source="http://ocsp.test/", revocation_reason="key_compromise"))),
        "T", {"trust.revoked"}, ignoring="A+"),
    Row("leaf not revoked", make_facts(cert=replace(deployment(), revocation=Revocation(GOOD, method=CRL))), "A+"),
    Row("T wins over M",
        make_facts(cert=deployment(rsa_cert(san=("www.example.org",)), hostname_matches=False, trusted=False)),
        "T", {"trust.untrusted", "trust.hostname_mismatch"}, ignoring="A+"),
    Row("T keeps the capped letter aside",
        make_facts(protocols=ALL_TLS, cert=rsa_cert(not_after=NOW - timedelta(days=1))),
        "T", {"cap.tls10_11", "trust.expired"}, ignoring="B"),
    Row("custom CA trusted when the organisation supplied it",
        make_facts(cert=deployment(trusted=False, custom_ca=True), trust_use_custom_ca=True), "A+"),
    Row("custom CA ignored when the organisation did not supply it",
        make_facts(cert=deployment(trusted=False, custom_ca=True)), "T", {"trust.untrusted"}, ignoring="A+"),
    Row("custom CA set but it does not trust the chain either",
        make_facts(cert=deployment(trusted=False, custom_ca=False), trust_use_custom_ca=True),
        "T", {"trust.untrusted"}, ignoring="A+"),
    Row("dual RSA + ECDSA certificates, both good",
        make_facts(certs=[deployment(rsa_cert()), deployment(ec_cert(curve="secp384r1", bits=384))]),
        "A+", score=93),
    Row("dual certificates: graded on the weaker key",
        make_facts(certs=[deployment(rsa_cert(bits=1024)), deployment(ec_cert())]),
        "B", {"cap.weak_key"}, scores=(100, 80, 90)),
    Row("dual certificates: one expired gives T",
        make_facts(certs=[deployment(rsa_cert()), deployment(ec_cert(not_after=NOW - timedelta(days=3)))]),
        "T", {"trust.expired"}, ignoring="A+"),

    # --- NOT_TESTED inputs: treated as absent, never as a pass, and reported ---------------
    Row("TLS 1.0 not tested: graded as not supported",
        make_facts(not_tested_protocols=("TLSv1.0",)), "A+", not_tested={"cap.tls10_11"}),
    Row("TLS 1.3 not tested: graded as not supported",
        make_facts(protocols=("TLSv1.2",), not_tested_protocols=("TLSv1.3",)),
        "A-", {"warn.no_tls13"}, not_tested={"warn.no_tls13"}),
    Row("Heartbleed, CCS, ROBOT and compression not tested",
        make_facts(heartbleed=NOT_TESTED, ccs_injection=NOT_TESTED, robot=NOT_TESTED, compression=NOT_TESTED),
        "A+", not_tested={"cap.heartbleed", "cap.ccs_injection", "cap.robot", "cap.compression"}),
    Row("secure renegotiation not tested",
        make_facts(secure_renegotiation=NOT_TESTED), "A+",
        not_tested={"cap.insecure_renegotiation", "warn.no_secure_renegotiation"}),
    Row("no secure renegotiation, client renegotiation not tested",
        make_facts(secure_renegotiation=BAD, client_renegotiation=NOT_TESTED), "A-",
        {"warn.no_secure_renegotiation"}, not_tested={"cap.insecure_renegotiation"}),
    Row("HTTP headers not read: no A+, no HSTS warning", make_facts(hsts_tested=False), "A",
        not_tested={"plus.hsts", "warn.hsts_disabled", "warn.hsts_invalid"}),
    Row("no certificate retrieved", make_facts(certs=[]), "A+",
        not_tested={"trust.untrusted", "trust.expired", "trust.hostname_mismatch", "cap.weak_key"}),
    Row("no trust store result", make_facts(cert=replace(deployment(), trust=())), "A+",
        not_tested={"trust.untrusted"}),
    Row("chain completeness and Symantec unknown",
        make_facts(cert=deployment(chain_complete=None, symantec_distrusted=None)), "A+",
        not_tested={"cap.incomplete_chain", "trust.symantec"}),
    Row("DHE group size not reported",
        make_facts(suites=suites_for(MODERN) + [suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=None)]),
        "A+", not_tested={"cap.insecure_key"}),
    Row("CBC on TLS: padding-oracle rules reported as not tested",
        make_facts(suites=modern_plus("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")), "A+",
        not_tested={"cap.poodle_tls", "cap.zombie_poodle", "cap.goldendoodle", "cap.sleeping_poodle",
                    "cap.cve_2016_2107", "cap.cve_2019_1559"}),
]


def _fired(result: GradeResult) -> set[str]:
    return ({c.rule_id for c in result.caps} | {w.rule_id for w in result.warnings}
            | {t.rule_id for t in result.trust_issues})


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_it_grades_each_server_as_the_table_says(row: Row):
    result = grade(row.facts)

    assert (result.grade, result.grade_ignoring_trust) == (row.grade, row.ignoring or row.grade)
    assert _fired(result) == row.fired
    if row.score is not None:
        assert result.score == row.score
    if row.scores is not None:
        assert (result.scores["protocol"], result.scores["key_exchange"], result.scores["cipher"]) == row.scores
    assert row.not_tested <= {n.rule_id for n in result.not_tested}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_it_round_trips_every_result_through_json(row: Row):
    result = grade(row.facts)

    assert GradeResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_every_rule_in_the_registry_is_exercised_by_a_row():
    exercised = set()
    for row in ROWS:
        result = grade(row.facts)
        exercised |= _fired(result) | {n.rule_id for n in result.not_tested}
        if result.grade_ignoring_trust == "A+":
            exercised.add("plus.hsts")

    assert set(RULES) - exercised == set()


def test_the_docs_describe_every_rule():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "grading.md").read_text()

    assert {rule_id for rule_id in RULES if f"| `{rule_id}` |" not in docs} == set()


def test_the_registry_is_consistent():
    assert set(RULE_EFFECTS) == set(RULES)
    assert set(RULE_EFFECTS.values()) <= {"A+", "A-", "B", "C", "F", "T", "M"}
    assert set(UNDECIDABLE) <= set(RULES)
    assert all(rule_id.split(".")[0] in ("cap", "warn", "plus", "trust") for rule_id in RULES)


def test_it_weights_the_scores_by_truncating():
    result = grade(make_facts(protocols=("TLSv1.1", "TLSv1.2", "TLSv1.3")))

    assert result.scores == {"protocol": 97, "key_exchange": 90, "cipher": 90}
    assert result.weighted == {"protocol": 29, "key_exchange": 27, "cipher": 36}
    assert result.score == 92
    assert result.ruleset == "2009r"


def test_it_caps_with_reasons_a_site_owner_understands():
    result = grade(make_facts(protocols=ALL_TLS))

    assert result.caps[0].grade == "B"
    assert result.caps[0].reason == "TLS 1.0 and TLS 1.1 are supported (cap B since January 2020)"
    assert result.improvements == ["Disable TLS 1.0 and TLS 1.1: lifts the B cap"]


def test_it_lists_caps_worst_first_and_each_fix_once():
    result = grade(make_facts(protocols=("SSLv3", "TLSv1.2", "TLSv1.3")))

    assert [c.grade for c in result.caps] == ["C", "B"]
    assert result.improvements == ["Disable SSL 3.0: lifts the C cap"]


def test_a_cap_blocks_both_a_plus_and_a_minus():
    # Score 93, HSTS good and a warning: without the cap this would be A-.
    result = grade(make_facts(protocols=("TLSv1.2",), cert=deployment(chain_complete=False)))

    assert result.score == 93
    assert result.grade == "B"
    assert [w.rule_id for w in result.warnings] == ["warn.no_tls13"]


def test_it_suggests_hsts_for_a_plus_only_when_that_is_what_is_missing():
    assert grade(make_facts(hsts_max_age=86400)).improvements == [
        "Add HSTS with max-age >= 15552000 (180 days): gives A+"]
    assert grade(make_facts(protocols=("TLSv1.2",), hsts_max_age=None)).improvements == [
        "Enable TLS 1.3: removes the A- warning",
        "Add HSTS with max-age >= 15552000 (180 days): gives A+ once the warnings are fixed"]
    assert grade(make_facts()).improvements == []
    assert grade(make_facts(hsts_tested=False)).improvements == []


def test_it_explains_trust_problems_and_how_to_fix_them():
    result = grade(make_facts(cert=rsa_cert(not_after=datetime(2021, 1, 1))))

    assert result.trust_issues[0].kind == "T"
    # The date is the cert.expired finding's evidence; the grade line names the fact once.
    assert result.trust_issues[0].reason == "The certificate has expired"
    assert result.improvements == ["Renew the certificate: removes the T grade"]


def test_it_names_the_hosts_a_mismatched_certificate_covers():
    facts = make_facts(cert=deployment(rsa_cert(san=("www.example.org",)), hostname_matches=False))

    (issue,) = grade(facts).trust_issues
    assert issue.reason == "The certificate does not cover localhost (it covers: www.example.org)"


def test_it_names_the_weakest_key():
    facts = make_facts(suites=suites_for(MODERN) + [suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1024)])

    (cap,) = grade(facts).caps
    assert "the 1024-bit DH group of TLS_DHE_RSA_WITH_AES_128_GCM_SHA256" in cap.reason


def test_expiry_is_judged_at_the_scan_start_unless_told_otherwise():
    facts = make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=1)))

    assert grade(facts).grade == "A+"
    assert grade(facts, now=NOW + timedelta(days=2)).grade == "T"


def test_it_accepts_naive_datetimes_as_utc():
    facts = make_facts(started_at=datetime(2026, 3, 2, 12, 0),
                       cert=rsa_cert(not_after=datetime(2026, 3, 2, 11, 0)))

    assert grade(facts).grade == "T"
    assert grade(facts, now=datetime(2026, 3, 2, 10, 0)).grade == "A+"


def test_the_unprobeable_rules_are_always_reported_not_tested():
    result = grade(make_facts())

    reported = {n.rule_id: n.reason for n in result.not_tested}
    assert {"cap.ticketbleed", "cap.drown_shared_key", "cap.debian_weak_key"} <= set(reported)
    assert reported["cap.ticketbleed"] == UNDECIDABLE["cap.ticketbleed"]
    # Without CBC suites on TLS the padding oracles cannot apply, so they are decided.
    assert "cap.poodle_tls" not in reported
    assert all(isinstance(n, NotTested) and n == (n.rule_id, n.reason) for n in result.not_tested)


def test_it_refuses_a_scan_without_any_protocol():
    with pytest.raises(ValueError, match="no SSL/TLS protocol is supported"):
        grade(make_facts(protocols=(), suites=[]))


def test_it_refuses_a_scan_without_any_suite():
    with pytest.raises(ValueError, match="no cipher suite was accepted"):
        grade(make_facts(suites=[]))


def test_it_ignores_suites_of_a_protocol_that_is_not_supported():
    facts = make_facts(protocols=("TLSv1.2",), suites=suites_for(("TLSv1.2",)) + [
        suite("TLS_RSA_WITH_RC4_128_SHA", "TLSv1.1")])
    facts.protocols["TLSv1.1"] = Check(NOT_TESTED, reason="timed out")

    result = grade(facts)

    assert result.grade == "A-"
    assert "cap.tls10_11" in {n.rule_id for n in result.not_tested}


def test_the_result_is_plain_json():
    data = grade(make_facts(protocols=ALL_TLS, heartbleed=NOT_TESTED)).to_dict()

    assert json.loads(json.dumps(data)) == data
    assert data["caps"][0] == {"grade": "B", "reason": "TLS 1.0 and TLS 1.1 are supported (cap B since January 2020)",
                               "rule_id": "cap.tls10_11"}
    heartbleed = {"rule_id": "cap.heartbleed", "reason": "The heartbleed check did not run (probe failed)"}
    assert heartbleed in data["not_tested"]
    assert data["grade"] == "B" and data["score"] == 91


def test_a_revoked_leaf_grades_t_with_its_reason_and_keeps_the_letter_aside():
    revoked = Revocation(REVOKED, method=OCSP_RESPONDER, source="http://ocsp.test/",
                         revocation_reason="key_compromise", revoked_at=NOW - timedelta(days=1))
    result = grade(make_facts(cert=replace(deployment(), revocation=revoked)))

    assert (result.grade, result.grade_ignoring_trust) == ("T", "A+")
    (issue,) = result.trust_issues
    assert (issue.kind, issue.rule_id) == ("T", "trust.revoked")
    assert issue.reason == ("The certificate for CN=localhost has been revoked on 2026-03-01 12:00 UTC (key "
                            "compromise), according to the OCSP responder http://ocsp.test/")
    assert result.improvements[0] == "Replace the revoked certificate: removes the T grade"


@pytest.mark.parametrize("revocation, reason", [
    (None, NOT_RECORDED),
    (Revocation(NOT_TESTED, why="timeout", reason="the OCSP responder timed out"),
     "not checked: the OCSP responder timed out"),
    (Revocation(UNKNOWN, method=OCSP_RESPONDER, reason="the OCSP responder does not know this certificate"),
     "unknown: the OCSP responder does not know this certificate"),
])
def test_a_revocation_status_that_is_neither_good_nor_revoked_is_reported_not_tested_with_why(revocation, reason):
    result = grade(make_facts(cert=replace(deployment(), revocation=revocation)))

    reported = {n.rule_id: n.reason for n in result.not_tested}
    assert reported["trust.revoked"] == f"Revocation of CN=localhost: {reason}"
    assert result.grade == "A+"


def test_a_good_revocation_answer_decides_the_rule():
    result = grade(make_facts(cert=replace(deployment(), revocation=Revocation(GOOD, method=OCSP_RESPONDER))))
    assert "trust.revoked" not in {n.rule_id for n in result.not_tested}
