"""Alert tasks (default queue): evaluate a finished audit, deliver a webhook and sweep for its due retries,
daily expiries."""

import smtplib

from tlsaudit.alerts import services
from tlsaudit.domain.alerts import CERT_EXPIRING
from workers.celery import app
from workers.tasks.transient import DATABASE_DOWN


@app.task(name="workers.tasks.alerts.evaluate_audit", autoretry_for=(smtplib.SMTPException, OSError, *DATABASE_DOWN),
          retry_backoff=30, max_retries=5)
def evaluate_audit(audit_id: int) -> int:
    """Ask the certificate's CA for its renewal window (ARI; its failures are recorded, never raised),
    store the audit's new events (once each), then email whatever is not emailed yet: a retry after an
    SMTP failure re-sends the mail without creating events twice."""
    services.renewal_info(audit_id)
    services.evaluate(audit_id)
    return services.email_pending(audit_id=audit_id)


@app.task(name="workers.tasks.alerts.deliver_webhook")
def deliver_webhook(delivery_id: int, attempt: int = 1) -> str:
    """POST attempt `attempt` of delivery `delivery_id` unless another task holds it; a retryable failure
    is given its next attempt's time (services.retry_at), which the beat's sweep sends."""
    row = services.attempt_row(delivery_id, attempt)
    if row is None or row.status != row.Status.PENDING or not services.claim_attempt(row):
        return "skipped"  # webhook deleted, this attempt already ran, or another task is sending it
    services.deliver(row)
    return row.status


@app.task(name="workers.tasks.alerts.send_webhook_retries")
def send_webhook_retries() -> int:
    return services.send_due_retries()


@app.task(name="workers.tasks.alerts.check_expiries", autoretry_for=(smtplib.SMTPException, OSError, *DATABASE_DOWN),
          retry_backoff=30, max_retries=5)
def check_expiries() -> int:
    services.check_expiries()
    return services.email_pending(kind=CERT_EXPIRING)
