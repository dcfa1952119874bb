"""Digest tasks (default queue): start the due weekly / monthly digests, email one delivery."""

import smtplib

from tlsaudit.reports import digests
from workers.celery import app

DELIVER_MAX_RETRIES = 6
NOT_READY_RETRY_S = 30


@app.task(name="workers.tasks.digests.send_due_digests")
def send_due_digests() -> int:
    """Daily (beat entry "send due report digests"): once per period and organization."""
    return len(digests.start_due())


@app.task(name="workers.tasks.digests.deliver_digest", bind=True, autoretry_for=(smtplib.SMTPException, OSError),
          retry_backoff=30, retry_backoff_max=3600, max_retries=DELIVER_MAX_RETRIES)
def deliver_digest(self, delivery_id: int) -> str:
    """Email one recipient's digest; an SMTP failure is recorded on the row (failed + error), then
    retried with backoff. A PDF still rendering is waited for."""
    try:
        return digests.deliver(delivery_id)
    except digests.ReportNotReady as exc:
        raise self.retry(exc=exc, countdown=NOT_READY_RETRY_S)
