"""Issue 17 item 9: no report shows a Python repr, says one thing six times, or sends a user whose
own CA vouches for an expired certificate to "a publicly trusted CA".

The audit below is stored as audits made before the fix were: its trust results carry sslyze's
messages as is (`<Certificate(subject=<Name(...)>, ...)>`, "candidates exhausted"). Every way out
is read: the page, the PDF (its HTML and the printed file), the API's JSON and CSV, the CLI's text
and JSON."""

from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace

import pytest

from tests.domain.factories import NOW, deployment, rsa_cert
from tests.domain.test_trustwords import EXPIRED, UNKNOWN
from tests.support.api import client_with, make_key
from tests.support.audits import done_audit
from tests.support.pdf import pdf_text
from tlsaudit.audits.management.commands.audit import cli_json
from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.scanfacts import ScanFacts, TrustResult
from tlsaudit.domain.trustwords import has_repr
from tlsaudit.reports import services

pytestmark = pytest.mark.django_db


def legacy_expired_deployment():
    """An expired leaf from the organization's own CA: every store stopped at the dates."""
    dep = deployment(rsa_cert(not_after=NOW - timedelta(days=31)), trusted=False, error=EXPIRED, custom_ca=False)
    return replace(dep, trust=tuple(TrustResult(t.store, False, EXPIRED) for t in dep.trust))


def trusted_by_custom_ca_only():
    return deployment(rsa_cert(), trusted=False, error=UNKNOWN, custom_ca=True)


def every_report_of(audit, site, org) -> dict[str, str]:
    facts = ScanFacts.from_dict(audit.facts)
    report = build_report(facts, audit.mozilla_raw)
    api = client_with(make_key(org)[1])
    return {
        "CLI text": render_text(facts, report, 0.4),
        "CLI JSON": str(cli_json(SimpleNamespace(facts=facts, duration_s=0.4), report)),
        "API JSON": api.get(f"/api/v1/audits/{audit.pk}/").content.decode(),
        "API CSV": b"".join(api.get("/api/v1/audits.csv").streaming_content).decode(),
        "PDF HTML": services.site_html(site),
    }


@pytest.mark.parametrize("dep", [legacy_expired_deployment(), trusted_by_custom_ca_only()],
                         ids=["expired, own CA", "trusted by own CA only"])
def test_no_report_shows_a_repr_or_the_verifier_wall(login, alice, org_a, site_a, dep):
    audit = done_audit(site_a, cert=dep, trust_use_custom_ca=True)
    reports = every_report_of(audit, site_a, org_a)
    reports["page"] = login(alice).get(audit.get_absolute_url()).content.decode()
    for name, text in reports.items():
        assert not has_repr(text.replace("&lt;", "<")), name
        assert "candidates exhausted" not in text, name
        assert "validation failed:" not in text, name


def test_an_expired_certificate_of_the_own_ca_is_renewed_there_and_explained_once(login, alice, org_a, site_a):
    dep = deployment(rsa_cert(not_after=NOW - timedelta(days=31)), trusted=False, error=UNKNOWN, custom_ca=False)
    # As the engine now stores it: the custom CA refused for the dates alone (it verifies inside them).
    dep = replace(dep, trust=tuple(
        TrustResult("Custom CA", False, "a certificate is outside its validity dates", dates_only=True)
        if t.store == "Custom CA" else t for t in dep.trust))
    audit = done_audit(site_a, cert=dep, trust_use_custom_ca=True)
    assert [t["rule_id"] for t in audit.report["grade"]["trust_issues"]] == ["trust.expired"]
    page = login(alice).get(audit.get_absolute_url()).content.decode()
    assert "publicly trusted CA" not in page and "from a public CA" not in page
    assert "your own CA" in page
    # Said once, in the finding; the grade's trust line and the recommendation's why refer to it.
    expired_on = f"expired on {(NOW - timedelta(days=31)):%Y-%m-%d}"
    assert page.count(expired_on) == 1 and page.count("expired on") == 1
    assert "The certificate has expired" in page and "it has expired" in page
    assert "Fixes: the T grade; Certificate expired." in page


def test_the_printed_pdf_has_no_repr(org_a, site_a, no_chromium_left):
    from workers.reports.pdf import render

    done_audit(site_a, cert=legacy_expired_deployment(), trust_use_custom_ca=True)
    text = pdf_text(render(services.site_html(site_a), timeout_s=30, footer="test").pdf)
    assert "Certificate" in text
    assert not has_repr(text) and "candidates exhausted" not in text
