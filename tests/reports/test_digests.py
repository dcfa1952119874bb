"""Scheduled PDF digests: a real worker renders the portfolio PDF in Chromium and a real local SMTP
server (aiosmtpd) receives it as an attachment; a closed SMTP port leaves a failed delivery and the
report intact; a period is sent once."""

import email
import time
from datetime import UTC, datetime
from email import policy

import pytest
from django.core.exceptions import ValidationError
from django_celery_beat.models import PeriodicTask

from tests.support.audits import done_audit
from tests.support.daemons import free_port
from tlsaudit.reports import digests
from tlsaudit.reports.models import DigestDelivery, Report, ReportSchedule
from workers.tasks.digests import deliver_digest, send_due_digests

RECIPIENTS = ["client@customer.test", "ops@agency-a.test"]


def schedule_of(org, frequency="weekly", recipients=RECIPIENTS):
    return ReportSchedule.objects.create(organization=org, frequency=frequency, recipients=list(recipients))


def wait_for(predicate, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError("timed out waiting: " + ", ".join(
        f"{d.recipient}={d.status} {d.error!r} (report {d.report.status} {d.report.error!r})"
        for d in DigestDelivery.objects.select_related("report")))


# -- periods and claiming (no worker: on_commit never fires inside these tests' transaction) --

def test_period_keys():
    assert digests.period_key("weekly", datetime(2026, 11, 16, 6, tzinfo=UTC)) == "2026-W47"
    assert digests.period_key("weekly", datetime(2026, 11, 22, 23, 59, tzinfo=UTC)) == "2026-W47"
    assert digests.period_key("weekly", datetime(2026, 11, 23, 0, 1, tzinfo=UTC)) == "2026-W48"
    assert digests.period_key("weekly", datetime(2027, 1, 1, 6, tzinfo=UTC)) == "2026-W53"  # ISO year
    assert digests.period_key("monthly", datetime(2026, 11, 30, 6, tzinfo=UTC)) == "2026-11"
    assert digests.period_key("off", datetime(2026, 11, 30, 6, tzinfo=UTC)) == ""


@pytest.mark.django_db
def test_a_weekly_org_is_due_once_per_iso_week(org_a, org_b):
    schedule_of(org_a, "weekly")
    schedule_of(org_b, "off")
    days = [datetime(2026, 11, day, 6, tzinfo=UTC) for day in range(16, 23)]  # Monday .. Sunday of W47
    started = [len(digests.start_due(now)) for now in days]
    assert started == [1, 0, 0, 0, 0, 0, 0]
    assert digests.start_due(datetime(2026, 11, 23, 6, tzinfo=UTC))[0].organization == org_a  # W48
    assert ReportSchedule.objects.get(organization=org_a).last_sent_period == "2026-W48"
    assert sorted(set(DigestDelivery.objects.values_list("period", flat=True))) == ["2026-W47", "2026-W48"]
    assert not Report.objects.filter(organization=org_b).exists()


@pytest.mark.django_db
def test_a_monthly_org_is_due_once_per_month(org_a):
    schedule_of(org_a, "monthly")
    assert len(digests.start_due(datetime(2026, 11, 1, 6, tzinfo=UTC))) == 1
    assert len(digests.start_due(datetime(2026, 11, 30, 6, tzinfo=UTC))) == 0
    assert len(digests.start_due(datetime(2026, 12, 1, 6, tzinfo=UTC))) == 1


@pytest.mark.django_db
def test_running_twice_in_the_same_period_starts_one_digest(org_a):
    schedule_of(org_a)
    assert send_due_digests() == 1
    assert send_due_digests() == 0
    report = Report.objects.get(organization=org_a)
    assert report.kind == Report.Kind.PORTFOLIO
    assert sorted(DigestDelivery.objects.filter(report=report).values_list("recipient", flat=True)) == RECIPIENTS
    # Even if the period marker is lost, a recipient already has this period's delivery: nothing new.
    ReportSchedule.objects.filter(organization=org_a).update(last_sent_period="")
    assert send_due_digests() == 0
    assert DigestDelivery.objects.count() == 2


@pytest.mark.django_db
def test_recipients_are_validated(org_a):
    schedule = ReportSchedule(organization=org_a, frequency="weekly", recipients=[f"r{i}@x.test" for i in range(21)])
    with pytest.raises(ValidationError, match="At most 20"):
        schedule.full_clean()
    schedule.recipients = ["not an address"]
    with pytest.raises(ValidationError):
        schedule.full_clean()
    schedule.recipients = ["a@x.test", "A@x.test"]
    with pytest.raises(ValidationError):
        schedule.full_clean()
    schedule.recipients = RECIPIENTS
    schedule.full_clean()


@pytest.mark.django_db
def test_the_beat_entry_runs_daily():
    # The entry comes from a data migration; a transactional test run before this one flushed it, so the
    # migration's own function (idempotent) puts it back first: what a fresh database holds.
    from importlib import import_module

    from django.apps import apps

    import_module("tlsaudit.reports.migrations.0002_digests").add_entry(apps, None)
    entry = PeriodicTask.objects.get(task="workers.tasks.digests.send_due_digests")
    assert entry.enabled and entry.crontab is not None
    assert (entry.crontab.minute, entry.crontab.hour, entry.crontab.day_of_week) == ("0", "6", "*")
    assert entry.queue in (None, "", "default")


# -- end to end: real worker, real Chromium, real SMTP ----------------------------------------

@pytest.mark.django_db(transaction=True)
def test_the_digest_arrives_with_the_pdf_attached(org_a, site_a, smtp_server, start_worker_on,  # noqa: F811
                                                  settings, no_chromium_left):
    settings.SITE_URL = "http://127.0.0.1:8000"
    done_audit(site_a)
    schedule_of(org_a)
    assert send_due_digests() == 1
    assert send_due_digests() == 0  # same period: once
    start_worker_on(("default", "browser"))
    wait_for(lambda: DigestDelivery.objects.filter(status="sent").count() == 2)

    assert len(smtp_server.envelopes) == 2
    assert sorted(r for e in smtp_server.envelopes for r in e.rcpt_tos) == RECIPIENTS
    report = Report.objects.get(organization=org_a)
    assert report.status == Report.Status.DONE and report.kind == Report.Kind.PORTFOLIO
    message = email.message_from_bytes(smtp_server.envelopes[0].content, policy=policy.default)
    period = DigestDelivery.objects.first().period
    assert message["Subject"] == f"Weekly TLS report for Agency A ({period})"
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    link = f"http://127.0.0.1:8000/o/{org_a.slug}/portfolio/"
    assert link in text and f'href="{link}"' in html
    attachments = list(message.iter_attachments())
    assert len(attachments) == 1
    pdf = attachments[0].get_content()
    assert attachments[0].get_content_type() == "application/pdf"
    assert attachments[0].get_filename() == report.filename
    assert pdf.startswith(b"%PDF-") and len(pdf) == report.size

    # A redelivered task does not email twice.
    assert deliver_digest.apply(args=[DigestDelivery.objects.first().pk]).get() == "skipped"
    assert len(smtp_server.envelopes) == 2


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_smtp_server_fails_the_delivery_and_keeps_the_report(org_a, site_a, start_worker_on,
                                                                            settings, no_chromium_left):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nothing listens there
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 5
    done_audit(site_a)
    schedule_of(org_a, recipients=["client@customer.test"])
    assert send_due_digests() == 1
    start_worker_on(("default", "browser"))
    wait_for(lambda: DigestDelivery.objects.filter(status="failed").exists())

    delivery = DigestDelivery.objects.get()
    assert delivery.attempts >= 1
    assert "refused" in delivery.error.lower() or "Errno" in delivery.error
    report = Report.objects.get(pk=delivery.report_id)
    assert report.status == Report.Status.DONE
    with report.file.open("rb") as stored:
        assert stored.read(5) == b"%PDF-"
    # The task retries with backoff (it is not given up after one failure).
    assert deliver_digest.autoretry_for and deliver_digest.retry_backoff and deliver_digest.max_retries >= 3
