"""A real Celery worker consumes from the real Redis and its task changes the database."""

import uuid

import pytest

from tests.support.waiting import wait_until as wait_for
from tlsaudit.core.models import WorkerHeartbeat
from workers.celery import app

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_task_sent_by_name_runs_on_the_worker_and_writes_the_database(audit_worker):
    token = f"test-{uuid.uuid4()}"
    result = app.send_task("workers.tasks.ping.ping", args=[token])
    # The effect is in the database: that is what the web app reads.
    heartbeat = wait_for(lambda: WorkerHeartbeat.objects.filter(name=token).first())
    assert heartbeat.count == 1
    assert result.id


def test_routes_put_each_family_of_tasks_on_its_queue():
    route = app.amqp.router.route
    assert route({}, "workers.tasks.audit.run_audit")["queue"].name == "scan"
    assert route({}, "workers.tasks.load.run_agent")["queue"].name == "load"
    assert route({}, "workers.tasks.browser.run_probe")["queue"].name == "browser"
    assert route({}, "workers.tasks.ping.ping")["queue"].name == "default"


def test_the_worker_is_configured_to_survive_crashes_and_leaks():
    conf = app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1
    assert 0 < conf.task_soft_time_limit < conf.task_time_limit
    assert conf.worker_max_tasks_per_child > 0


