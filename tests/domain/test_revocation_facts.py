"""A deployment's revocation status: stored with the facts, re-read, and put in words the same everywhere."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from tests.domain.factories import NOW, deployment, make_facts
from tlsaudit.domain.revocationwords import NOT_RECORDED, revocation_words
from tlsaudit.domain.scanfacts import (
    CRL,
    GOOD,
    NOT_CHECKED_WHY,
    NOT_TESTED,
    OCSP_RESPONDER,
    REVOKED,
    STAPLED_OCSP,
    UNKNOWN,
    Revocation,
    ScanFacts,
)

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "audit-report.schema.json").read_text())
REVOKED_BY_OCSP = Revocation(REVOKED, method=OCSP_RESPONDER, source="http://ocsp.test/",
                             revocation_reason="key_compromise", revoked_at=NOW - timedelta(hours=2))


def test_it_round_trips_through_the_stored_json():
    facts = make_facts(cert=replace(deployment(), revocation=REVOKED_BY_OCSP))

    again = ScanFacts.from_dict(json.loads(json.dumps(facts.to_dict())))

    assert again.certificates[0].revocation == REVOKED_BY_OCSP


def test_an_audit_stored_before_revocation_checks_still_loads():
    stored = make_facts().to_dict()
    for certificate in stored["certificates"]:
        del certificate["revocation"]

    (again,) = ScanFacts.from_dict(stored).certificates

    assert again.revocation is None and revocation_words(again.revocation) == NOT_RECORDED


@pytest.mark.parametrize("revocation, words", [
    (REVOKED_BY_OCSP, "revoked on 2026-03-02 10:00 UTC (key compromise), according to the OCSP responder "
                      "http://ocsp.test/"),
    (Revocation(REVOKED, method=CRL, source="http://crl.test/ca.crl", revocation_reason="cessation_of_operation"),
     "revoked (cessation of operation), according to the CRL at http://crl.test/ca.crl"),
    (Revocation(GOOD, method=STAPLED_OCSP), "good, according to the OCSP response the server staples"),
    (Revocation(UNKNOWN, method=OCSP_RESPONDER, reason="the OCSP responder does not know this certificate"),
     "unknown: the OCSP responder does not know this certificate"),
    (Revocation(NOT_TESTED, why="blocked", reason="the OCSP responder was not asked: 10.0.0.7 is private"),
     "not checked: the OCSP responder was not asked: 10.0.0.7 is private"),
])
def test_it_says_the_status_in_one_clause(revocation, words):
    assert revocation_words(revocation) == words


def test_the_published_schema_knows_every_why_and_method():
    revocation = SCHEMA["$defs"]["deployment"]["properties"]["revocation"]["properties"]
    assert revocation["why"]["enum"] == ["", *NOT_CHECKED_WHY]
    assert set(revocation["method"]["enum"]) == {"", STAPLED_OCSP, OCSP_RESPONDER, CRL}
    assert set(revocation["status"]["enum"]) == {GOOD, REVOKED, UNKNOWN, NOT_TESTED}
