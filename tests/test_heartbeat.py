"""A worker process beats all its running audits from one thread (workers/tasks/heartbeat.py), on the
real database: every audit's row, one statement for all, none for a run that lost its row, and no
connection held once the process runs no audit."""

from contextlib import ExitStack

import pytest
from django.db import connection
from django.utils import timezone

from tests.faults.support import wait_until
from tests.support.sites import added_site
from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from workers.tasks.heartbeat import heartbeats, keep_alive

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def every_second(settings):
    settings.AUDIT_HEARTBEAT_SECONDS = 1


def claimed(org, count: int) -> list[tuple[int, int]]:
    runs = []
    for index in range(count):
        site = added_site(organization=org, hostname=f"beat{index}.example.com")
        audit = Audit.objects.create(site=site, organization=org)
        runs.append((audit.pk, services.claim(audit.pk)))
    return runs


def beats(runs) -> dict[int, object]:
    return dict(Audit.objects.filter(pk__in=[pk for pk, _ in runs]).values_list("pk", "heartbeat_at"))


def heartbeat_backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def test_it_beats_every_running_audit_of_the_process(org_a):
    runs = claimed(org_a, 3)
    started = timezone.now()
    with ExitStack() as stack:
        for audit_id, attempt in runs:
            stack.enter_context(keep_alive(audit_id, attempt, [f"tlsaudit:test-lock:{audit_id}"], f"{audit_id}"))
        wait_until(lambda: all(beat > started for beat in beats(runs).values()), 10, "a beat of all three")


def test_a_run_that_lost_its_row_is_no_longer_beaten(org_a):
    (lost, attempt), (kept, kept_attempt) = claimed(org_a, 2)
    with (keep_alive(lost, attempt, ["tlsaudit:test-lock:lost"], f"{lost}"),
          keep_alive(kept, kept_attempt, ["tlsaudit:test-lock:kept"], f"{kept}")):
        Audit.objects.filter(pk=lost).update(status=Audit.Status.QUEUED)  # the reaper re-queued it
        wait_until(lambda: lost not in heartbeats().runs, 10, "the lost run to be dropped")
        frozen = beats([(lost, attempt)])[lost]
        # two later beats of the kept run: the thread has gone round since it dropped the lost one
        for _ in range(2):
            last = beats([(kept, kept_attempt)])[kept]
            wait_until(lambda last=last: beats([(kept, kept_attempt)])[kept] > last, 10, "a later beat of the kept run")
        assert beats([(lost, attempt)])[lost] == frozen
        assert kept in heartbeats().runs


def test_an_idle_process_holds_no_database_connection(org_a):
    (audit_id, attempt), = claimed(org_a, 1)
    before = heartbeat_backends()
    with keep_alive(audit_id, attempt, ["tlsaudit:test-lock:idle"], f"{audit_id}"):
        wait_until(lambda: heartbeat_backends() == before + 1, 10, "the heartbeat thread's connection")
    wait_until(lambda: heartbeat_backends() == before, 5, "the heartbeat thread to close its connection")
