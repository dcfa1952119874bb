"""What a PDF report shows: the dashboard's numbers for a site (grade, findings failing first,
recommendations, certificate, grade history) and the portfolio of an organization, worst first,
white-labelled with the organization's name and logo."""

import base64
import time
import unicodedata

import pytest

from tests.support.audits import done_audit
from tests.support.pdf import ink_of_first_page, pdf_pages, pdf_text
from tests.support.sites import added_site
from tlsaudit.reports import presenters, services
from tlsaudit.reports.models import Report, ReportBranding
from workers.reports.pdf import render

pytestmark = pytest.mark.django_db
RED_SQUARE = "data:image/svg+xml;base64," + base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><rect width="120" height="40" fill="#d00"/>'
    b'</svg>').decode()
OLD_SERVER = dict(protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"), hsts_max_age=None)


def flat(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def render_report(report: Report):
    rendered = render(services.report_html(report), timeout_s=30, footer=services.footer_of(report))
    return rendered.pdf, rendered.seconds


def test_a_site_report_shows_the_dashboards_grade_findings_and_recommendations(org_a, site_a, tmp_path,
                                                                              no_chromium_left):
    # Given a site audited twice (A+ then B with TLS 1.0/1.1 on) and Agency A's logo
    done_audit(site_a)
    audit = done_audit(site_a, **OLD_SERVER)
    ReportBranding.objects.create(organization=org_a, logo_data_uri=RED_SQUARE, accent_color="#123456")
    report = Report.objects.create(organization=org_a, site=site_a, kind=Report.Kind.SITE)

    # When its report is printed
    pdf, seconds = render_report(report)

    # Then the PDF says what the dashboard says
    text = flat(pdf_text(pdf))
    failing = audit.findings.filter(status="fail").order_by("finding_id").first()
    recommendation = audit.report["recommendations"][0]
    assert audit.grade == "B" and failing is not None
    for expected in ("Agency A", "shop.example.com", f"score {audit.score}/100", flat(failing.title),
                     flat(recommendation["title"]), "Grade history", "Mozilla server-side TLS profiles",
                     "Certificate", "Recommendations"):
        assert expected in text, expected
    assert f"Grade {audit.grade}" in text
    # ... failing findings before passing ones
    assert text.index(flat(failing.title)) < text.index("nothing failing") or "nothing failing" not in text
    # ... with its charts drawn (score breakdown and history) and the logo in colour on page 1
    non_white, coloured = ink_of_first_page(pdf, tmp_path)
    assert non_white > 2000 and coloured > 500
    assert 10_000 < len(pdf) < 5_000_000
    assert pdf_pages(pdf) == services.count_pages(pdf) >= 2
    print(f"site report: {len(pdf)} bytes, {pdf_pages(pdf)} pages, {seconds:.2f} s")


def test_the_report_has_the_same_numbers_as_the_dashboard(login, alice, site_a):
    from django.urls import reverse
    from django.utils.html import escape

    audit = done_audit(site_a, **OLD_SERVER)
    page = login(alice).get(reverse("audits:detail", args=[site_a.organization.slug, site_a.pk, audit.pk]))
    html = services.report_html(Report(organization=site_a.organization, site=site_a, kind=Report.Kind.SITE))
    for r in audit.report["recommendations"]:
        assert escape(r["title"]) in page.content.decode() and escape(r["title"]) in html
    for grade_bit in (f"<b>{audit.score}</b>", f"grade-{audit.grade}"):
        assert grade_bit in html
    assert "<script src" not in html and "<link" not in html and "http://" not in html.split("<script>")[0]


def test_the_portfolio_lists_every_site_worst_first(org_a, alice, tmp_path, no_chromium_left):

    best = added_site(organization=org_a, hostname="best.example.com")
    worst = added_site(organization=org_a, hostname="worst.example.com")
    middle = added_site(organization=org_a, hostname="middle.example.com")
    done_audit(best)
    done_audit(worst, heartbleed="bad")
    done_audit(middle, **OLD_SERVER)
    report = Report.objects.create(organization=org_a, kind=Report.Kind.PORTFOLIO)

    pdf, seconds = render_report(report)

    text = flat(pdf_text(pdf))
    assert "Agency A" in text and "3 sites" in text
    positions = [text.index(h) for h in ("worst.example.com", "middle.example.com", "best.example.com")]
    assert positions == sorted(positions), text
    assert "F" in text and "A+" in text
    non_white, _ = ink_of_first_page(pdf, tmp_path)
    assert non_white > 1000
    assert 10_000 < len(pdf) < 5_000_000
    print(f"portfolio report: {len(pdf)} bytes, {pdf_pages(pdf)} pages, {seconds:.2f} s")


def test_a_site_without_a_finished_audit_still_gets_a_report(org_a, site_a, no_chromium_left):
    report = Report.objects.create(organization=org_a, site=site_a, kind=Report.Kind.SITE)
    pdf, _ = render_report(report)
    assert "no finished audit yet" in flat(pdf_text(pdf))


def test_the_history_chart_follows_the_done_audits_in_order(site_a):
    done_audit(site_a, **OLD_SERVER)
    time.sleep(0.01)
    done_audit(site_a)
    chart = presenters.history_chart(site_a)
    assert chart["datasets"][0]["point_labels"] == ["B", "A+"]
    assert [row[1] for row in chart["table"]["rows"]] == ["B", "A+"]


def test_the_site_pdf_has_the_pages_cipher_suites_and_configuration_snippets(login, alice, org_a, site_a,
                                                                            no_chromium_left):
    """Issue 17 item 10: the PDF lacked the cipher-suite table and the snippets the page shows."""
    from tlsaudit.audits.presenters import present_report

    audit = done_audit(site_a, **OLD_SERVER)
    shown = present_report(audit)
    suites = [s.name for group in shown["suites_by_protocol"] for s in group["suites"]]
    snippets = dict(shown["snippets"])
    assert suites and "nginx" in snippets
    page = login(alice).get(audit.get_absolute_url()).content.decode()
    assert all(name in page for name in suites)

    text = flat(pdf_text(render_report(Report.objects.create(organization=org_a, site=site_a,
                                                             kind=Report.Kind.SITE))[0]))
    assert "Cipher suites" in text and "Configuration for the intermediate profile" in text
    squeezed = text.replace(" ", "")       # pypdf may split a long suite name where the cell wraps it
    for name in suites:
        assert name in squeezed, name
    first_line = next(line for line in snippets["nginx"].splitlines() if line.strip() and not line.startswith("#"))
    assert flat(first_line).replace(" ", "") in squeezed
