"""/healthz reports the database, the broker and the workers as JSON."""

import json
import re

import pytest
from django.utils import timezone

from tlsaudit.core.models import WorkerHeartbeat

pytestmark = pytest.mark.django_db


def get_health(client):
    response = client.get("/healthz")
    return response.status_code, json.loads(response.content)


def test_it_says_degraded_while_no_worker_has_reported(client):
    status, body = get_health(client)
    assert status == 200
    assert body["status"] == "degraded"
    assert body["checks"]["database"] == {"ok": True, "detail": "postgresql", "ms": body["checks"]["database"]["ms"]}
    assert body["checks"]["broker"]["ok"] is True
    assert body["checks"]["broker"]["detail"].startswith("redis://")
    assert "no worker heartbeat" in body["checks"]["worker"]["detail"]


def test_it_says_ok_with_a_recent_heartbeat(client):
    WorkerHeartbeat.record("heartbeat")
    status, body = get_health(client)
    assert (status, body["status"], body["checks"]["worker"]["ok"]) == (200, "ok", True)


def test_a_stale_heartbeat_is_reported(client, settings):
    WorkerHeartbeat.objects.create(name="heartbeat", seen_at=timezone.now() - timezone.timedelta(minutes=10))
    status, body = get_health(client)
    assert body["checks"]["worker"]["ok"] is False
    assert re.fullmatch(r"last heartbeat 60\d s ago", body["checks"]["worker"]["detail"])
    assert status == 200  # workers being down does not take the web app out of a load balancer


def test_a_broker_that_refuses_connections_makes_it_503(client):
    from workers.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1: a real refusal
    try:
        status, body = get_health(client)
    finally:
        app.conf.broker_url = original
    assert status == 503
    assert body["status"] == "down"
    assert body["checks"]["broker"]["ok"] is False
    assert "Error" in body["checks"]["broker"]["detail"]
