"""An audit's progress on its row: ~50 events, most in bursts (sslyze's 18 commands at once), from
several threads. Written at most once per interval; what is left is written at the end."""

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tlsaudit.audits import services
from tlsaudit.audits.models import Audit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def running_audit(site_a):
    audit = Audit.objects.create(site=site_a, organization=site_a.organization, host=site_a.hostname, port=443)
    attempt = services.claim(audit.pk)
    return audit, attempt


def progress_of(audit) -> list[str]:
    return [event["name"] for event in Audit.objects.get(pk=audit.pk).progress]


def updates(queries) -> int:
    return sum(q["sql"].startswith("UPDATE") for q in queries.captured_queries)


def test_a_burst_of_events_is_one_write_and_the_rest_is_written_by_flush(running_audit):
    audit, attempt = running_audit
    progress = services.ProgressRecorder(audit.pk, attempt, min_interval_s=3600)
    commands = [f"command_{i}" for i in range(18)]
    # Given sslyze's 18 commands reported at once
    with CaptureQueriesContext(connection) as queries:
        for name in commands:
            progress(name, "done")
    # Then the row was written once (the first event shows at once), not 18 times
    assert updates(queries) == 1
    assert progress_of(audit) == ["command_0"]
    # When the scan is over, flush writes every event, in order, and a second flush writes nothing
    progress.flush()
    assert progress_of(audit) == commands
    with CaptureQueriesContext(connection) as queries:
        progress.flush()
    assert updates(queries) == 0


def test_with_no_interval_every_event_is_written_as_it_comes(running_audit):
    audit, attempt = running_audit
    progress = services.ProgressRecorder(audit.pk, attempt, min_interval_s=0)
    with CaptureQueriesContext(connection) as queries:
        for name in ("resolve", "reachability", "sslyze"):
            progress(name, "started")
    assert updates(queries) == 3 and progress_of(audit) == ["resolve", "reachability", "sslyze"]


def test_events_from_other_threads_are_kept_and_their_connections_closed(running_audit):
    audit, attempt = running_audit
    progress = services.ProgressRecorder(audit.pk, attempt, min_interval_s=0)
    opened = []

    def sslyze_thread(name):
        progress(name, "done")
        opened.append(connection.connection is not None)  # this thread's own connection, closed after the write

    threads = [threading.Thread(target=sslyze_thread, args=(f"probe_{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(progress_of(audit)) == [f"probe_{i}" for i in range(4)] and opened == [False] * 4


def test_a_run_that_lost_its_row_writes_no_progress(running_audit):
    audit, attempt = running_audit
    Audit.objects.filter(pk=audit.pk).update(attempts=attempt + 1)  # the reaper gave the row to a new run
    progress = services.ProgressRecorder(audit.pk, attempt, min_interval_s=0)
    progress("sslyze", "started")
    progress.flush()
    assert progress_of(audit) == []
