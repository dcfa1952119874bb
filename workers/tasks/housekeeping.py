"""Periodic housekeeping, on the default queue so it never waits behind scans."""

from django.conf import settings

from tlsaudit.audits.services import reap_abandoned
from tlsaudit.core.queue import messages_lost
from tlsaudit.loadtests.services import reap_abandoned_runs, resend_queued_runs
from tlsaudit.probes.services import reap_abandoned_probes, resend_queued_probes
from tlsaudit.reports.services import resend_queued_reports
from workers.celery import app


# A pass that waited longer than a few intervals is stale: the next one does the same work, so drop it.
@app.task(name="workers.tasks.housekeeping.reap_abandoned_audits", acks_late=False,
          expires=10 * settings.REAPER_INTERVAL_SECONDS)
def reap_abandoned_audits() -> dict:
    lost = messages_lost()  # one look per pass: did the broker lose every message it held?
    others = resend_queued_runs() + resend_queued_probes() + resend_queued_reports() if lost else 0
    return {**reap_abandoned(lost=lost), "perf_runs_failed": reap_abandoned_runs(),
            "probes_failed": reap_abandoned_probes(), "others_resent": others}
