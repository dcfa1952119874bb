"""Renewal history of a site and the portfolio's renewal forecast (#29 item 3), through real audits stored
the way the audit task stores them: the history page, the API and the portfolio PDF's HTML."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from django.urls import reverse

from tests.api.factories import done_audit
from tests.domain.factories import deployment, rsa_cert
from tests.support.api import client_with, make_key
from tests.support.sites import added_site

pytestmark = pytest.mark.django_db
NOW = datetime.now(timezone.utc).replace(microsecond=0)
LE = "CN=R12,O=Let's Encrypt,C=US"


def served(site, at: datetime, issued: datetime, days: int, fingerprint: str, issuer: str = LE):
    leaf = replace(rsa_cert(issuer=issuer, not_before=issued, not_after=issued + timedelta(days=days)),
                   fingerprint_sha256=fingerprint * 64)
    return done_audit(site, at=at, cert=deployment(leaf))


def test_the_history_page_and_the_api_tell_each_renewal_and_its_margin(login, alice, org_a):
    site = added_site(organization=org_a, hostname="shop.example.net", name="Shop")
    # certbot: renewed with 30 days left, twice; audited every ten days
    issued = [NOW - timedelta(days=170), NOW - timedelta(days=110), NOW - timedelta(days=50)]
    for night in range(0, 171, 10):
        at = NOW - timedelta(days=170) + timedelta(days=night, hours=1)
        current = max(i for i in issued if i <= at)
        served(site, at, current, 90, "abc"[issued.index(current)])
    page = login(alice).get(reverse("monitoring:history", args=[org_a.slug, site.pk])).content.decode()
    card = page.split('data-testid="renewal-history"')[1].split("</section>")[0]
    assert "Renewed automatically, by the evidence: issued by Let&#x27;s Encrypt, an ACME CA; a 90-day lifetime" in card
    assert card.count("<tr>") == 4 and "served now" in card     # header + three certificates
    _, token = make_key(org_a)
    body = client_with(token).get(f"/api/v1/sites/{site.pk}/renewals/").json()
    assert body["automated"] is True and body["flags"] == []
    assert [c["fingerprint"][:1] for c in body["changes"]] == ["a", "b", "c"]
    assert [c["margin_days"] for c in body["changes"]][:2] == [pytest.approx(29.0, abs=9.1)] * 2
    assert body["renewal_due"] is not None


def test_a_hand_renewed_certificate_is_flagged_with_the_cap_and_its_date(login, alice, org_a):
    site = added_site(organization=org_a, hostname="old.example.net", name="Old")
    served(site, NOW, NOW - timedelta(days=30), 397, "d", issuer="CN=Some CA,O=DigiCert Inc,C=US")
    page = login(alice).get(reverse("monitoring:history", args=[org_a.slug, site.pk])).content.decode()
    flags = page.split('data-testid="renewal-flags"')[1].split("</ul>")[0]
    assert "can live at most 100 days, not 397" in flags and "Not shown to renew automatically" in flags
    assert "from 2029-03-15 live at most 47 days" in flags


def test_the_portfolio_forecasts_renewals_on_the_page_the_api_and_the_pdf(login, alice, org_a):
    from tlsaudit.reports import presenters
    from tlsaudit.reports.models import Report
    from tlsaudit.reports.services import report_html

    def site_with(name: str, issued_days_ago: float, lifetime: int):
        site = added_site(organization=org_a, hostname=f"{name}.example.net", name=name)
        served(site, NOW - timedelta(hours=1), NOW - timedelta(days=issued_days_ago), lifetime, name[0])
        return site

    # Due at 67 % of their life: 60.3 days for 90 days, 4.02 for 6 days
    site_with("overdue", 62, 90)            # due 1.7 days ago
    site_with("twice", 70, 90)              # due 9.7 days ago
    site_with("soon", 57, 90)               # due in 3.3 days
    site_with("short", 1, 6)                # due in 3 days
    site_with("later", 10, 90)              # due in 50 days
    page = login(alice).get(reverse("monitoring:portfolio", args=[org_a.slug])).content.decode()
    assert "Renewal forecast: 2 renewals due next week, 2 overdue" in page
    _, token = make_key(org_a)
    renewals = client_with(token).get("/api/v1/portfolio/").json()["renewals"]
    assert renewals == {"overdue": 2, "due_next_week": 2, "due_next_30_days": 2,
                        "summary": "2 renewals due next week, 2 overdue"}
    html = report_html(Report.objects.create(organization=org_a, kind=Report.Kind.PORTFOLIO))
    assert "Renewal forecast: 2 renewals due next week, 2 overdue" in html
    assert html.count('<span class="bad">overdue</span>') == 2
    assert presenters.portfolio_report(org_a)["forecast"].next_month == 2
