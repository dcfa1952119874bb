"""The scan pool (issue #16): one worker process (Celery's threads pool) runs several audits at once.
SIGKILLed with all of them in flight, every one of its audits runs again on another worker and ends
exactly once, with its own grade.

Each audit scans its own lab server through a relay that holds every connection 0.3 s, so all of them
are still running when the pool dies. The whole process dies with them (unlike prefork, there is no
parent to redeliver a child's message): the reaper finds the process gone (core.runners) and re-queues.
"""

import time
from contextlib import ExitStack

import pytest

from tests.faults.support import delay_proxy, production_timing, wait_until
from tests.faults.test_worker_killed import audit_row, wait_finished, wait_running_with_progress

pytestmark = pytest.mark.worker
SERVERS = ("a_plus_rsa_hsts", "b_tls10_enabled", "a_minus_tls12_only")


def three_audits_of_one_address_at_once(env: dict) -> None:
    """The lab's servers share 127.0.0.1, where one audit at a time is the default (#27): these tests need
    three in flight in one process, so they allow three, as an operator may for a server that takes it."""
    env["SCAN_AUDITS_PER_IP"] = str(len(SERVERS))


def test_a_scan_pool_killed_with_three_audits_in_flight_has_each_run_again_once(faults, tls_lab):
    production_timing(faults.env)
    three_audits_of_one_address_at_once(faults.env)
    with ExitStack() as stack:
        relays = [stack.enter_context(delay_proxy(tls_lab.port(name), delay=0.3)) for name in SERVERS]
        pool = faults.app.worker("pool", queues=("scan",), concurrency=4, pool="threads", wait=False)
        faults.app.worker("housekeeper", queues=("default",), concurrency=1, wait=False)
        faults.app.beat(wait=False)
        ports = ", ".join(str(relay.port) for relay in relays)
        seeded = faults.app.django(f"from tests.faults.seed import *; "
                                   f"emit(lab_audits({str(tls_lab.ca_file)!r}, [{ports}]))")
        audits = [seeded["audits"][str(site)] for site in seeded["sites"]]
        # Given three audits running at once in the pool's one process
        for audit in audits:
            wait_running_with_progress(faults, audit)
        runners = {faults.sql.value("SELECT runner FROM audits_audit WHERE id = %s", audit) for audit in audits}
        assert len(runners) == 1 and pool.popen.pid == int(runners.pop().split(" ")[-2])
        # When that process is SIGKILLed, and another scan worker is up, and the servers are fast again
        pool.kill()
        killed = time.monotonic()
        for relay in relays:
            relay.delay = 0
        faults.app.worker("second", queues=("scan",), concurrency=4, pool="threads", wait=False)
        # Then the reaper re-queues all three and each completes once, with its own server's grade
        rows = [wait_finished(faults, audit, timeout=120) for audit in audits]
        faults.notes.append(f"RECOVERY scan pool SIGKILL: 3 audits done {time.monotonic() - killed:.1f} s after")
    for name, audit, row in zip(SERVERS, audits, rows):
        assert (row["status"], row["grade"], row["attempts"]) == ("done", tls_lab.spec(name).grade, 2), (name, row)
        assert faults.sql.value("SELECT count(*) FROM audits_auditcertificate WHERE audit_id = %s AND position = 0",
                                audit) == 1
        assert audit_row(faults, audit)["status"] == "done"
    assert faults.sql.statuses() == {"done": 3}


def test_a_scan_pool_thread_holds_a_database_connection_only_while_its_audit_runs(faults, tls_lab):
    """Each pool thread opens its own PostgreSQL connection (Django's are per thread): 64 idle threads x
    N processes must not pin 64 x N connections. Celery's Django fix-up closes the task thread's
    connections after every task, and the heartbeat thread closes its own when no audit is left to beat."""
    production_timing(faults.env)
    three_audits_of_one_address_at_once(faults.env)
    with ExitStack() as stack:
        relays = [stack.enter_context(delay_proxy(tls_lab.port(name), delay=0.3)) for name in SERVERS]
        faults.app.worker("pool", queues=("scan",), concurrency=8, pool="threads", wait=True)
        ports = ", ".join(str(relay.port) for relay in relays)
        seeded = faults.app.django(f"from tests.faults.seed import *; "
                                   f"emit(lab_audits({str(tls_lab.ca_file)!r}, [{ports}]))")
        audits = [seeded["audits"][str(site)] for site in seeded["sites"]]
        # Given three audits running at once in one pool process of 8 threads
        for audit in audits:
            wait_running_with_progress(faults, audit)
        during = worker_connections(faults)
        # When the servers answer at once again (0.3 s a connection would outlast the deadline) and all three are done
        for relay in relays:
            relay.delay = 0
        rows = [wait_finished(faults, audit, timeout=120) for audit in audits]
        # Then the process gives back every connection: none for the idle threads, none for the heartbeat
        wait_until(lambda: worker_connections(faults) == 0, 30,
                   lambda: f"the idle pool to close its connections ({worker_connections(faults)} still open)")
    assert [row["status"] for row in rows] == ["done"] * 3, rows
    assert 3 <= during <= 3 + 1, during  # one per running audit, and the heartbeat's


def worker_connections(faults) -> int:
    """Client connections to the test's database other than ours (the pool worker is the only other client)."""
    return faults.sql.value("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
