"""A load run's start task SIGKILLed between taking the target lock and claiming the run (outside
review of core.locks): its redelivered message takes the dead process's lock over at once and runs
the load, instead of waiting on a lock nobody will release and ending "busy".

The window is made real and exact: the test holds the run's row lock, so the start task's claim
(one UPDATE) waits while its target lock is held; then its pool child is killed. The dead child's
UPDATE is cancelled with its PostgreSQL backend (a client that died mid-statement), then the row is
let go; the worker's parent has already redelivered the message (task_reject_on_worker_lost)."""

import os
import pickle  # noqa: S403  reading back what the app's own cache wrote to its private Redis
import signal

import psycopg
import pytest

from tests.faults.support import active_tasks, wait_until

pytestmark = pytest.mark.worker
LAB = "load_no_resumption"
PARAMS = {"requests": 20, "concurrency": 2, "path": "/health", "repeats": 1}


def run_row(faults, run: int) -> dict:
    columns = ("status", "error_code", "error_message", "lock_keys", "results")
    return dict(zip(columns, faults.sql.rows(f"SELECT {', '.join(columns)} FROM loadtests_perfrun WHERE id = %s",
                                             run)[0]))


def test_a_start_task_killed_between_its_lock_and_its_claim_is_taken_over_by_its_redelivery(faults, tls_lab):
    seeded = faults.app.django("from tests.faults.seed import *; "
                               f"emit(lab_load_run({str(tls_lab.ca_file)!r}, {tls_lab.port(LAB)}, "
                               f"{tls_lab.http_port(LAB)}, {PARAMS!r}))")
    run, (lock,) = seeded["run"], seeded["locks"]
    redis = faults.redis.client()
    with psycopg.connect(faults.pg.dsn(faults.dbname), autocommit=False) as row_lock:
        row_lock.execute("SELECT id FROM loadtests_perfrun WHERE id = %s FOR UPDATE", [run])
        ours = row_lock.execute("SELECT pg_backend_pid()").fetchone()[0]
        worker = faults.app.worker("loads", queues=("load",), concurrency=2)
        # Given the start task holding the target lock and waiting on its claim
        blocked = wait_until(lambda: faults.sql.rows("SELECT pid FROM pg_stat_activity WHERE %s = ANY("
                                                     "pg_blocking_pids(pid))", ours),
                             60, "the start task's claim to wait on the row")
        starting = wait_until(lambda: [t for t in active_tasks(faults.env["REDIS_URL"], worker.nodename)
                                       if t["args"] == [run]], 20, "the worker to report the start task")
        child = starting[0]["worker_pid"]
        holder = pickle.loads(redis.get(f":1:{lock}"))  # noqa: S301
        assert holder.startswith(f"{run}.") and f" {child} " in holder, holder  # its process holds it
        # When its pool child is SIGKILLed there (its claim never lands: its backend goes with it)
        os.kill(child, signal.SIGKILL)
        row_lock.execute("SELECT pg_terminate_backend(%s)", [blocked[0][0]])
        row_lock.rollback()
        # Then the redelivered message takes the dead child's lock over and the run loads the server
        row = wait_until(lambda: (row := run_row(faults, run))["status"] in ("done", "failed", "cancelled") and row,
                         90, f"run {run} to finish")
    assert (row["status"], row["error_code"]) == ("done", ""), row["error_message"]
    assert row["lock_keys"] == [lock] and len(row["results"]) == 2   # the warm-up and one repeat
    assert redis.exists(f":1:{lock}") == 0                           # and its end released the lock
    assert "WorkerLostError" in worker.output() or "signal 9" in worker.output()
