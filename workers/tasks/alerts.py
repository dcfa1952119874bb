"""Alert tasks (default queue): evaluate a finished audit, deliver a webhook, daily expiries."""

import smtplib

from tlsaudit.alerts import services
from tlsaudit.domain.alerts import CERT_EXPIRING
from workers.celery import app
from workers.tasks.transient import DATABASE_DOWN

WEBHOOK_MAX_ATTEMPTS = 5


class RetryableDelivery(Exception):
    """A 5xx, a timeout or a connection error: worth another attempt later."""


@app.task(name="workers.tasks.alerts.evaluate_audit", autoretry_for=(smtplib.SMTPException, OSError, *DATABASE_DOWN),
          retry_backoff=30, max_retries=5)
def evaluate_audit(audit_id: int) -> int:
    """Ask the certificate's CA for its renewal window (ARI; its failures are recorded, never raised),
    store the audit's new events (once each), then email whatever is not emailed yet: a retry after an
    SMTP failure re-sends the mail without creating events twice."""
    services.renewal_info(audit_id)
    services.evaluate(audit_id)
    return services.email_pending(audit_id=audit_id)


@app.task(name="workers.tasks.alerts.deliver_webhook", bind=True, autoretry_for=(RetryableDelivery,),
          max_retries=WEBHOOK_MAX_ATTEMPTS - 1, retry_backoff=True, retry_backoff_max=600)
def deliver_webhook(self, delivery_id: int) -> str:
    row = services.attempt_row(delivery_id, attempt=self.request.retries + 1)
    if row is None or row.status != row.Status.PENDING:
        return "skipped"  # webhook deleted, or this attempt already ran
    response = services.deliver(row)
    if not response.ok and response.retryable and self.request.retries < self.max_retries:
        raise RetryableDelivery(row.error)
    return row.status


@app.task(name="workers.tasks.alerts.check_expiries", autoretry_for=(smtplib.SMTPException, OSError, *DATABASE_DOWN),
          retry_backoff=30, max_retries=5)
def check_expiries() -> int:
    services.check_expiries()
    return services.email_pending(kind=CERT_EXPIRING)
