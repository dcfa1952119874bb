"""The grade matrix: every server of the TLS lab is scanned for real (sslyze + our probes) and
graded; the grade, score, caps, warnings and trust issues must be what grading.md says."""

import pytest

from tests.support.tls_servers import FIXTURES
from tlsaudit.domain.audit_report import accept_custom_ca, build_report
from tlsaudit.domain.mozilla import GUIDELINES_VERSION, PROFILE_NAMES, profile_report
from workers.tls.engine import run_scan

GRADE_SERVERS = sorted(name for name, spec in FIXTURES.items() if spec.role == "grade")
LAB_SERVERS = sorted(FIXTURES)

# Key findings each configuration must raise (finding id -> expected status).
KEY_FINDINGS = {
    "b_tls10_enabled": {"proto.tls10": "fail", "proto.tls11": "fail", "vuln.beast": "fail"},
    "b_no_forward_secrecy": {"cipher.forward_secrecy": "fail"},
    "b_cbc_only": {"cipher.aead": "fail"},
    "b_rsa1024": {"cert.rsa_weak": "fail"},
    "b_dh1024": {"vuln.logjam": "fail", "kx.weak_dh": "fail"},
    "b_incomplete_chain": {"cert.chain_incomplete": "fail"},
    "c_tls10_only": {"proto.tls12_missing": "fail", "proto.tls13_missing": "fail"},
    "t_expired": {"cert.expired": "fail"},
    "t_self_signed": {"cert.self_signed": "fail"},
    "m_wrong_name": {"cert.hostname_mismatch": "fail"},
    "a_minus_hsts_zero": {"hsts.disabled": "fail"},
    "a_plus_rsa_hsts": {"vuln.heartbleed": "pass", "vuln.robot": "pass", "hsts.missing": "pass"},
    "f_null_cipher": {"cipher.null": "fail"},
    "f_anon_ecdh": {"cipher.anonymous": "fail"},
}


@pytest.fixture(scope="module")
def reports(tls_lab):
    """Scan every server of the lab once (about 1-2 s each on loopback)."""
    out = {}
    for name in LAB_SERVERS:
        outcome = run_scan("localhost", tls_lab.port(name), ip="127.0.0.1", ca_file=str(tls_lab.ca_file),
                           allow_private=True, network_timeout=3, max_retries=1)
        assert outcome.error is None, f"{name}: {outcome.error}"
        out[name] = (outcome, build_report(outcome.facts, outcome.mozilla))
    return out


def test_the_lab_has_at_least_twelve_graded_configurations():
    assert len(GRADE_SERVERS) >= 12
    assert {FIXTURES[n].grade for n in GRADE_SERVERS} >= {"A+", "A", "A-", "B", "C", "F", "T", "M"}


@pytest.mark.parametrize("name", GRADE_SERVERS)
def test_each_server_gets_the_grade_the_spec_gives(reports, name):
    spec = FIXTURES[name]
    result = reports[name][1].grade
    assert (result.grade, result.grade_ignoring_trust) == (spec.grade, spec.grade_ignoring_trust), \
        f"{name}: caps={result.caps} warnings={result.warnings} trust={result.trust_issues}"
    protocol, key_exchange, cipher, total = spec.score
    assert (result.scores["protocol"], result.scores["key_exchange"], result.scores["cipher"], result.score) == \
        (protocol, key_exchange, cipher, total), name


@pytest.mark.parametrize("name", GRADE_SERVERS)
def test_each_cap_warning_and_trust_issue_is_explained(reports, name):
    spec = FIXTURES[name]
    result = reports[name][1].grade
    caps = " | ".join(c.reason for c in result.caps).lower()
    warnings = " | ".join(w.message for w in result.warnings).lower()
    trust = " | ".join(t.reason for t in result.trust_issues).lower()
    for keyword in spec.caps:
        assert keyword in caps, f"{name}: cap {keyword!r} not in {caps!r}"
    for keyword in spec.warnings:
        assert keyword in warnings, f"{name}: warning {keyword!r} not in {warnings!r}"
    for keyword in spec.trust:
        assert keyword in trust, f"{name}: trust {keyword!r} not in {trust!r}"
    if spec.grade in ("A+", "A") and spec.grade == spec.grade_ignoring_trust:
        assert not result.caps and not result.trust_issues, name


@pytest.mark.parametrize("name", sorted(KEY_FINDINGS))
def test_key_findings_are_raised(reports, name):
    findings = {f.id: f for f in reports[name][1].findings}
    for finding_id, status in KEY_FINDINGS[name].items():
        assert finding_id in findings, f"{name}: no finding {finding_id}"
        assert findings[finding_id].status == status, f"{name}: {finding_id} is {findings[finding_id].status}"


@pytest.mark.parametrize("name", LAB_SERVERS)
def test_our_mozilla_verdicts_are_sslyzes_checker_on_the_same_guidelines(reports, name):
    """sslyze's own checker, handed the pinned guidelines (6.0), and ours over the stored facts agree on
    every lab server: compliance and the criteria that fail. sslyze validates against the public stores
    only, so both are read with the organization's CA accepted, as the report shows them."""
    outcome = reports[name][0]
    theirs = accept_custom_ca(outcome.mozilla, outcome.facts)
    ours = accept_custom_ca(profile_report(outcome.facts), outcome.facts)
    assert set(theirs) == set(ours) == set(PROFILE_NAMES)
    for profile in PROFILE_NAMES:
        assert outcome.mozilla[profile]["guidelines"] == GUIDELINES_VERSION
        assert theirs[profile]["compliant"] is not None, f"{name}/{profile}: {theirs[profile]}"
        assert (theirs[profile]["compliant"], set(theirs[profile]["issues"])) == \
            (ours[profile]["compliant"], set(ours[profile]["issues"])), f"{name}/{profile}: {theirs} vs {ours}"


def test_guidelines_6_0_judge_the_lab_as_expected(reports):
    """What 6.0 changed, seen on a real server: an A+ server's one DHE suite (ffdhe2048), which 5.7's
    intermediate listed, is the one suite 6.0's rejects, and the owner is told to drop it."""
    outcome, report = reports["a_plus_rsa_dhe2048_hsts"]
    assert report.grade.grade == "A+"
    assert outcome.mozilla["intermediate"]["compliant"] is False
    assert outcome.mozilla["intermediate"]["issues"]["ciphers"] == \
        "Cipher suites {'TLS_DHE_RSA_WITH_AES_128_GCM_SHA256'} are supported, but should be rejected."
    trim = next(r for r in report.recommendations if r.id == "cipher.match_profile")
    assert "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256" in trim.change
    assert all("old" not in outcome.mozilla for outcome, _ in reports.values())


def test_a_good_server_meets_mozilla_intermediate_with_its_own_ca(reports):
    report = reports["a_plus_ecdsa_p384_only"][1]
    assert report.mozilla["intermediate"]["compliant"] is True, report.mozilla["intermediate"]
    assert report.best_profile in ("modern", "intermediate")


def test_a_tls10_server_is_told_the_exact_fix_and_the_grade_after_it(reports):
    report = reports["b_tls10_enabled"][1]
    disable = next(r for r in report.recommendations if r.id == "proto.disable_legacy")
    assert disable.title == "Disable TLS 1.0 and TLS 1.1"
    assert disable.predicted_grade in ("A", "A+")
    assert report.predicted.grade == "A+"
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in report.snippets["nginx"]


def test_the_expired_certificate_is_graded_t_with_the_grade_ignoring_trust(reports):
    result = reports["t_expired"][1].grade
    assert {t.kind for t in result.trust_issues} == {"T"}
    assert any("expired" in t.reason.lower() for t in result.trust_issues)
