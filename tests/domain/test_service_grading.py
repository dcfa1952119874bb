"""Grading, findings, recommendations, snippets and the JSON of a service that is not HTTPS (#18 item 3).

The scan engine reports HSTS of an SMTP server as Check(NOT_APPLICABLE, reason); these facts are
built here the same way, so the rules are tested without a mail server.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from tests.domain.factories import make_facts
from tlsaudit.audits.jsonreport import audit_json
from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.applicability import (
    HANDSHAKES,
    HSTS,
    LOAD,
    PROBE,
    SWEEP,
    not_applicable_reason,
    tools_not_applicable,
)
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.findings import derive_findings
from tlsaudit.domain.grading import GradeResult, grade
from tlsaudit.domain.remediation import recommend
from tlsaudit.domain.scanfacts import BAD, NOT_APPLICABLE, NOT_TESTED, Check, Hsts
from tlsaudit.domain.services import SERVICES, service_named
from tlsaudit.domain.snippets import config_snippets

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "audit-report.schema.json").read_text())
SMTP_REASON = "HSTS is an HTTP header; an SMTP server sends none."


def service_facts(service="smtp", **kwargs):
    """What the engine reports for a mail server: no HTTP headers, HSTS not applicable, no ALPN."""
    facts = make_facts(hsts_tested=False, **kwargs)
    return replace(facts, service=service, port=service_named(service).default_port,
                   hsts_check=Check(NOT_APPLICABLE, reason=SMTP_REASON), alpn=[],
                   alpn_check=Check(BAD, detail="no protocol negotiated"))


def fingerprinted(facts):
    """The factories leave the intermediate's fingerprint empty; a real chain (and the schema) has one."""
    chains = [replace(d, chain=tuple(replace(c, fingerprint_sha256=c.fingerprint_sha256 or "cd" * 32)
                                     for c in d.chain)) for d in facts.certificates]
    return replace(facts, certificates=chains)


@pytest.mark.parametrize("facts, letter", [
    # The same TLS that gives an HTTPS site A+ (HSTS a year): A is the top for a mail server.
    (service_facts(), "A"),
    (service_facts("imaps"), "A"),
    (service_facts("postgres"), "A"),
    # Warnings and caps apply as to any server.
    (service_facts(protocols=("TLSv1.2",)), "A-"),
    (service_facts(protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3")), "B"),
    (service_facts(heartbleed="bad"), "F"),
    # An HTTPS site is graded as before: A+ with HSTS, A without.
    (make_facts(), "A+"),
    (make_facts(hsts_max_age=None), "A"),
])
def test_it_grades_a_service_like_any_tls_server_with_a_as_the_top(facts, letter):
    assert grade(facts).grade == letter


def test_hsts_of_a_mail_server_is_not_applicable_with_why_never_not_tested():
    result = grade(service_facts())

    assert {n.rule_id for n in result.not_applicable} == {"plus.hsts", "warn.hsts_disabled", "warn.hsts_invalid"}
    assert all(n.reason.startswith("HSTS is an HTTP header; an SMTP server sends none") for n in result.not_applicable)
    assert "A is the best grade for this service" in result.not_applicable[0].reason
    assert not [n for n in result.not_tested if "hsts" in n.rule_id]
    assert not [i for i in result.improvements if "HSTS" in i]


def test_a_header_left_in_the_facts_does_not_revive_hsts_for_a_mail_server():
    # Given an engine that (wrongly) left a header beside the not-applicable check: the check decides.
    facts = replace(service_facts(), hsts=Hsts(header="max-age=0", max_age=0))
    result = grade(facts)
    assert (result.grade, result.warnings) == ("A", [])
    assert not [f for f in derive_findings(facts) if f.category == "hsts"]


def test_an_https_site_whose_headers_could_not_be_read_still_says_not_tested():
    result = grade(make_facts(hsts_tested=False))
    assert result.not_applicable == []
    assert {n.rule_id for n in result.not_tested} >= {"plus.hsts", "warn.hsts_disabled", "warn.hsts_invalid"}


def test_a_mail_server_gets_no_hsts_or_http2_finding_and_keeps_the_tls_ones():
    findings = {f.id: f for f in derive_findings(service_facts())}

    assert not [i for i in findings if i.startswith("hsts.")]
    assert "perf.http2" not in findings
    assert not [f for f in findings.values() if f.status == NOT_TESTED and "HSTS" in f.reason]
    assert findings["proto.tls13_missing"].status == "pass"


def test_an_https_site_still_gets_its_hsts_findings():
    findings = {f.id: f for f in derive_findings(make_facts(hsts_max_age=None))}
    assert findings["hsts.missing"].status == "fail"
    assert findings["perf.http2"].status == "pass"


def test_no_hsts_http2_or_preload_recommendation_for_a_mail_server():
    ids = {r.id for r in recommend(service_facts(protocols=("TLSv1.2",)), "intermediate")}
    assert ids & {"hsts.enable", "perf.hsts_preload", "perf.http2"} == set()
    assert "proto.enable_tls13" in ids


@pytest.mark.parametrize("service, servers", [
    ("https", {"nginx", "apache", "haproxy", "caddy"}),
    ("smtp", {"postfix"}), ("smtps", {"postfix"}),
    ("imap", {"dovecot"}), ("imaps", {"dovecot"}), ("pop3", {"dovecot"}), ("pop3s", {"dovecot"}),
    ("ftp", set()), ("xmpp", set()), ("ldap", set()), ("ldaps", set()), ("postgres", set()),
])
def test_snippets_fit_the_service_and_only_https_gets_an_hsts_line(service, servers):
    facts = make_facts() if service == "https" else service_facts(service)
    snippets = config_snippets("intermediate", facts)

    assert set(snippets) == servers
    assert any("Strict-Transport-Security" in text for text in snippets.values()) == (service == "https")


def test_the_postfix_snippet_sets_the_profile_and_wraps_smtps():
    postfix = config_snippets("intermediate", service_facts("smtps"))["postfix"]
    assert "smtpd_tls_mandatory_protocols = >=TLSv1.2" in postfix
    assert "smtpd_tls_wrappermode=yes" in postfix
    assert "wrappermode" not in config_snippets("intermediate", service_facts("smtp"))["postfix"]


def test_the_dovecot_snippet_sets_the_minimum_protocol_and_suites():
    dovecot = config_snippets("modern", service_facts("imaps"))["dovecot"]
    assert "ssl_min_protocol = TLSv1.3" in dovecot
    assert "ssl_cipher_suites = TLS_AES_128_GCM_SHA256" in dovecot


def test_the_grade_round_trips_with_its_not_applicable_rules_and_reads_older_grades():
    result = grade(service_facts())
    assert GradeResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    older = {k: v for k, v in grade(make_facts()).to_dict().items() if k != "not_applicable"}
    assert GradeResult.from_dict(older).not_applicable == []


def test_the_audit_json_carries_the_service_and_not_applicable_and_matches_the_schema():
    facts = fingerprinted(service_facts())
    document = audit_json(facts, build_report(facts), 1.5)

    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document["service"] == "smtp"
    assert document["hsts"]["check"] == {"status": "not_applicable", "detail": "", "reason": SMTP_REASON}
    assert [n["rule_id"] for n in document["not_applicable"]] == ["plus.hsts", "warn.hsts_disabled",
                                                                  "warn.hsts_invalid"]
    assert set(document["snippets"]) == {"postfix"}


def test_the_https_audit_json_says_https_and_has_nothing_not_applicable():
    facts = fingerprinted(make_facts())
    document = audit_json(facts, build_report(facts), 1.5)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert (document["service"], document["not_applicable"]) == ("https", [])


def test_the_text_report_names_the_service_and_what_does_not_apply():
    facts = service_facts()
    text = render_text(facts, build_report(facts), 1.5)
    assert text.splitlines()[:2] == ["TLS Audit of localhost:25 (127.0.0.1) in 1.5 s", " Service: SMTP (STARTTLS)"]
    assert "Not applicable    plus.hsts: HSTS is an HTTP header" in text
    assert "not tested" not in text.split("Rating")[1]


@pytest.mark.parametrize("scheme, refused", [
    ("https", set()),
    ("smtp", {HSTS, PROBE, LOAD, SWEEP, HANDSHAKES}),
    ("postgres", {HSTS, PROBE, LOAD, SWEEP, HANDSHAKES}),
    # Implicit TLS: the handshake runner speaks TLS from the first byte, as these do.
    ("smtps", {HSTS, PROBE, LOAD, SWEEP}),
    ("ldaps", {HSTS, PROBE, LOAD, SWEEP}),
])
def test_the_http_tools_are_refused_for_other_services_with_why(scheme, refused):
    service = service_named(scheme)
    assert {tool for tool, _, _ in tools_not_applicable(service)} == refused
    for tool in refused:
        assert not_applicable_reason(service, tool).startswith(f"Not applicable to {'a' if scheme == 'postgres' else 'an'} "
                                                               f"{service.label} service: ")


def test_every_service_is_either_http_or_refuses_the_http_tools():
    for service in SERVICES.values():
        assert (not_applicable_reason(service, LOAD) is None) == service.http
