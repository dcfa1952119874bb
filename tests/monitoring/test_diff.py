"""The pure diff between two audits, built from factory facts and the real report builder."""

from datetime import timedelta

import pytest

from tests.domain.factories import NOW, ec_cert, make_facts, rsa_cert, suite
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.diff import Snapshot, diff_audits


def snap(**facts_kwargs) -> Snapshot:
    facts = make_facts(**facts_kwargs)
    return Snapshot(facts=facts.to_dict(), report=build_report(facts, now=NOW).to_dict())


def test_it_finds_nothing_between_two_identical_audits():
    diff = diff_audits(snap(), snap())
    assert not diff.changed
    assert diff.grade.direction == "same" and diff.certificate is None


@pytest.mark.parametrize("old, new, added, removed", [
    (("TLSv1.2", "TLSv1.3"), ("TLSv1.0", "TLSv1.2", "TLSv1.3"), ["TLSv1.0"], []),
    (("TLSv1.0", "TLSv1.1", "TLSv1.2"), ("TLSv1.2", "TLSv1.3"), ["TLSv1.3"], ["TLSv1.0", "TLSv1.1"]),
    (("TLSv1.2",), ("TLSv1.2",), [], []),
])
def test_protocols_added_and_removed(old, new, added, removed):
    diff = diff_audits(snap(protocols=old), snap(protocols=new))
    assert (diff.protocols_added, diff.protocols_removed) == (added, removed)


def test_suites_added_and_removed_per_protocol():
    old = snap(protocols=("TLSv1.2",), suites=["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"])
    new = snap(protocols=("TLSv1.2",), suites=["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                                suite("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256")])
    diff = diff_audits(old, new)
    assert diff.suites_added == [("TLSv1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256")]
    assert diff.suites_removed == [("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")]


@pytest.mark.parametrize("new_cert, what", [
    (rsa_cert(not_after=NOW + timedelta(days=150)), "expiry"),
    (ec_cert(), "key"),
    (rsa_cert(issuer="CN=Other CA"), "issuer"),
])
def test_a_replaced_certificate_shows_old_and_new(new_cert, what):
    diff = diff_audits(snap(cert=rsa_cert()), snap(cert=new_cert))
    old, new = diff.certificate
    assert diff.changed
    field = {"expiry": "not_after", "key": "key", "issuer": "issuer"}[what]
    assert getattr(old, field) != getattr(new, field)
    assert old.key == "RSA 2048"


def test_a_new_fingerprint_alone_is_a_replaced_certificate():
    old, new = snap(), snap()
    new.facts["certificates"][0]["chain"][0]["fingerprint_sha256"] = "cd" * 32
    assert diff_audits(old, new).certificate[1].fingerprint_sha256 == "cd" * 32


@pytest.mark.parametrize("old_kwargs, new_kwargs, appeared, fixed", [
    ({}, {"heartbleed": "bad"}, ["vuln.heartbleed"], []),
    ({}, {"compression": "bad", "heartbleed": "bad"}, ["vuln.crime", "vuln.heartbleed"], []),
    ({"heartbleed": "bad"}, {}, [], ["vuln.heartbleed"]),
])
def test_findings_that_appeared_or_were_fixed(old_kwargs, new_kwargs, appeared, fixed):
    diff = diff_audits(snap(**old_kwargs), snap(**new_kwargs))
    assert [f.id for f in diff.findings_appeared] == appeared
    assert [f.id for f in diff.findings_fixed] == fixed
    for change in diff.findings_appeared:
        assert (change.new_status, change.old_status) == ("fail", "pass")


def test_a_grade_drop_names_the_cap_that_caused_it_and_a_recovery_the_cap_removed():
    good, tls10 = snap(), snap(protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3"))
    drop = diff_audits(good, tls10)
    assert (drop.grade.old, drop.grade.new, drop.grade.direction) == ("A+", "B", "down")
    assert [c["rule_id"] for c in drop.grade.caps_added] == ["cap.tls10_11"] and drop.grade.caps_removed == []
    back = diff_audits(tls10, good)
    assert back.grade.direction == "up" and [c["rule_id"] for c in back.grade.caps_removed] == ["cap.tls10_11"]
