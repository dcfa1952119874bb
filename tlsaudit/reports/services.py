"""Report lifecycle: queue, claim, build the HTML, store the PDF, fail. Called by views, the
Celery task (workers/tasks/reports.py) and the CLI; nothing here imports Playwright."""

from __future__ import annotations

import re
from datetime import timedelta
from types import SimpleNamespace

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from tlsaudit.core.queue import QueueUnavailable, enqueue, resend_queued
from tlsaudit.core.ratelimits import enforce, times_since
from tlsaudit.orgs.models import Organization
from tlsaudit.reports import presenters
from tlsaudit.reports.detached import detached_audit, detached_site
from tlsaudit.reports.models import Report

RENDER_TASK = "workers.tasks.browser.render_report"
ACTIVE = (Report.Status.QUEUED, Report.Status.RUNNING)
HOUR = timedelta(hours=1)


def queue_report(org, *, site=None, user=None) -> tuple[Report, bool]:
    """The same subject's queued or running report if there is one, else a new one sent on commit, within
    the organization's hourly limit (RateLimited `reports_per_org`: each is a Chromium render on the
    browser queue the digests and probes share, and every role may ask)."""
    kind = Report.Kind.SITE if site else Report.Kind.PORTFOLIO
    with transaction.atomic():
        active = (Report.objects.select_for_update()
                  .filter(organization=org, site=site, kind=kind, status__in=ACTIVE).first())
        if active:
            return active, False
        Organization.objects.select_for_update().filter(pk=org.pk).first()   # two clicks, one last slot
        limit = settings.REPORT_LIMIT_PER_ORG_HOUR
        asked = Report.objects.filter(organization=org).exclude(digest_deliveries__isnull=False)   # digests apart
        enforce(times_since(asked, HOUR), limit=limit, window=HOUR, code="reports_per_org",
                what=f"your organization already asked for {limit} PDF reports")
        report = Report.objects.create(organization=org, site=site, kind=kind,
                                       requested_by=user if user and user.is_authenticated else None)
        enqueue(RENDER_TASK, report.pk, unsent=lambda: fail_unsent(report))
    return report, True


def fail_unsent(report: Report) -> QueueUnavailable:
    """The broker refused the report's message: failed at once, saying so; asking again is one click."""
    message = "The task queue was unavailable, so this report was not made. Please ask for it again in a moment."
    return QueueUnavailable(message, row=fail(report, message))


def resend_queued_reports() -> int:
    """After the broker lost its messages: send the queued reports again (a duplicate loses the claim)."""
    return resend_queued(Report.objects.filter(status=Report.Status.QUEUED), RENDER_TASK)


def claim(report_id: int) -> bool:
    """One atomic UPDATE: whoever flips queued -> running renders the report."""
    return Report.objects.filter(pk=report_id, status=Report.Status.QUEUED).update(status=Report.Status.RUNNING) == 1


def report_html(report: Report) -> str:
    if report.site_id:
        return site_html(report.site)
    return render_with_assets("reports/portfolio_report.html", presenters.portfolio_report(report.organization))


def site_html(site) -> str:
    audit = site.audits.filter(status="done").order_by("-finished_at", "-created_at").first()
    return render_with_assets("reports/site_report.html", presenters.site_report(site, audit))


def render_with_assets(template: str, context: dict) -> str:
    context = {**context, "assets": presenters.inlined_assets(),
               "chart_specs": presenters.chart_specs(context.get("charts", []))}
    return render_to_string(template, context)


def footer_of(report: Report) -> str:
    subject = report.site.display_origin if report.site_id else "portfolio"
    return f"{report.organization.name} · TLS report · {subject}"


def store_pdf(report: Report, pdf: bytes, seconds: float) -> Report:
    report.file.save(report.filename, ContentFile(pdf), save=False)
    report.size, report.pages, report.render_s = len(pdf), count_pages(pdf), round(seconds, 3)
    report.status, report.finished_at, report.error = Report.Status.DONE, timezone.now(), ""
    report.save(update_fields=["file", "size", "pages", "render_s", "status", "finished_at", "error"])
    return report


def fail(report: Report, message: str) -> Report:
    Report.objects.filter(pk=report.pk).update(status=Report.Status.FAILED, error=message[:2000],
                                               finished_at=timezone.now())
    report.refresh_from_db()
    return report


def count_pages(pdf: bytes) -> int:
    """Chromium writes one `/Type /Page` object per page (and `/Type /Pages` for the tree)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


def one_off_html(facts, report, duration_s: float, org_name: str = "TLS Audit") -> str:
    """The site report of an audit that was never stored (`manage.py audit HOST --pdf FILE`)."""
    org = SimpleNamespace(pk=None, name=org_name)
    site = detached_site(facts.host, facts.port, facts.service)
    return render_with_assets("reports/site_report.html",
                              presenters.site_report(site, detached_audit(facts, report, duration_s), org=org))
