"""Alerts, end to end: summarise audits, detect events (domain), store each once, email the
recipients and queue one webhook delivery per active webhook. Called by the Celery tasks."""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.core import mail, signing
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from tlsaudit.alerts import webhooks
from tlsaudit.alerts.models import AlertEvent, AlertSettings, Webhook, WebhookDelivery
from tlsaudit.audits import renewals
from tlsaudit.audits.models import Audit
from tlsaudit.core.emails import SEND_ERRORS, failure_reason, templated_message
from tlsaudit.core.queue import QueueUnavailable, enqueue
from tlsaudit.domain import alerts as rules
from tlsaudit.domain import ari
from tlsaudit.sites.models import Site

EVALUATE_TASK = "workers.tasks.alerts.evaluate_audit"
DELIVER_TASK = "workers.tasks.alerts.deliver_webhook"
FINISHED = (Audit.Status.DONE, Audit.Status.FAILED)
logger = logging.getLogger(__name__)


def evaluate_on_commit(audit: Audit) -> None:
    """The hook audits call when an audit finishes: evaluate alerts once the row is committed. With the
    broker down its alerts are not evaluated (logged); the audit's result stands."""
    enqueue(EVALUATE_TASK, audit.pk, unsent=lambda: None)


# -- summaries ------------------------------------------------------------------------------

def summarize(audit: Audit) -> dict:
    """The plain dict the detection rules read (see tlsaudit/domain/alerts.py)."""
    report = audit.report or {}
    leaf = audit.certificates.filter(deployment=0, position=0).first()
    failing = audit.findings.filter(status="fail").values_list("finding_id", "severity", "title")
    return {
        "audit_id": audit.pk, "site_id": audit.site_id, "status": audit.status,
        "grade": audit.grade, "score": audit.score, "error": audit.error_message,
        "caps": {c["rule_id"]: c["reason"] for c in report.get("grade", {}).get("caps", [])},
        "findings": {fid: {"severity": sev, "title": title} for fid, sev, title in failing},
        "cert": leaf and {"fingerprint": leaf.fingerprint_sha256, "not_before": leaf.not_before,
                          "not_after": leaf.not_after, "subject": leaf.subject, "issuer": leaf.issuer,
                          "names": sorted(leaf.san_dns), "ari_end": ari_end(audit.site_id, leaf.fingerprint_sha256)},
        **failure_streak(audit),
    }


def ari_end(site_id: int, fingerprint: str):
    row = renewals.current_window(site_id, fingerprint)
    return row.window_end if row else None


def renewal_info(audit_id: int) -> list[AlertEvent]:
    """Ask the certificate's CA for its renewal window (ARI; failures are recorded on the row, never raised)
    and alert when the CA moved it earlier."""
    try:
        refreshed = renewals.refresh(audit_id)
    except Exception:  # noqa: BLE001 — a CA's or a certificate's oddity must not cost the audit its alerts
        logger.exception("renewal information of audit %s not refreshed", audit_id)
        return []
    if refreshed is None or refreshed.moved_from is None:
        return []
    row = refreshed.row
    window = ari.Window(row.window_start, row.window_end, row.explanation_url)
    return record(refreshed.audit.site, rules.renewal_moved_events(row.site_id, row.fingerprint, row.ca_name,
                                                                   refreshed.moved_from, window),
                  audit=refreshed.audit)


# Failures that say nothing about the site: our own queue gave up before anything was sent to it.
NOT_THE_SITES = ("address_busy",)


def failure_streak(audit: Audit) -> dict:
    """How many finished audits of the site failed in a row, ending with this one, and the seconds from the
    first one's start to this one's; audits that failed for a reason of ours (NOT_THE_SITES) neither count
    nor break the streak."""
    if audit.status != Audit.Status.FAILED or audit.error_code in NOT_THE_SITES:
        return {"consecutive_failures": 0, "failing_since": None, "failing_for_s": 0}
    history = (Audit.objects.filter(site_id=audit.site_id, status__in=FINISHED, created_at__lte=audit.created_at)
               .exclude(error_code__in=NOT_THE_SITES)
               .order_by("-created_at", "-pk").values_list("pk", "status", "created_at")[:50])
    streak = []
    for pk, status, created_at in history:
        if status != Audit.Status.FAILED:
            break
        streak.append((pk, created_at))
    first_pk, first_at = streak[-1]
    return {"consecutive_failures": len(streak), "failing_since": first_pk,
            "failing_for_s": (audit.created_at - first_at).total_seconds()}


def previous_done(audit: Audit) -> Audit | None:
    return (Audit.objects.filter(site_id=audit.site_id, status=Audit.Status.DONE, created_at__lt=audit.created_at)
            .order_by("-created_at").first())


# -- events ---------------------------------------------------------------------------------

def evaluate(audit_id: int, now=None) -> list[AlertEvent]:
    """Detect and store the events of a finished audit; returns the ones that are new."""
    audit = Audit.objects.select_related("site").filter(pk=audit_id, status__in=FINISHED).first()
    if audit is None:
        return []  # deleted with its site, or not finished
    previous = previous_done(audit)
    found = rules.detect(previous and summarize(previous), summarize(audit), now or timezone.now(),
                         expiry_policy(audit.site.organization_id))
    return record(audit.site, found, audit=audit)


def expiry_policy(organization_id: int) -> rules.ExpiryPolicy:
    prefs = AlertSettings.objects.filter(organization_id=organization_id).first()
    return prefs.expiry_policy() if prefs else rules.ExpiryPolicy()


def record(site, found: list[rules.Event], audit: Audit | None = None) -> list[AlertEvent]:
    """Insert each event unless its occurrence is already stored; queue webhooks for the new ones."""
    created = []
    for event in found:
        try:
            with transaction.atomic():
                row = AlertEvent.objects.create(organization_id=site.organization_id, site=site, audit=audit,
                                                kind=event.kind, dedupe_key=event.key, title=event.title[:300],
                                                payload=event.data)
                queue_deliveries(row)
        except IntegrityError:
            continue  # fired before: once per occurrence
        created.append(row)
    return created


def check_expiries(now=None) -> list[AlertEvent]:
    """Daily: expiry thresholds from each site's latest audit, for sites not audited today."""
    now = now or timezone.now()
    start_of_day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    created = []
    sites = Site.objects.filter(last_audit__status=Audit.Status.DONE, last_audit_at__lt=start_of_day)
    policies = {prefs.organization_id: prefs.expiry_policy() for prefs in AlertSettings.objects.all()}
    for site in sites.select_related("last_audit"):
        policy = policies.get(site.organization_id, rules.ExpiryPolicy())
        created += record(site, rules.expiry_events(summarize(site.last_audit), now, policy), audit=site.last_audit)
    return created


# -- email ----------------------------------------------------------------------------------

def email_pending(**filters) -> int:
    """Email the events (matching `filters`) not emailed yet to their org's recipients; returns how many went out.
    Safe to run twice: an event is marked once its mail went out.

    An event whose mail cannot be built (a header that cannot be encoded) is marked with the reason
    and skipped, so it never blocks the others. When the mail server refuses or does not answer,
    the reason goes on the event and the error is raised: the task retries later, and the events
    already marked are not sent twice."""
    pending = AlertEvent.objects.filter(emailed_at=None, **filters).select_related("site", "organization")
    sent = 0
    for event in pending:
        prefs = AlertSettings.objects.filter(organization_id=event.organization_id).first()
        recipients = prefs.recipients if prefs and prefs.recipients and prefs.wants(event.kind) else []
        try:
            if recipients:
                mail.get_connection().send_messages([alert_message(event, to) for to in recipients])
                sent += 1
        except SEND_ERRORS as exc:
            logger.warning("alert event %s not emailed yet, will retry: %s", event.pk, failure_reason(exc))
            mark_emailed(event, failure_reason(exc), done=False)
            raise
        except ValueError as exc:  # BadHeaderError, an address that cannot be encoded: retrying will not help
            logger.error("alert event %s cannot be emailed: %s", event.pk, failure_reason(exc))
            mark_emailed(event, failure_reason(exc))
            continue
        mark_emailed(event)
    return sent


def mark_emailed(event: AlertEvent, error: str = "", done: bool = True) -> None:
    AlertEvent.objects.filter(pk=event.pk).update(emailed_at=timezone.now() if done else None, email_error=error)


UNSUBSCRIBE_SALT = "tlsaudit.alerts.unsubscribe"
UNSUBSCRIBE_MAX_AGE = 60 * 60 * 24 * 90  # seconds: a link in a three-month-old alert still works


def unsubscribe_token(address: str, org_id: int) -> str:
    """A signed (not encrypted) token naming one recipient address of one organization."""
    return signing.dumps({"email": address.strip().lower(), "org": org_id}, salt=UNSUBSCRIBE_SALT, compress=True)


def read_unsubscribe_token(token: str, max_age: int = UNSUBSCRIBE_MAX_AGE) -> tuple[str, int]:
    """(address, org id); raises signing.SignatureExpired / signing.BadSignature."""
    data = signing.loads(token, salt=UNSUBSCRIBE_SALT, max_age=max_age)
    if not isinstance(data, dict) or not isinstance(data.get("email"), str) or not isinstance(data.get("org"), int):
        raise signing.BadSignature("Malformed unsubscribe token.")
    return data["email"], data["org"]


def unsubscribe_link(org, address: str) -> str:
    return settings.SITE_URL + reverse("alerts:unsubscribe", args=[org.slug, unsubscribe_token(address, org.pk)])


def alert_message(event: AlertEvent, to: str) -> mail.EmailMultiAlternatives:
    preferences = settings.SITE_URL + reverse("alerts:settings", args=[event.organization.slug])
    unsubscribe = unsubscribe_link(event.organization, to)
    context = {"event": event, "site": event.site, "org": event.organization,
               "site_link": settings.SITE_URL + event.site.get_absolute_url(), "preferences_link": preferences,
               "unsubscribe_link": unsubscribe}
    # RFC 8058 one-click: mail clients POST to the signed link.
    return templated_message("alert", to, context, headers={"List-Unsubscribe": f"<{unsubscribe}>",
                                                            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})


# -- webhooks -------------------------------------------------------------------------------

def queue_deliveries(event: AlertEvent) -> None:
    prefs = AlertSettings.objects.filter(organization_id=event.organization_id).first()
    if prefs and not prefs.wants(event.kind):
        return
    for hook in Webhook.objects.filter(organization_id=event.organization_id, active=True):
        queue_delivery(hook, event)


def queue_delivery(hook: Webhook, event: AlertEvent | None) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.create(webhook=hook, event=event)
    enqueue(DELIVER_TASK, delivery.pk, unsent=lambda: fail_unsent(delivery))
    return delivery


def fail_unsent(delivery: WebhookDelivery) -> QueueUnavailable:
    """The broker refused the delivery's message: the delivery log shows it failed, and why."""
    message = "The task queue was unavailable, so this delivery was not sent."
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=WebhookDelivery.Status.FAILED, error=message)
    delivery.status, delivery.error = WebhookDelivery.Status.FAILED, message
    return QueueUnavailable(message, row=delivery)


def attempt_row(delivery_id: int, attempt: int) -> WebhookDelivery | None:
    """The row for this attempt: the first one, or a retry row created once."""
    first = WebhookDelivery.objects.select_related("webhook", "event__site", "event__organization").filter(
        pk=delivery_id).first()
    if first is None or attempt == 1:
        return first
    row, _ = WebhookDelivery.objects.get_or_create(first=first, attempt=attempt,
                                                   defaults={"webhook": first.webhook, "event": first.event})
    return row


def claim_attempt(row: WebhookDelivery) -> bool:
    """Whether the caller may POST `row`: it is pending and no task claimed it within a lease. Two messages
    for one attempt (a sweep's second claim, a redelivered message) never both send; a task that died
    mid-POST is taken over after the lease."""
    now = timezone.now()
    return bool(WebhookDelivery.objects.filter(pk=row.pk, status=WebhookDelivery.Status.PENDING)
                .filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - RETRY_LEASE)).update(claimed_at=now))


def chain(first: WebhookDelivery):
    """Every attempt of one delivery."""
    return WebhookDelivery.objects.filter(Q(pk=first.pk) | Q(first=first))


def deliver(row: WebhookDelivery) -> webhooks.Response:
    """POST the event once and record the outcome on the attempt's row; a retryable failure gets the
    time of its next attempt."""
    timestamp = int(time.time())
    body = json.dumps(webhook_body(row, timestamp), separators=(",", ":"), sort_keys=True).encode()
    response = webhooks.post(row.webhook.url, body, row.webhook.secret, timestamp)
    row.status = WebhookDelivery.Status.OK if response.ok else WebhookDelivery.Status.FAILED
    row.response_code, row.error, row.duration_ms = response.status, response.error[:2000], response.duration_ms
    row.next_attempt_at = retry_at(row.attempt) if response.retryable and not response.ok else None
    with transaction.atomic():
        row.save(update_fields=["status", "response_code", "error", "duration_ms", "next_attempt_at"])
        if row.first_id:   # the attempt before is done with: until now its lease stood, should this task die
            chain(row.first).filter(attempt=row.attempt - 1).update(next_attempt_at=None)
    return response


def retry_at(attempt: int, now=None):
    """When the attempt after failed attempt `attempt` is due; None once the schedule is spent."""
    delays = settings.WEBHOOK_RETRY_DELAYS_S
    if attempt > len(delays):
        return None
    return (now or timezone.now()) + timedelta(seconds=delays[attempt - 1])


# A retry handed to the queue is due again this long after, should its message be lost (a Redis restart).
RETRY_LEASE = timedelta(minutes=5)


def claim_due_retries(now=None, limit: int = 500) -> list[tuple[int, int]]:
    """(delivery id, attempt) of each retry now due, claimed for the caller by moving its time a lease
    ahead (one conditional UPDATE each, so two sweeps never send the same one); a webhook switched off
    since gets no more attempts."""
    now = now or timezone.now()
    WebhookDelivery.objects.filter(next_attempt_at__lte=now, webhook__active=False).update(next_attempt_at=None)
    claimed = []
    for row in WebhookDelivery.objects.filter(next_attempt_at__lte=now).order_by("next_attempt_at")[:limit]:
        if WebhookDelivery.objects.filter(pk=row.pk, next_attempt_at=row.next_attempt_at).update(
                next_attempt_at=now + RETRY_LEASE):
            claimed.append((row.first_id or row.pk, row.attempt + 1))
    return claimed


def send_due_retries(now=None) -> int:
    """The beat's sweep: queue every due retry (one lost in the queue is claimed again after its lease)."""
    due = claim_due_retries(now)
    for delivery_id, attempt in due:
        enqueue(DELIVER_TASK, delivery_id, attempt)
    return len(due)


class RedeliveryRefused(Exception):
    """A delivery that is still being tried, or whose webhook is off: the message says which."""


def redeliver(delivery: WebhookDelivery) -> WebhookDelivery:
    """One more attempt of a delivery whose attempts are all over and failed ("Redeliver" in the log)."""
    first = delivery.first or delivery
    try:
        with transaction.atomic():
            attempts = list(chain(first).select_for_update().order_by("attempt"))
            if not first.webhook.active:
                raise RedeliveryRefused("This webhook is switched off: switch it on to redeliver.")
            if any(a.status == a.Status.PENDING or a.next_attempt_at for a in attempts):
                raise RedeliveryRefused("This delivery is still being tried: its next attempt is in the log.")
            if attempts[-1].status != WebhookDelivery.Status.FAILED:
                raise RedeliveryRefused("This delivery arrived: there is nothing to redeliver.")
            row = WebhookDelivery.objects.create(webhook=first.webhook, event=first.event, first=first,
                                                 attempt=attempts[-1].attempt + 1)
            enqueue(DELIVER_TASK, first.pk, row.attempt, unsent=lambda: fail_unsent(row))
    except IntegrityError:   # a retry's task created the same attempt a moment before
        raise RedeliveryRefused("This delivery is still being tried: its next attempt is in the log.") from None
    return row


def webhook_body(row: WebhookDelivery, timestamp: int) -> dict:
    """The JSON sent; the timestamp is inside the signed body, so a replay can be spotted."""
    delivery_id = row.first_id or row.pk
    event = row.event
    if event is None:
        return {"id": f"test-{delivery_id}", "kind": "test", "title": "Test delivery from TLS Audit",
                "organization": row.webhook.organization.slug, "timestamp": timestamp}
    return {"id": f"event-{event.pk}", "delivery": delivery_id, "attempt": row.attempt, "kind": event.kind,
            "title": event.title, "organization": event.organization.slug,
            "site": {"id": event.site_id, "host": event.site.hostname, "port": event.site.https_port,
                     "service": event.site.service, "origin": event.site.origin,
                     "url": settings.SITE_URL + event.site.get_absolute_url()},
            "audit_id": event.audit_id, "data": event.payload, "created_at": event.created_at.isoformat(),
            "timestamp": timestamp}
