"""The reaper's rules and the run's fencing, on the test database with the clock passed in (the
process-level stories are in the other files of this folder).

A run owns its audit by its attempt number: the reaper hands a silent run's row to a new attempt,
and every write of the old run (progress, heartbeat, result, failure) then changes nothing."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.domain.factories import make_facts
from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from workers.celery import app
from workers.tls.engine import ScanOutcome

pytestmark = pytest.mark.django_db
NONE = {"requeued": 0, "failed": 0, "not_started": 0, "resent": 0}


@pytest.fixture
def now():
    return timezone.now()


@pytest.fixture(autouse=True)
def empty_broker():
    """No audit message waits in the (test) broker, as after a Redis restart that lost them."""
    app.control.purge()
    yield
    app.control.purge()  # what the reaper sent here


def running(site, now, *, attempts=1, beat_ago=0, started_ago=None):
    """An audit claimed `attempts` times, its heartbeat `beat_ago` seconds old."""
    started = now - timedelta(seconds=started_ago if started_ago is not None else beat_ago)
    return Audit.objects.create(site=site, organization=site.organization, status="running", attempts=attempts,
                                started_at=started, heartbeat_at=now - timedelta(seconds=beat_ago),
                                progress=[{"name": "resolve", "status": "done", "t": 0.1}])


def queued(site, now, *, queued_ago=0, sent_ago=0):
    return Audit.objects.create(site=site, organization=site.organization, status="queued",
                                queued_at=now - timedelta(seconds=queued_ago), sent_at=now - timedelta(seconds=sent_ago))


def test_a_run_whose_heartbeat_went_silent_for_the_lease_is_requeued(site_a, now, settings):
    silent = running(site_a, now, beat_ago=settings.AUDIT_LEASE_SECONDS + 1)
    assert services.reap_abandoned(now) == {**NONE, "requeued": 1}
    silent.refresh_from_db()
    assert (silent.status, silent.attempts, silent.progress) == ("queued", 1, [])
    assert silent.queued_at == silent.sent_at == now


def test_a_run_that_beats_is_left_alone_however_long_it_runs(site_a, now, settings):
    alive = running(site_a, now, beat_ago=settings.AUDIT_HEARTBEAT_SECONDS, started_ago=200)
    assert services.reap_abandoned(now) == NONE
    alive.refresh_from_db()
    assert alive.status == "running"


def test_a_run_past_the_hard_time_limit_is_reaped_even_without_a_heartbeat(site_a, now, settings):
    # Rows claimed before heartbeats existed have none; the hard limit still bounds them.
    legacy = running(site_a, now, started_ago=settings.AUDIT_HARD_TIME_LIMIT + 61)
    Audit.objects.filter(pk=legacy.pk).update(heartbeat_at=None)
    assert services.reap_abandoned(now)["requeued"] == 1


def test_a_run_lost_a_second_time_fails_with_the_reason_and_the_site_shows_it(site_a, now, settings):
    twice = running(site_a, now, attempts=services.MAX_ATTEMPTS, beat_ago=settings.AUDIT_LEASE_SECONDS + 1)
    assert services.reap_abandoned(now) == {**NONE, "failed": 1}
    twice.refresh_from_db()
    assert (twice.status, twice.error_code) == ("failed", "worker_lost")
    assert twice.error_message == "The audit was interrupted twice (its worker stopped). Please retry."
    site_a.refresh_from_db()
    assert (site_a.last_audit_id, site_a.last_audit_status) == (twice.pk, "failed")


def test_a_queued_audit_whose_message_may_be_lost_is_sent_again_once_per_period(site_a, now, settings):
    waited = settings.AUDIT_RESEND_AFTER_SECONDS + 1
    lost = queued(site_a, now, queued_ago=waited, sent_ago=waited)
    assert services.reap_abandoned(now) == {**NONE, "resent": 1}
    lost.refresh_from_db()
    assert (lost.status, lost.sent_at, lost.queued_at) == ("queued", now, now - timedelta(seconds=waited))
    # The next pass, a minute later, leaves it: its message is fresh.
    assert services.reap_abandoned(now + timedelta(seconds=60)) == NONE


def test_nothing_is_resent_while_audit_messages_wait_in_the_broker(site_a, now, settings):
    # The workers are behind, not the broker: a resend would only add a duplicate to the backlog.
    waited = settings.AUDIT_RESEND_AFTER_SECONDS + 1
    backlog = queued(site_a, now, queued_ago=waited, sent_ago=waited)
    services.send(backlog.pk)
    assert services.reap_abandoned(now) == NONE
    backlog.refresh_from_db()
    assert backlog.sent_at == now - timedelta(seconds=waited)


def test_a_queued_audit_no_worker_took_for_the_queue_timeout_fails_saying_so(site_a, now, settings):
    settings.AUDIT_QUEUE_TIMEOUT_SECONDS = 3 * 3600
    stale = queued(site_a, now, queued_ago=3 * 3600 + 1, sent_ago=60)
    assert services.reap_abandoned(now) == {**NONE, "not_started": 1}
    stale.refresh_from_db()
    assert (stale.status, stale.error_code) == ("failed", "not_started")
    assert stale.error_message == ("No worker started this audit within 3 h: the scan workers are down or "
                                   "overloaded. Please retry later.")


def test_a_fresh_queued_audit_is_neither_resent_nor_failed(site_a, now):
    queued(site_a, now, queued_ago=5, sent_ago=5)
    assert services.reap_abandoned(now) == NONE


def test_the_claim_returns_the_attempt_number_that_fences_the_run(site_a, now, settings):
    audit = queued(site_a, now)
    assert services.claim(audit.pk) == 1
    assert services.claim(audit.pk) is None  # a second delivery loses
    Audit.objects.filter(pk=audit.pk).update(heartbeat_at=now - timedelta(seconds=settings.AUDIT_LEASE_SECONDS + 1))
    assert services.reap_abandoned(now)["requeued"] == 1
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
