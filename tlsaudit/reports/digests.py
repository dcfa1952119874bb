"""Scheduled PDF digests: each organization with a weekly or monthly ReportSchedule gets, once per
period, a portfolio Report emailed as an attachment to each of its digest recipients.

Flow (the beat entry "send due report digests" runs daily, see migrations/0002_digests.py):
1. start_due(): for each schedule whose current period ("2026-W47", "2026-11") differs from
   last_sent_period, claim the period with one atomic UPDATE (two beats or a retried task claim it
   once), create a portfolio Report and one DigestDelivery per recipient (unique per org, period and
   recipient), then on commit queue the same render task the UI uses, with the deliveries linked.
2. The render task (browser queue, where Chromium lives) stores the PDF on the Report row.
3. deliver(): one email per recipient with the PDF attached. An SMTP failure marks the delivery
   failed with its error and raises so the Celery task retries with backoff; a message that cannot
   be built (a header that cannot be encoded) is marked failed with the reason and logged, not
   retried. The Report row and its file are kept whatever happens to the email.
Nothing here imports Playwright or the engines.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core import mail
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from tlsaudit.core.emails import SEND_ERRORS, failure_reason, templated_message
from tlsaudit.core.queue import enqueue, follow_up
from tlsaudit.core.ratelimits import RateLimited
from tlsaudit.domain.ratelimit import in_words
from tlsaudit.reports import services
from tlsaudit.reports.models import DigestDelivery, Report, ReportSchedule

DELIVER_TASK = "workers.tasks.digests.deliver_digest"
SMTP_ERRORS = SEND_ERRORS
logger = logging.getLogger(__name__)


class ReportNotReady(Exception):
    """The digest's PDF is still queued or rendering: try the delivery again later."""


def period_key(frequency: str, now: datetime) -> str:
    """The period `now` falls in: ISO week "2026-W47" for weekly, "2026-11" for monthly, "" when off."""
    now = now.astimezone(UTC) if timezone.is_aware(now) else now
    if frequency == ReportSchedule.Frequency.WEEKLY:
        year, week, _ = now.isocalendar()
        return f"{year}-W{week:02d}"
    if frequency == ReportSchedule.Frequency.MONTHLY:
        return f"{now:%Y-%m}"
    return ""


def is_due(schedule: ReportSchedule, now: datetime) -> bool:
    period = period_key(schedule.frequency, now)
    return bool(period and schedule.recipients and schedule.last_sent_period != period)


def start_due(now: datetime | None = None) -> list[Report]:
    """Start this period's digest of every due organization; returns the Reports created."""
    now = now or timezone.now()
    started = []
    schedules = (ReportSchedule.objects.exclude(frequency=ReportSchedule.Frequency.OFF)
                 .select_related("organization"))
    for schedule in schedules:
        if is_due(schedule, now):
            report = start(schedule, period_key(schedule.frequency, now))
            if report is not None:
                started.append(report)
    return started


class SentTooRecently(RateLimited):
    """A second "Send now" within DIGEST_SEND_NOW_MINUTES (API: 429)."""


def send_now(schedule: ReportSchedule, now: datetime | None = None) -> Report:
    """A digest to the schedule's recipients at once, whatever its frequency (off included): the same
    PDF and email, its period "now-<minute>", so it neither counts as nor blocks the week's or month's.
    At most one per DIGEST_SEND_NOW_MINUTES (claimed by one UPDATE, in the same transaction as the digest,
    so a failure leaves no wait behind) and DIGEST_SEND_NOW_PER_DAY per organization."""
    now = now or timezone.now()
    if not schedule.recipients:
        raise ValueError("Add at least one recipient first.")
    window = timedelta(minutes=settings.DIGEST_SEND_NOW_MINUTES)
    sent_today = (DigestDelivery.objects.filter(organization_id=schedule.organization_id, period__startswith="now-",
                                                created_at__gt=now - timedelta(days=1))
                  .values("report_id").distinct().count())
    if sent_today >= settings.DIGEST_SEND_NOW_PER_DAY:
        raise SentTooRecently("digests_per_org", f"{sent_today} digests were already sent now in the last 24 hours, "
                              f"the most a day; the weekly or monthly one goes as scheduled.", 3600)
    with transaction.atomic():
        claimed = (ReportSchedule.objects.filter(pk=schedule.pk)
                   .filter(Q(sent_now_at__isnull=True) | Q(sent_now_at__lte=now - window)).update(sent_now_at=now))
        if not claimed:
            last = ReportSchedule.objects.values_list("sent_now_at", flat=True).get(pk=schedule.pk)
            wait = max(int((last + window - now).total_seconds()) + 1, 1)
            raise SentTooRecently("digests_per_org", "A digest was sent now less than "
                                  f"{in_words(int(window.total_seconds()))} ago; the next can be sent in "
                                  f"{in_words(wait)}.", wait)
        return start(schedule, f"now-{now:%Y%m%dT%H%M}", claim=False)


def start(schedule: ReportSchedule, period: str, *, claim: bool = True) -> Report | None:
    with transaction.atomic():
        if claim and not (ReportSchedule.objects.filter(pk=schedule.pk).exclude(last_sent_period=period)
                          .update(last_sent_period=period)):
            return None  # another run started this period's digest
        sent = set(DigestDelivery.objects.filter(organization_id=schedule.organization_id, period=period)
                   .values_list("recipient", flat=True))
        recipients = [r for r in dict.fromkeys(a.lower() for a in schedule.recipients) if r not in sent]
        if not recipients:
            return None
        report = Report.objects.create(organization=schedule.organization, kind=Report.Kind.PORTFOLIO)
        deliveries = [DigestDelivery.objects.create(organization_id=schedule.organization_id, schedule=schedule,
                                                    report=report, period=period, recipient=to)
                      for to in recipients]
        # Render on the browser queue (same task as the UI's reports); each delivery runs once it is done.
        enqueue(services.RENDER_TASK, report.pk, link=[follow_up(DELIVER_TASK, d.pk) for d in deliveries],
                unsent=lambda: services.fail_unsent(report))
    return report


def deliver(delivery_id: int) -> str:
    """Email one delivery. "sent" / "skipped"; raises ReportNotReady or the SMTP error (after
    recording it on the row) so that the task retries."""
    failure = None
    with transaction.atomic():
        row = (DigestDelivery.objects.select_for_update(of=("self",))
               .select_related("report", "organization").filter(pk=delivery_id).first())
        if row is None or row.status == DigestDelivery.Status.SENT:
            return "skipped"  # deleted with its organization, or already delivered
        report = row.report
        if report.status == Report.Status.FAILED:
            row.status, row.error = DigestDelivery.Status.FAILED, f"The PDF was not rendered: {report.error}"[:2000]
            row.save(update_fields=["status", "error", "updated_at"])
            return "failed"
        if report.status != Report.Status.DONE:
            raise ReportNotReady(f"report {report.pk} is {report.status}")
        row.attempts += 1
        try:
            message(row).send()
        except SMTP_ERRORS as exc:
            row.status, row.error = DigestDelivery.Status.FAILED, failure_reason(exc)
            failure = exc
        except ValueError as exc:  # the message cannot be built (a header, an address): a retry would fail the same
            logger.error("digest delivery %s cannot be emailed: %s", row.pk, failure_reason(exc))
            row.status, row.error = DigestDelivery.Status.FAILED, failure_reason(exc)
            row.save(update_fields=["status", "error", "attempts", "updated_at"])
            return "failed"
        else:
            row.status, row.error = DigestDelivery.Status.SENT, ""
        row.save(update_fields=["status", "error", "attempts", "updated_at"])
    if failure is not None:
        raise failure
    return "sent"


def message(row: DigestDelivery) -> mail.EmailMultiAlternatives:
    org, report = row.organization, row.report
    portfolio = settings.SITE_URL + reverse("monitoring:portfolio", args=[org.slug])
    manage = settings.SITE_URL + reverse("reports:digests", args=[org.slug])
    context = {"org": org, "report": report, "period": row.period, "kind": period_kind(row.period),
               "portfolio_link": portfolio, "digests_link": manage}
    email = templated_message("digest", row.recipient, context)
    with report.file.open("rb") as pdf:
        email.attach(report.filename, pdf.read(), "application/pdf")
    return email


def period_kind(period: str) -> str:
    """ "weekly", "monthly" or "requested" (a "Send now"), for the email's words."""
    if period.startswith("now-"):
        return "requested"
    return "weekly" if "W" in period else "monthly"
