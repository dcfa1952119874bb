"""Every webhook body matches the published schema (docs/webhook-payload.schema.json, #37 item 9): each
event the alert rules raise, a test delivery, and the bytes a real receiver got."""

import json
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest

from tests.alerts.test_detection import CASES, NOW
from tlsaudit.alerts import services
from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.domain import alerts
from tlsaudit.domain.ari import Window
from workers.tasks.alerts import deliver_webhook

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "webhook-payload.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def every_kind_of_event() -> list[alerts.Event]:
    raised = [event for _story, previous, current, _ in CASES for event in alerts.detect(previous, current, NOW)]
    before = Window(NOW, NOW + timedelta(days=30))
    after = Window(NOW, NOW + timedelta(days=2), "https://ca.example/incident")
    return raised + alerts.renewal_moved_events(9, "aa11", "Let's Encrypt", before, after)


def test_the_schema_names_every_kind_the_rules_raise():
    assert set(SCHEMA["$defs"]["event"]["properties"]["kind"]["enum"]) == set(alerts.KINDS)
    assert {event.kind for event in every_kind_of_event()} == set(alerts.KINDS)


@pytest.mark.django_db
def test_the_body_of_every_kind_of_event_and_of_a_test_matches_the_schema(site_a):
    hook = Webhook.objects.create(organization=site_a.organization, url="https://127.0.0.1:8443/hook")
    stored = services.record(site_a, every_kind_of_event())
    rows = list(WebhookDelivery.objects.filter(event__in=stored)) + [services.queue_delivery(hook, None)]

    for row in rows:
        body = services.webhook_body(row, 1_780_000_000)
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(body)]
        assert not errors, (body["kind"], errors)
    assert len(rows) == len(stored) + 1 >= len(alerts.KINDS) + 1


def test_a_body_that_breaks_the_schema_is_caught():
    # the check above can fail: a payload missing its data, and an unknown kind
    body = {"id": "event-1", "delivery": 1, "attempt": 1, "kind": "grade_dropped", "title": "t", "organization": "o",
            "site": {"id": 1, "host": "h", "port": 443, "service": "https", "origin": "h", "url": "u"},
            "audit_id": 1, "data": {"from": "A"}, "created_at": "2026-11-29T00:00:00+00:00", "timestamp": 1}
    assert not VALIDATOR.is_valid(body)
    assert not VALIDATOR.is_valid({**body, "kind": "grade_exploded", "data": {}})


@pytest.mark.django_db
def test_what_a_receiver_gets_on_the_wire_matches_the_schema(site_a, webhook_receiver):
    Webhook.objects.create(organization=site_a.organization, url=webhook_receiver.url)
    [event] = services.record(site_a, [alerts.detect(CASES[2][1], CASES[2][2], NOW)[0]])

    deliver_webhook.apply(args=[event.deliveries.get().pk])

    [(headers, raw)] = webhook_receiver.requests
    VALIDATOR.validate(json.loads(raw))
    assert headers["X-TLSAudit-Timestamp"] == str(json.loads(raw)["timestamp"])
