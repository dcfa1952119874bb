"""The report page reads the audit's stored JSON, so an audit whose findings/suites/certificates rows
were never written (seeded history older than a week) renders exactly like one that has them."""

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db
# What differs between two responses of the same page: the masked CSRF token, CSP nonces.
PER_RESPONSE = re.compile(r'((name="csrfmiddlewaretoken" value|nonce)="[^"]*")|("X-CSRFToken": "[^"]*")')


def comparable(response) -> str:
    assert response.status_code == 200
    return PER_RESPONSE.sub("", response.content.decode())


def test_an_audit_without_its_rows_renders_the_same_report(login, alice, site_a, graded_audit):
    audit = graded_audit(site_a, protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"), hsts_max_age=None)
    url = reverse("audits:detail", args=[site_a.organization.slug, site_a.pk, audit.pk])
    client = login(alice)
    before = comparable(client.get(url))

    for rows in (audit.findings, audit.suites, audit.certificates):
        rows.all().delete()

    after = comparable(client.get(url))
    assert after == before
    assert "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA" in after and "HSTS" in after


def test_findings_and_suites_from_json_are_the_stored_rows(site_a, graded_audit):
    from tlsaudit.audits.presenters import present_report

    audit = graded_audit(site_a, protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3"), heartbleed="bad")
    shown = present_report(audit)
    findings = [f for group in shown["finding_groups"] for f in group["findings"]]
    key = ("finding_id", "severity", "status", "title", "explanation", "evidence", "reason")
    assert sorted(tuple(getattr(f, k) for k in key) for f in findings) == \
        sorted(audit.findings.values_list(*key))
    assert shown["failing_count"] == audit.findings.filter(status="fail").count() > 0
    columns = ("protocol", "name", "key_exchange", "bits", "kx_bits", "forward_secret", "aead", "strength", "preference")
    suites = [s for group in shown["suites_by_protocol"] for s in group["suites"]]
    assert sorted(tuple(getattr(s, c) for c in columns) for s in suites) == \
        sorted(audit.suites.values_list(*columns))
