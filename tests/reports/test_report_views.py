"""Asking for a PDF from the site page or the organization, watching it being made (htmx polling),
downloading it: a real worker on the `browser` queue prints it in Chromium. Outsiders get 404."""


import pytest
from django.urls import reverse

from tests.support.audits import done_audit
from tests.support.pdf import pdf_text
from tests.support.waiting import wait_finished as wait_until_finished
from tlsaudit.reports.models import Report

pytestmark = pytest.mark.django_db(transaction=True)


def test_alice_asks_for_a_pdf_a_worker_prints_it_and_bob_downloads_it(login, alice, bob, site_a, start_worker_on,
                                                                     no_chromium_left):
    # Given a finished audit, and the site page offering the PDF
    audit = done_audit(site_a, protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3"))
    org = site_a.organization.slug
    client = login(alice)
    page = client.get(reverse("audits:detail", args=[org, site_a.pk, audit.pk])).content.decode()
    assert reverse("reports:request_site", args=[org, site_a.pk]) in page

    # When Alice asks for it, the status page polls while it is queued
    response = client.post(reverse("reports:request_site", args=[org, site_a.pk]))
    report = Report.objects.get()
    assert response["Location"] == report.get_absolute_url()
    assert (report.status, report.kind, report.requested_by) == ("queued", "site", alice)
    partial = client.get(report.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<section id="report-status"') and 'hx-trigger="every 2s"' in partial

    # Then a browser worker prints it, and the finished status stops polling
    start_worker_on(("browser",))
    report = wait_until_finished(report)
    assert report.status == "done", report.error
    assert 10_000 < report.size < 5_000_000 and report.pages >= 2
    partial = client.get(report.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in partial and "Download PDF" in partial

    # And Bob, a viewer, downloads it
    client.force_login(bob)
    download = client.get(reverse("reports:download", args=[org, report.pk]))
    assert download.status_code == 200 and download["Content-Type"] == "application/pdf"
    assert "attachment" in download["Content-Disposition"] and "shop.example.com" in download["Content-Disposition"]
    pdf = b"".join(download.streaming_content)
    assert pdf.startswith(b"%PDF-") and len(pdf) == report.size
    assert "shop.example.com" in pdf_text(pdf) and f"Grade {audit.grade}" in pdf_text(pdf)


def test_a_portfolio_report_is_printed_by_the_worker(login, alice, site_a, start_worker_on, no_chromium_left):
    done_audit(site_a)
    client = login(alice)
    client.post(reverse("reports:request_portfolio", args=[site_a.organization.slug]))
    report = Report.objects.get()
    assert report.kind == "portfolio" and report.site is None
    start_worker_on(("browser",))
    report = wait_until_finished(report)
    assert report.status == "done", report.error
    with report.file.open("rb") as handle:
        text = pdf_text(handle.read())
    assert "Agency A" in text and "shop.example.com" in text


def test_a_second_click_returns_the_report_being_made(login, alice, site_a):
    client = login(alice)
    url = reverse("reports:request_site", args=[site_a.organization.slug, site_a.pk])
    first = client.post(url)
    second = client.post(url)
    assert first["Location"] == second["Location"] and Report.objects.count() == 1


def test_outsiders_get_404_and_viewers_get_the_pdf_of_what_they_see(login, bob, charlie, site_a, site_b):
    org = site_a.organization.slug
    report = Report.objects.create(organization=site_a.organization, site=site_a, kind="site", status="done")
    client = login(charlie)
    assert client.get(reverse("reports:detail", args=[org, report.pk])).status_code == 404
    assert client.get(reverse("reports:download", args=[org, report.pk])).status_code == 404
    assert client.post(reverse("reports:request_site", args=[org, site_a.pk])).status_code == 404
    assert client.post(reverse("reports:request_portfolio", args=[org])).status_code == 404
    # His own organization in the URL, A's report id: still 404.
    own = site_b.organization.slug
    assert client.get(reverse("reports:download", args=[own, report.pk])).status_code == 404
    assert not Report.objects.exclude(pk=report.pk).exists()
    # #37 item 11: a viewer (the agency's client) could open a known PDF URL but had no button to get one.
    # The PDF shows what a viewer sees anyway: they ask for it and download it like anyone in the organization.
    client.force_login(bob)
    assert client.get(reverse("reports:detail", args=[org, report.pk])).status_code == 200
    # Not refused (403) for the role: the file of this hand-made row does not exist, so it answers "gone".
    assert client.get(reverse("reports:download", args=[org, report.pk])).status_code == 404
    asked = client.post(reverse("reports:request_site", args=[org, site_a.pk]))
    assert asked.status_code == 302 and Report.objects.filter(requested_by=bob, site=site_a).count() == 1
    portfolio = client.get(reverse("monitoring:portfolio", args=[org])).content.decode()
    assert reverse("reports:request_portfolio", args=[org]) in portfolio


def test_pdf_reports_are_limited_per_organization_per_hour_for_every_role(login, bob, site_a, settings):
    """Every role may ask for a PDF, and each is a Chromium render on the queue digests and probes share: an
    organization asks for at most REPORT_LIMIT_PER_ORG_HOUR an hour (digests do not count)."""
    from tests.support.api import client_with, make_key
    from tlsaudit.api import keys
    from tlsaudit.reports.models import DigestDelivery

    settings.REPORT_LIMIT_PER_ORG_HOUR = 2
    org = site_a.organization
    digest = Report.objects.create(organization=org, kind="portfolio", status="done")
    DigestDelivery.objects.create(organization=org, report=digest, period="2026-W48", recipient="a@b.test")
    Report.objects.create(organization=org, kind="portfolio", status="done")
    client = login(bob)
    assert client.post(reverse("reports:request_site", args=[org.slug, site_a.pk])).status_code == 302
    refused = client.post(reverse("reports:request_portfolio", args=[org.slug]), follow=True)
    assert "Rate limit: your organization already asked for 2 PDF reports in the last hour." in \
        refused.content.decode()
    api = client_with(make_key(org, keys.READ_WRITE)[1])
    answer = api.post("/api/v1/reports/", {"kind": "portfolio"}, format="json")
    assert answer.status_code == 429 and answer.json()["error"]["code"] == "reports_per_org"
    assert Report.objects.filter(organization=org).count() == 3
