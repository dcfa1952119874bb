"""Webhooks delivered to a real local HTTP server: signed JSON, retries with backoff, a log row
per attempt, the SSRF guard at delivery time."""

import hashlib
import hmac
import json

import pytest

from tests.domain.factories import NOW
from tests.support.waiting import eventually as wait_for
from tests.test_audit_views import done_audit
from tlsaudit.alerts import services
from tlsaudit.alerts.models import AlertEvent, Webhook, WebhookDelivery
from tlsaudit.domain.alerts import Event
from workers.tasks.alerts import deliver_webhook

SECRET = "whsec_test-secret-0123456789"


def expected_signature(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def grade_drop(site):
    return Event("grade_dropped", f"site:{site.pk}:grade_dropped:audit:1", "Grade dropped from A to B",
                 {"from": "A", "to": "B"})


def attempts(hook):
    return list(hook.deliveries.order_by("attempt").values_list("attempt", "status", "response_code"))


@pytest.mark.django_db(transaction=True)
def test_a_500_is_retried_by_the_worker_until_delivered(site_a, webhook_receiver, start_worker_on):
    """Given a receiver that answers 500 twice, when an event fires, the worker retries with
    backoff: three attempts, each a row, the last one delivered; every body is signed."""
    url = webhook_receiver.url.replace("127.0.0.1", "localhost")  # a name: resolved once, then pinned
    hook = Webhook.objects.create(organization=site_a.organization, url=url, secret=SECRET)
    webhook_receiver.statuses = [500, 500]
    start_worker_on(["default"])

    [event] = services.record(site_a, [grade_drop(site_a)])

    assert wait_for(lambda: hook.deliveries.filter(status="ok").exists())
    assert attempts(hook) == [(1, "failed", 500), (2, "failed", 500), (3, "ok", 200)]
    for headers, body in webhook_receiver.requests:
        assert hmac.compare_digest(headers["X-TLSAudit-Signature"], expected_signature(body))
        assert headers["Host"] == url.split("/")[2]
        assert headers["Content-Type"] == "application/json"
        assert headers["X-TLSAudit-Timestamp"] == str(json.loads(body)["timestamp"])
    payload = webhook_receiver.json()
    assert (payload["id"], payload["kind"], payload["attempt"]) == (f"event-{event.pk}", "grade_dropped", 3)
    assert payload["site"]["host"] == "shop.example.com" and payload["data"] == {"from": "A", "to": "B"}
    assert webhook_receiver.requests[0][0]["X-TLSAudit-Signature"] != expected_signature(
        webhook_receiver.requests[0][1], "whsec_another-secret")


@pytest.mark.django_db
def test_after_five_failed_attempts_the_failure_is_recorded(site_a, webhook_receiver):
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    webhook_receiver.statuses = [502] * 10
    [event] = services.record(site_a, [grade_drop(site_a)])
    first = hook.deliveries.get()

    deliver_webhook.apply(args=[first.pk])  # eager: Celery runs the retries at once, ignoring the backoff

    assert attempts(hook) == [(n, "failed", 502) for n in range(1, 6)]
    assert len(webhook_receiver.requests) == 5
    assert hook.deliveries.get(attempt=5).error == "HTTP 502 Bad Gateway"
    assert event.deliveries.count() == 5


@pytest.mark.django_db
def test_a_4xx_answer_is_not_retried(site_a, webhook_receiver):
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    webhook_receiver.statuses = [410]
    services.record(site_a, [grade_drop(site_a)])
    deliver_webhook.apply(args=[hook.deliveries.get().pk])
    assert attempts(hook) == [(1, "failed", 410)]


@pytest.mark.django_db
def test_an_attempt_that_already_ran_is_not_sent_again(site_a, webhook_receiver):
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    services.record(site_a, [grade_drop(site_a)])
    delivery = hook.deliveries.get()
    assert deliver_webhook.apply(args=[delivery.pk]).result == "ok"
    assert deliver_webhook.apply(args=[delivery.pk]).result == "skipped"
    assert len(webhook_receiver.requests) == 1


@pytest.mark.django_db
def test_a_url_that_became_private_is_refused_at_delivery_without_retries(site_a, webhook_receiver, settings):
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    services.record(site_a, [grade_drop(site_a)])
    settings.ALLOW_PRIVATE_TARGETS = False
    deliver_webhook.apply(args=[hook.deliveries.get().pk])
    [row] = hook.deliveries.all()
    assert (row.status, row.response_code) == ("failed", None)
    assert "127.0.0.1 is a loopback address" in row.error
    assert webhook_receiver.requests == []


@pytest.mark.django_db
def test_no_answer_is_recorded_as_a_connection_error(site_a, settings):
    from tests.alerts.conftest import free_port

    hook = Webhook.objects.create(organization=site_a.organization, url=f"http://127.0.0.1:{free_port()}/", secret=SECRET)
    services.record(site_a, [grade_drop(site_a)])
    deliver_webhook.apply(args=[hook.deliveries.get().pk])
    rows = hook.deliveries.all()
    assert len(rows) == 5 and {r.status for r in rows} == {"failed"}
    assert "ConnectionRefusedError" in rows[0].error


@pytest.mark.django_db
def test_inactive_webhooks_and_switched_off_kinds_get_nothing(site_a, webhook_receiver):
    from tlsaudit.alerts.models import AlertSettings

    Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, active=False)
    live = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url)
    services.record(site_a, [grade_drop(site_a)])
    AlertSettings.objects.create(organization=site_a.organization, kinds=["new_finding"])
    services.record(site_a, [Event("grade_recovered", "k2", "Grade recovered", {})])
    assert list(WebhookDelivery.objects.values_list("webhook", flat=True)) == [live.pk]


@pytest.mark.django_db
def test_an_evaluated_audit_queues_one_delivery_per_event(site_a, webhook_receiver, django_capture_on_commit_callbacks):
    Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url)
    done_audit(site_a)
    worse = done_audit(site_a, heartbleed="bad")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.evaluate(worse.pk, now=NOW)
        services.evaluate(worse.pk, now=NOW)
    assert AlertEvent.objects.count() == WebhookDelivery.objects.count() == len(callbacks) == 2
