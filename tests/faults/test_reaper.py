"""The reaper's rules and the run's fencing, on the test database with the clock passed in (the
process-level stories are in the other files of this folder).

A run owns its audit by its attempt number: the reaper hands a silent run's row to a new attempt,
and every write of the old run (progress, heartbeat, result, failure) then changes nothing. A run
whose process is certainly dead is handed on at once; a silent one only if it stays silent for one
more heartbeat (the second look), so a database outage longer than the lease loses no live run."""

import os
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.domain.factories import make_facts
from tests.support.sites import added_site
from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from tlsaudit.core import queue, runners
from workers.celery import app
from workers.tls.engine import ScanOutcome

pytestmark = pytest.mark.django_db
NONE = {"requeued": 0, "failed": 0, "not_started": 0, "resent": 0, "orphaned": 0}
THIS_PROCESS = "import sys; from tlsaudit.core.runners import this_process; print(this_process(), flush=True); "


@pytest.fixture
def now():
    return timezone.now()


@pytest.fixture(autouse=True)
def empty_broker():
    """No audit message waits in the (test) broker, as after a Redis restart that lost them."""
    app.control.purge()
    yield
    app.control.purge()  # what the reaper sent here


@pytest.fixture(autouse=True)
def quick_second_look(settings):
    settings.AUDIT_HEARTBEAT_SECONDS = 1  # the second look at a silent run waits 1 + 2 s


def reap(now, lost=False):
    """One reaper pass; `lost`: whether the broker lost all it held since the last pass."""
    return services.reap_abandoned(now, lost=lost)


def running(site, now, *, attempts=1, beat_ago=0, started_ago=None, runner=""):
    """An audit claimed `attempts` times, its heartbeat `beat_ago` seconds old."""
    started = now - timedelta(seconds=started_ago if started_ago is not None else beat_ago)
    return Audit.objects.create(site=site, organization=site.organization, status="running", attempts=attempts,
                                started_at=started, heartbeat_at=now - timedelta(seconds=beat_ago), runner=runner,
                                progress=[{"name": "resolve", "status": "done", "t": 0.1}])


def queued(site, now, *, queued_ago=0, sent_ago=0):
    sent_at = None if sent_ago is None else now - timedelta(seconds=sent_ago)
    return Audit.objects.create(site=site, organization=site.organization, status="queued",
                                queued_at=now - timedelta(seconds=queued_ago), sent_at=sent_at)


def dead_runner() -> str:
    """The identity of a real process of this machine that has exited."""
    return subprocess.run([sys.executable, "-c", THIS_PROCESS], capture_output=True, text=True, check=True,
                          env=django_env()).stdout.strip()


def django_env() -> dict:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "tlsaudit.settings"}


def test_a_run_whose_heartbeat_went_silent_for_the_lease_is_requeued(site_a, now, settings):
    silent = running(site_a, now, beat_ago=settings.AUDIT_LEASE_SECONDS + 1, runner="elsewhere 4242 17")
    assert reap(now) == {**NONE, "requeued": 1}
    silent.refresh_from_db()
    assert (silent.status, silent.attempts, silent.progress, silent.runner) == ("queued", 1, [], "")
    assert silent.queued_at == silent.sent_at == now


def test_a_run_that_beats_is_left_alone_however_long_it_runs(site_a, now, settings):
    alive = running(site_a, now, beat_ago=settings.AUDIT_HEARTBEAT_SECONDS, started_ago=200)
    assert reap(now) == NONE
    alive.refresh_from_db()
    assert alive.status == "running"


def test_a_run_past_the_hard_time_limit_is_reaped_even_without_a_heartbeat(site_a, now, settings):
    # Rows claimed before heartbeats existed have none; the hard limit still bounds them.
    legacy = running(site_a, now, started_ago=settings.AUDIT_HARD_TIME_LIMIT + 61)
    Audit.objects.filter(pk=legacy.pk).update(heartbeat_at=None)
    assert reap(now)["requeued"] == 1


def test_a_run_lost_a_second_time_fails_with_the_reason_and_the_site_shows_it(site_a, now, settings):
    twice = running(site_a, now, attempts=services.MAX_ATTEMPTS, beat_ago=settings.AUDIT_LEASE_SECONDS + 1)
    assert reap(now) == {**NONE, "failed": 1}
    twice.refresh_from_db()
    assert (twice.status, twice.error_code) == ("failed", "worker_lost")
    assert twice.error_message == "The audit was interrupted twice (its worker stopped). Please retry."
    site_a.refresh_from_db()
    assert (site_a.last_audit_id, site_a.last_audit_status) == (twice.pk, "failed")


def test_a_queued_audit_whose_message_may_be_lost_is_sent_again_once_per_period(site_a, now, settings):
    waited = settings.AUDIT_RESEND_AFTER_SECONDS + 1
    lost = queued(site_a, now, queued_ago=waited, sent_ago=waited)
    assert reap(now) == {**NONE, "resent": 1}
    lost.refresh_from_db()
    assert (lost.status, lost.sent_at, lost.queued_at) == ("queued", now, now - timedelta(seconds=waited))
    # The next pass, a minute later, leaves it: its message is fresh.
    assert reap(now + timedelta(seconds=60)) == NONE


def test_nothing_is_resent_while_audit_messages_wait_in_the_broker(site_a, now, settings,
                                                                  django_capture_on_commit_callbacks):
    # The workers are behind, not the broker: a resend would only add a duplicate to the backlog.
    waited = settings.AUDIT_RESEND_AFTER_SECONDS + 1
    backlog = queued(site_a, now, queued_ago=waited, sent_ago=waited)
    with django_capture_on_commit_callbacks(execute=True):
        queue.enqueue(services.AUDIT_TASK, backlog.pk)
    assert reap(now) == NONE
    backlog.refresh_from_db()
    assert backlog.sent_at == now - timedelta(seconds=waited)


def test_a_queued_audit_no_worker_took_for_the_queue_timeout_fails_saying_so(site_a, now, settings):
    settings.AUDIT_QUEUE_TIMEOUT_SECONDS = 3 * 3600
    stale = queued(site_a, now, queued_ago=3 * 3600 + 1, sent_ago=60)
    assert reap(now) == {**NONE, "not_started": 1}
    stale.refresh_from_db()
    assert (stale.status, stale.error_code) == ("failed", "not_started")
    assert stale.error_message == ("No worker started this audit within 3 h: the scan workers are down or "
                                   "overloaded. Please retry later.")


def test_a_fresh_queued_audit_is_neither_resent_nor_failed(site_a, now):
    queued(site_a, now, queued_ago=5, sent_ago=5)
    assert reap(now) == NONE


def test_the_claim_returns_the_attempt_number_that_fences_the_run(site_a, now, settings):
    audit = queued(site_a, now)
    assert services.claim(audit.pk) == 1
    assert services.claim(audit.pk) is None  # a second delivery loses
    Audit.objects.filter(pk=audit.pk).update(heartbeat_at=now - timedelta(seconds=settings.AUDIT_LEASE_SECONDS + 1))
    assert reap(now)["requeued"] == 1
    assert services.claim(audit.pk) == 2


def test_writes_of_a_run_that_lost_its_row_change_nothing(site_a, now):
    audit = queued(site_a, now)
    old = services.claim(audit.pk)
    Audit.objects.filter(pk=audit.pk).update(status="queued")  # the reaper re-queued it...
    new = services.claim(audit.pk)  # ...and a new attempt owns it
    assert (old, new) == (1, 2)

    services.ProgressRecorder(audit.pk, old)("tls_1_2_cipher_suites", "done")
    assert services.beat(audit.pk, old) is False
    outcome = ScanOutcome(facts=make_facts(), mozilla={}, duration_s=1.0)
    services.store_outcome(audit.pk, outcome, attempt=old)
    services.fail(audit, "timeout", "too slow", attempt=old)
    audit.refresh_from_db()
    assert (audit.status, audit.progress, audit.grade, audit.findings.count()) == ("running", [], "", 0)

    # The owner's writes land.
    services.ProgressRecorder(audit.pk, new)("tls_1_2_cipher_suites", "done")
    assert services.beat(audit.pk, new) is True
    stored = services.store_outcome(audit.pk, outcome, attempt=new)
    assert (stored.status, stored.grade) == ("done", "A+")
    assert stored.findings.count() > 10


# --- the run's process -----------------------------------------------------------------------------

def test_a_run_whose_process_died_on_this_host_is_requeued_at_once(site_a, now):
    # Its heartbeat is a second old, as a SIGKILLed pool child's is: /proc says it is gone, no lease to wait.
    orphan = running(site_a, now, beat_ago=1, runner=dead_runner())
    assert reap(now) == {**NONE, "requeued": 1}
    orphan.refresh_from_db()
    assert (orphan.status, orphan.attempts, orphan.runner) == ("queued", 1, "")


def test_a_run_whose_process_lives_is_left_alone_until_it_dies(site_a, now):
    with subprocess.Popen([sys.executable, "-c", THIS_PROCESS + "sys.stdin.read()"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env=django_env()) as process:
        alive = running(site_a, now, beat_ago=1, runner=process.stdout.readline().strip())
        assert reap(now) == NONE
        process.kill()
        process.wait()
    assert reap(now) == {**NONE, "requeued": 1}
    alive.refresh_from_db()
    assert alive.status == "queued"


@pytest.mark.parametrize("elsewhere", ["host", "boot", "namespace"])
def test_a_run_recorded_in_another_pid_space_is_judged_by_its_heartbeat_alone(site_a, now, elsewhere):
    # Another machine, a reboot, another container: its pid says nothing here, even if that pid is dead here.
    host, boot, namespace = runners.pid_space().split(" ")
    space = {"host": f"other-{host} {boot} {namespace}", "boot": f"{host} 00000000-0000-0000-0000-000000000000 "
             f"{namespace}", "namespace": f"{host} {boot} pid:[1]"}[elsewhere]
    dead_here = dead_runner().rsplit(" ", 2)
    running(site_a, now, beat_ago=1, runner=f"{space} {dead_here[1]} {dead_here[2]}")
    assert reap(now) == NONE


@pytest.mark.django_db(transaction=True)
def test_a_silent_run_that_beats_during_the_second_look_is_left_alone(site_a, settings):
    # As after a database outage longer than the lease: the run could not beat, and beats once it can again.
    now = timezone.now()
    audit = running(site_a, now, beat_ago=settings.AUDIT_LEASE_SECONDS + 30, runner="elsewhere 4242 17")
    beating = threading.Timer(1.0, beat_once, args=(audit.pk, audit.attempts))
    beating.start()
    assert reap(now) == NONE
    beating.join()
    audit.refresh_from_db()
    assert (audit.status, audit.attempts) == ("running", 1)


def beat_once(audit_id: int, attempt: int) -> None:
    try:
        assert services.beat(audit_id, attempt)
    finally:
        connection.close()


def test_a_redelivered_message_takes_over_a_run_whose_process_died(site_a, now):
    orphan = running(site_a, now, runner=dead_runner())
    assert services.take_over(orphan) is True
    orphan.refresh_from_db()
    assert (orphan.status, orphan.attempts, orphan.runner) == ("queued", 1, "")
    assert services.claim(orphan.pk) == 2


@pytest.mark.parametrize("runner", ["alive", "unrecorded", "elsewhere"])
def test_a_redelivered_message_leaves_a_run_that_may_be_alive_alone(site_a, now, runner):
    # kombu restores a live run's unacknowledged message when a broker connection closes: it must not take over.
    recorded = {"alive": runners.this_process(), "unrecorded": "", "elsewhere": "other-host 0 pid:[1] 1 1"}[runner]
    alive = running(site_a, now, runner=recorded)
    assert services.take_over(alive) is False
    alive.refresh_from_db()
    assert (alive.status, alive.attempts) == ("running", 1)


def test_a_redelivered_message_of_a_run_lost_twice_fails_it(site_a, now):
    twice = running(site_a, now, attempts=services.MAX_ATTEMPTS, runner=dead_runner())
    assert services.take_over(twice) is False
    twice.refresh_from_db()
    assert (twice.status, twice.error_code) == ("failed", "worker_lost")


# --- messages the broker never got, or lost -----------------------------------------------------------

def test_an_audit_whose_message_the_broker_refused_is_sent_at_the_next_pass(site_a, now):
    refused = queued(site_a, now, queued_ago=5, sent_ago=None)  # as keep_unsent leaves it
    assert reap(now) == {**NONE, "resent": 1}
    refused.refresh_from_db()
    assert refused.sent_at == now


def test_after_the_broker_lost_its_messages_every_queued_audit_is_sent_again_at_once(site_a, alice, now):

    other = added_site(organization=site_a.organization, hostname="blog.example.com", created_by=alice)
    earlier = queued(site_a, now, queued_ago=60, sent_ago=60)  # far from AUDIT_RESEND_AFTER_SECONDS
    just_now = queued(other, now, queued_ago=1, sent_ago=1)
    assert reap(now) == NONE  # nothing says their messages are gone
    assert reap(now, lost=True) == {**NONE, "resent": 2}
    for audit in (earlier, just_now):
        audit.refresh_from_db()
        assert (audit.status, audit.sent_at) == ("queued", now)
    assert reap(now + timedelta(seconds=1)) == NONE


def test_the_broker_losing_all_it_held_is_noticed_once(settings):
    import redis

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete(queue.KEPT_KEY)  # what a restart without persistence, or a flush, does
    assert queue.messages_lost() is True
    assert queue.messages_lost() is False
    assert broker.exists(queue.KEPT_KEY)


def held(site, now, runner: str, due_ago: float = 0) -> Audit:
    """A queued audit whose retry `runner` holds (services.mark_held), that retry due `due_ago` s ago."""
    audit = queued(site, now, queued_ago=30, sent_ago=10)
    Audit.objects.filter(pk=audit.pk).update(runner=runner, heartbeat_at=now - timedelta(seconds=due_ago))
    return audit


def test_a_retry_held_by_a_process_that_died_on_this_host_is_sent_again_at_once(site_a, now):
    # Its message waits in the dead worker until the broker's visibility timeout (an hour): send another now.
    orphan = held(site_a, now, dead_runner(), due_ago=-5)   # due in 5 s
    assert reap(now) == {**NONE, "orphaned": 1, "resent": 1}
    orphan.refresh_from_db()
    assert (orphan.status, orphan.runner, orphan.sent_at) == ("queued", "", now)
    assert reap(now + timedelta(seconds=1)) == NONE   # once


def test_a_retry_held_by_a_live_process_is_left_alone_until_it_is_overdue(site_a, now, settings):
    with subprocess.Popen([sys.executable, "-c", THIS_PROCESS + "sys.stdin.read()"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env=django_env()) as process:
        alive = held(site_a, now, process.stdout.readline().strip(), due_ago=-5)
        assert reap(now) == NONE
        # frozen (SIGSTOP), cut off, or its message dropped on a broker reconnect: the retry never comes
        assert reap(now + timedelta(seconds=5 + settings.AUDIT_HELD_GRACE_SECONDS - 1)) == NONE
        later = now + timedelta(seconds=5 + settings.AUDIT_HELD_GRACE_SECONDS + 1)
        assert reap(later) == {**NONE, "orphaned": 1, "resent": 1}
        process.kill()
        process.wait()
    alive.refresh_from_db()
    assert (alive.runner, alive.sent_at) == ("", later)


def test_holding_a_retry_records_the_holder_and_when_it_is_due(site_a, now):
    me = runners.this_process()
    audit = queued(site_a, now, queued_ago=5, sent_ago=5)
    services.mark_held(audit.pk, me, 10)
    audit.refresh_from_db()
    assert audit.runner == me and 9 <= (audit.heartbeat_at - timezone.now()).total_seconds() <= 10
    assert reap(timezone.now()) == NONE
    assert services.claim(audit.pk) == 1          # the retry ran: the claim names its own runner
