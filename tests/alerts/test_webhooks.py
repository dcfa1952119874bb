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


def delivered_with_sweeps(hook) -> bool:
    """The beat's sweep, as it runs every WEBHOOK_RETRY_SWEEP_SECONDS, then whether the hook got it."""
    services.send_due_retries()
    return hook.deliveries.filter(status="ok").exists()


def run_every_attempt(first_id: int) -> None:
    """Attempt 1 and each retry the sweep finds due, in this process (the schedule shortened to 0 s)."""
    deliver_webhook.apply(args=[first_id])
    while due := services.claim_due_retries():
        for delivery_id, attempt in due:
            deliver_webhook.apply(args=[delivery_id, attempt])


@pytest.mark.django_db(transaction=True)
def test_a_500_is_retried_by_the_worker_until_delivered(site_a, webhook_receiver, start_worker_on, settings):
    """Given a receiver that answers 500 twice, when an event fires, the worker retries on the schedule
    the beat's sweep keeps: three attempts, each a row, the last one delivered; every body is signed."""
    settings.WEBHOOK_RETRY_DELAYS_S = [0.3] * 12
    url = webhook_receiver.url.replace("127.0.0.1", "localhost")  # a name: resolved once, then pinned
    hook = Webhook.objects.create(organization=site_a.organization, url=url, secret=SECRET)
    webhook_receiver.statuses = [500, 500]
    start_worker_on(["default"])

    [event] = services.record(site_a, [grade_drop(site_a)])

    assert wait_for(lambda: delivered_with_sweeps(hook))
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
def test_once_the_schedule_is_spent_the_failure_is_final(site_a, webhook_receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS_S = [0, 0, 0, 0]
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    webhook_receiver.statuses = [502] * 10
    [event] = services.record(site_a, [grade_drop(site_a)])

    run_every_attempt(hook.deliveries.get().pk)

    assert attempts(hook) == [(n, "failed", 502) for n in range(1, 6)]
    assert len(webhook_receiver.requests) == 5
    assert hook.deliveries.get(attempt=5).error == "HTTP 502 Bad Gateway"
    assert event.deliveries.count() == 5
    assert not hook.deliveries.filter(next_attempt_at__isnull=False).exists()


@pytest.mark.django_db
def test_the_shipped_schedule_outlasts_a_ten_minute_outage_and_a_night():
    from django.conf import settings

    import tlsaudit.settings as shipped
    from workers.celery import app

    due = [sum(shipped.WEBHOOK_RETRY_DELAYS_S[:n]) for n in range(1, len(shipped.WEBHOOK_RETRY_DELAYS_S) + 1)]
    assert len(due) == 12 and due[0] == 10
    assert any(600 < at <= 1200 for at in due)        # down 10 minutes: delivered within 20 of the event
    assert due[-1] > 20 * 3600                          # down for a night: still tried the next day
    sweep = app.conf.beat_schedule["send-webhook-retries"]
    assert sweep["task"] == "workers.tasks.alerts.send_webhook_retries"
    assert sweep["schedule"] == settings.WEBHOOK_RETRY_SWEEP_SECONDS == 15


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
    from tests.support.daemons import free_port

    settings.WEBHOOK_RETRY_DELAYS_S = [0, 0, 0, 0]
    hook = Webhook.objects.create(organization=site_a.organization, url=f"http://127.0.0.1:{free_port()}/", secret=SECRET)
    services.record(site_a, [grade_drop(site_a)])
    run_every_attempt(hook.deliveries.get().pk)
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


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_was_down_gets_every_event_once_per_url_after(site_a, start_worker_on, settings):
    """Two webhooks to a receiver that refuses connections while it is down (here until every delivery
    has failed twice, on a schedule shortened from minutes to seconds); three events meanwhile. When it is
    back, every event arrives once per URL, verifiable with its webhook's secret, as the beat's sweep
    keeps sending the due retries."""
    from tests.support.daemons import free_port

    settings.WEBHOOK_RETRY_DELAYS_S = [0.5, 1, 2, 4, 8]
    port = free_port()
    hooks = [Webhook.objects.create(organization=site_a.organization, url=f"http://127.0.0.1:{port}/{path}",
                                    secret=f"{SECRET}-{path}") for path in ("ops", "client")]
    start_worker_on(["default"])
    events = services.record(site_a, [Event("grade_dropped", f"k{n}", f"Grade dropped {n}", {"n": n})
                                      for n in range(3)])
    assert wait_for(lambda: services.send_due_retries() >= 0 and
                    WebhookDelivery.objects.filter(attempt__gte=2, status="failed").count() >= 6, seconds=20)

    received = []
    with receiving(port, received):
        assert wait_for(lambda: all(delivered_with_sweeps(hook) and hook.deliveries.filter(status="ok").count() == 3
                                    for hook in hooks), seconds=30)
        services.send_due_retries()

    by_path = {}
    for path, headers, body in received:
        secret = f"{SECRET}-{path.strip('/')}"
        assert hmac.compare_digest(headers["X-TLSAudit-Signature"], expected_signature(body, secret))
        by_path.setdefault(path, []).append(json.loads(body)["id"])
    expected = sorted(f"event-{event.pk}" for event in events)
    assert {path: sorted(ids) for path, ids in by_path.items()} == {"/ops": expected, "/client": expected}
    assert not WebhookDelivery.objects.filter(next_attempt_at__isnull=False).exists()


@pytest.mark.django_db
def test_a_spent_delivery_is_redelivered_from_the_log(login, alice, bob, site_a, webhook_receiver, settings,
                                                      django_capture_on_commit_callbacks):
    from django.urls import reverse

    settings.WEBHOOK_RETRY_DELAYS_S = [0]
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    webhook_receiver.statuses = [503, 503]
    services.record(site_a, [grade_drop(site_a)])
    run_every_attempt(hook.deliveries.get().pk)
    assert attempts(hook) == [(1, "failed", 503), (2, "failed", 503)]
    org = site_a.organization
    log = login(alice).get(reverse("alerts:settings", args=[org.slug])).content.decode()
    assert log.count(">Redeliver</button>") == 1          # on the last attempt only
    last = hook.deliveries.get(attempt=2)
    assert login(bob).post(reverse("alerts:redeliver", args=[org.slug, last.pk])).status_code == 403

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = login(alice).post(reverse("alerts:redeliver", args=[org.slug, last.pk]))
    assert response.status_code == 302 and len(callbacks) == 1
    deliver_webhook.apply(args=[hook.deliveries.get(attempt=1).pk, 3])

    assert attempts(hook) == [(1, "failed", 503), (2, "failed", 503), (3, "ok", 200)]
    assert [json.loads(body)["attempt"] for _, body in webhook_receiver.requests] == [1, 2, 3]


class receiving:
    """An HTTP receiver on `port` for the block, recording (path, headers, body) and answering 200."""

    def __init__(self, port: int, received: list):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, dict(self.headers), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)

    def __enter__(self):
        import threading

        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.django_db
def test_two_messages_for_one_attempt_send_it_once_and_a_dead_senders_claim_expires(site_a, webhook_receiver):
    from datetime import timedelta

    from django.utils import timezone

    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    services.record(site_a, [grade_drop(site_a)])
    row = hook.deliveries.get()
    assert services.claim_attempt(row) and not services.claim_attempt(row)   # the second message skips it
    assert deliver_webhook.apply(args=[row.pk]).result == "skipped" and webhook_receiver.requests == []
    WebhookDelivery.objects.filter(pk=row.pk).update(claimed_at=timezone.now() - timedelta(minutes=6))
    assert deliver_webhook.apply(args=[row.pk]).result == "ok"              # its sender died: taken over
    assert len(webhook_receiver.requests) == 1


@pytest.mark.django_db
def test_redeliver_refuses_a_delivery_still_being_tried_or_a_switched_off_webhook(site_a, webhook_receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS_S = [600]
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    webhook_receiver.statuses = [503]
    services.record(site_a, [grade_drop(site_a)])
    first = hook.deliveries.get()
    deliver_webhook.apply(args=[first.pk])
    first.refresh_from_db()
    assert first.status == "failed" and first.next_attempt_at is not None

    with pytest.raises(services.RedeliveryRefused, match="still being tried"):
        services.redeliver(first)
    WebhookDelivery.objects.filter(pk=first.pk).update(next_attempt_at=None)
    Webhook.objects.filter(pk=hook.pk).update(active=False)
    first.refresh_from_db()
    with pytest.raises(services.RedeliveryRefused, match="switched off"):
        services.redeliver(first)
    assert hook.deliveries.count() == 1


@pytest.mark.django_db
def test_the_api_redelivers_a_spent_delivery_and_refuses_the_rest(site_a, org_b, webhook_receiver, settings,
                                                                  django_capture_on_commit_callbacks):
    """The dashboard's Redeliver, for agencies' tools: 202 with the new attempt, 409 not_redeliverable while
    it is tried or after it arrived, 404 from another organization, 403 for a read-only key."""
    from tests.support.api import client_with, make_key
    from tlsaudit.api import keys

    settings.WEBHOOK_RETRY_DELAYS_S = [0]
    hook = Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url, secret=SECRET)
    webhook_receiver.statuses = [503, 503]
    services.record(site_a, [grade_drop(site_a)])
    run_every_attempt(hook.deliveries.get().pk)
    last = hook.deliveries.get(attempt=2)
    url = f"/api/v1/webhooks/{hook.pk}/deliveries/{last.pk}/redeliver/"
    assert client_with(make_key(site_a.organization, keys.READ_ONLY)[1]).post(url).status_code == 403
    assert client_with(make_key(org_b, keys.READ_WRITE)[1]).post(url).status_code == 404
    api = client_with(make_key(site_a.organization, keys.READ_WRITE)[1])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        answer = api.post(url)
    assert answer.status_code == 202, answer.content
    assert answer.json()["attempt"] == 3 and answer["Location"].endswith(f"/api/v1/webhooks/{hook.pk}/deliveries/")
    assert len(callbacks) == 1
    refused = api.post(url)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_redeliverable"
    assert "still being tried" in refused.json()["error"]["message"]
    deliver_webhook.apply(args=[hook.deliveries.get(attempt=1).pk, 3])
    arrived = api.post(f"/api/v1/webhooks/{hook.pk}/deliveries/{hook.deliveries.get(attempt=3).pk}/redeliver/")
    assert arrived.status_code == 409 and "arrived" in arrived.json()["error"]["message"]
    assert attempts(hook) == [(1, "failed", 503), (2, "failed", 503), (3, "ok", 200)]
