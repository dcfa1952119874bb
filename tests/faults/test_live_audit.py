"""A live audit is never run twice (issue #14), however it is shaken while it runs: its message
delivered again, its process paused for most of a lease, PostgreSQL down for twice the lease.

Recovery is fast because the reaper trusts only what it can see: a process gone from /proc, or a
heartbeat silent for the lease *and* for one more heartbeat while the database answered. This runs
with the fault tests' short windows (heartbeat 1 s, lease 4 s, reaper every second: support.env_for),
harsher than production's, against a slow but healthy server (every connection held 1 s).
"""

import os
import signal
import time
from datetime import datetime, timezone

import pytest
import requests

from tests.faults.support import active_tasks, delay_proxy, wait_until
from tests.faults.test_worker_killed import (
    LAB_SERVER,
    assert_one_set_of_results,
    audit_row,
    queue_audit,
    wait_finished,
    wait_running_with_progress,
)

pytestmark = pytest.mark.worker
LEASE_S = 4  # support.env_for's AUDIT_LEASE_SECONDS


def test_a_slow_live_audit_is_never_run_twice_whatever_happens_while_it_runs(faults, tls_lab):
    assert int(faults.env["AUDIT_LEASE_SECONDS"]) == LEASE_S
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=1.0) as slow:
        web, base = faults.app.web()
        worker = faults.app.worker("w1", concurrency=2)
        faults.app.beat()
        site, audit = queue_audit(faults, tls_lab, slow.port)
        wait_running_with_progress(faults, audit)
        child = wait_until(lambda: [t["worker_pid"] for t in active_tasks(faults.env["REDIS_URL"], worker.nodename)
                                    if t["args"] == [audit]], 20, "the worker to report the audit's task")[0]

        # 1. Its message comes back while it runs (kombu restores unacknowledged messages after a broker
        #    connection closed): the delivery sees a live process on the row and leaves it.
        faults.app.django(f"from workers.celery import app; app.send_task('workers.tasks.audit.run_audit', "
                          f"args=[{audit}]); print('{{}}')")
        worker.wait_for_output("'skipped'", timeout=30)
        # 2. Its process freezes for most of a lease (a long GC pause, a VM stopped for a moment).
        os.kill(child, signal.SIGSTOP)
        time.sleep(LEASE_S - 1)
        os.kill(child, signal.SIGCONT)
        # 3. PostgreSQL goes away for twice the lease (a restart, a failover): no heartbeat can be written.
        faults.pg.stop()
        time.sleep(2 * LEASE_S)
        faults.pg.start()
        back, back_at = time.monotonic(), datetime.now(timezone.utc)
        wait_until(lambda: requests.get(f"{base}/healthz", timeout=5).status_code == 200, 60, "the web app")
        web_back = time.monotonic() - back
        wait_until(lambda: faults.sql.value("SELECT heartbeat_at FROM audits_audit WHERE id = %s", audit) > back_at,
                   60, "the audit's heartbeat after PostgreSQL's return")
        beat_back = time.monotonic() - back
        assert audit_row(faults, audit)["status"] == "running"
        slow.delay = 0
        row = wait_finished(faults, audit, timeout=120)

    faults.notes.append(f"RECOVERY PostgreSQL down {2 * LEASE_S} s: web answering {web_back:.1f} s after it was "
                        f"back, the live audit beating again after {beat_back:.1f} s; finished on attempt "
                        f"{row['attempts']}")
    assert (row["status"], row["grade"], row["attempts"]) == ("done", "A+", 1), row
    assert_one_set_of_results(faults, audit, site)
    assert "re-queued" not in worker.output() and "taken over" not in worker.output()
    # The duplicate of step 1 is skipped; on a loaded machine (a busy core beside the suite) a second redundant
    # delivery was seen and skipped too: what matters is that every one was skipped (attempts 1, one result).
    assert worker.output().count("'skipped'") >= 1
