"""/healthz reports the database, the broker and the workers as JSON.

Anyone (a load balancer, docker's healthcheck) gets the status and the status code; the checks'
details (database engine, broker URL, worker heartbeat) only go to staff and to callers sending
`Authorization: Bearer <HEALTHZ_TOKEN>`. Every answer is `Cache-Control: no-store`."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.test import Client
from django.utils import timezone

from tests.support.personas import make_user
from tests.test_settings import run_check
from tlsaudit.core.models import WorkerHeartbeat

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent
TOKEN = "health-" + "t" * 40


@pytest.fixture
def monitor(settings):
    """A monitoring system holding the token."""
    settings.HEALTHZ_TOKEN = TOKEN
    return Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")


def get_health(client):
    response = client.get("/healthz")
    assert response["Cache-Control"] == "no-store"
    return response.status_code, json.loads(response.content)


@pytest.fixture
def broker_refusing():
    from workers.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1: a real refusal
    yield
    app.conf.broker_url = original


# --- what anyone sees ------------------------------------------------------------------------

def test_an_anonymous_caller_gets_the_status_and_nothing_else(client, settings):
    settings.HEALTHZ_TOKEN = TOKEN
    status, body = get_health(client)
    assert (status, body) == (200, {"status": "degraded"})   # no worker has reported
    WorkerHeartbeat.record("heartbeat")
    assert get_health(client) == (200, {"status": "ok"})


def test_an_anonymous_caller_still_sees_a_503_when_the_broker_is_down(client, broker_refusing):
    response = client.get("/healthz")
    assert response.status_code == 503 and json.loads(response.content) == {"status": "down"}
    assert b"redis" not in response.content and b"Error" not in response.content
    assert response["Retry-After"] == "30"   # as the API's 503s (#35)


def test_a_healthy_answer_has_no_retry_after(client, db):
    assert "Retry-After" not in client.get("/healthz")


@pytest.mark.parametrize("authorization", [f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Token {TOKEN}", TOKEN,
                                           "Bearer ", f"Basic {TOKEN}"])
def test_a_wrong_token_gets_the_anonymous_answer(settings, authorization):
    settings.HEALTHZ_TOKEN = TOKEN
    assert get_health(Client(HTTP_AUTHORIZATION=authorization))[1] == {"status": "degraded"}


def test_without_a_configured_token_no_bearer_opens_the_details(settings):
    settings.HEALTHZ_TOKEN = ""
    assert get_health(Client(HTTP_AUTHORIZATION="Bearer "))[1] == {"status": "degraded"}
    assert get_health(Client(HTTP_AUTHORIZATION="Bearer x"))[1] == {"status": "degraded"}


def test_a_signed_in_user_who_is_not_staff_gets_the_anonymous_answer(login, alice):
    assert get_health(login(alice))[1] == {"status": "degraded"}


# --- what the token and staff see ------------------------------------------------------------

def test_the_token_sees_every_check(monitor):
    status, body = get_health(monitor)
    assert status == 200
    assert body["status"] == "degraded"
    assert body["checks"]["database"] == {"ok": True, "detail": "postgresql", "ms": body["checks"]["database"]["ms"]}
    assert body["checks"]["broker"]["ok"] is True
    assert body["checks"]["broker"]["detail"].startswith("redis://")
    assert "no worker heartbeat" in body["checks"]["worker"]["detail"]


def test_staff_see_every_check(client):
    client.force_login(make_user("ops@tlsaudit.test", is_staff=True))
    assert set(get_health(client)[1]["checks"]) == {"database", "broker", "worker"}


def test_it_says_ok_with_a_recent_heartbeat(monitor):
    WorkerHeartbeat.record("heartbeat")
    status, body = get_health(monitor)
    assert (status, body["status"], body["checks"]["worker"]["ok"]) == (200, "ok", True)


def test_a_stale_heartbeat_is_reported(monitor):
    WorkerHeartbeat.objects.create(name="heartbeat", seen_at=timezone.now() - timezone.timedelta(minutes=10))
    status, body = get_health(monitor)
    assert body["checks"]["worker"]["ok"] is False
    assert re.fullmatch(r"last heartbeat 60\d s ago", body["checks"]["worker"]["detail"])
    assert status == 200  # workers being down does not take the web app out of a load balancer


def test_a_broker_that_refuses_connections_makes_it_503(monitor, broker_refusing):
    status, body = get_health(monitor)
    assert status == 503
    assert body["status"] == "down"
    assert body["checks"]["broker"]["ok"] is False
    assert "Error" in body["checks"]["broker"]["detail"]


def test_a_short_token_refuses_to_start(tmp_path):
    result = run_check(tmp_path, TLSAUDIT_DEV="1", HEALTHZ_TOKEN="short")
    assert result.returncode != 0 and "HEALTHZ_TOKEN is too short" in result.stderr


# --- docker-compose's healthcheck: serving pages, whatever /healthz says about the broker ------------

def compose_healthcheck(url: str) -> tuple[list[str], dict]:
    """The web service's healthcheck command from docker-compose.yml, pointed at `url`'s port."""
    import os
    from urllib.parse import urlsplit

    test = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["web"]["healthcheck"]["test"]
    assert test[0] == "CMD" and test[1] == "python"
    env = {"PATH": os.environ["PATH"], "ALLOWED_HOSTS": "localhost", "TLSAUDIT_HEALTHCHECK_PORT": str(urlsplit(url).port)}
    return [sys.executable, *test[2:]], env


def test_the_compose_healthcheck_passes_while_pages_are_served(live_server):
    command, env = compose_healthcheck(live_server.url)
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stdout


def test_the_compose_healthcheck_keeps_web_healthy_when_only_the_broker_is_down(live_server, broker_refusing):
    """/healthz answers 503 (the broker is down) while every page is served: restarting web would not bring
    the broker back, so web stays healthy (#31); /healthz's 503 is for the monitor that reads it."""
    assert Client().get("/healthz").status_code == 503
    command, env = compose_healthcheck(live_server.url)
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stdout
