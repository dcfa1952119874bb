"""A worker SIGKILLed in the middle of an audit (issues #8, #14): the audit runs again within 30 s,
and ends exactly once.

The audit scans a lab server through a relay that holds every connection 0.3 s, so it is still
running when its worker dies. The recovery tests run with the app's own settings (production_timing:
heartbeat 3 s, lease 15 s, reaper every 3 s) and note the time from the kill to the audit running
again (pytest -s shows it, or the report of a failed run):
- a pool child killed (the OOM killer's way): the worker's main process sees it die and Celery
  redelivers its message at once; the row names the dead process, so the redelivery takes over;
- the whole worker killed on this host: the reaper, on another worker, sees that process is gone;
- the whole worker killed in its own pid namespace (as in a container, or on another machine):
  nobody here can see its processes, so the heartbeat's lease decides.
"""

import os
import signal
import time

import pytest

from tests.faults.support import active_tasks, delay_proxy, production_timing, wait_until

pytestmark = pytest.mark.worker
LAB_SERVER = "a_plus_rsa_hsts"
RECOVERY_S = 30  # issue #14: a killed worker's audit runs again within this


def queue_audit(faults, tls_lab, port: int) -> tuple[int, int]:
    """A site of the lab's CA-trusting organization on `port`, and its queued audit: (site, audit)."""
    seeded = faults.app.django(f"from tests.faults.seed import *; emit(lab_audits({str(tls_lab.ca_file)!r}, [{port}]))")
    site = seeded["sites"][0]
    return site, seeded["audits"][str(site)]


def audit_row(faults, audit: int) -> dict:
    columns = ("status", "attempts", "grade", "error_code", "error_message", "started_at", "queued_at", "progress")
    row = faults.sql.rows(f"SELECT {', '.join(columns)} FROM audits_audit WHERE id = %s", audit)[0]
    return dict(zip(columns, row))


def wait_running_with_progress(faults, audit: int) -> dict:
    return wait_until(lambda: (row := audit_row(faults, audit))["status"] == "running" and row["progress"] and row,
                      60, f"audit {audit} to be running a scan")


def wait_finished(faults, audit: int, timeout: float = 90) -> dict:
    return wait_until(lambda: (row := audit_row(faults, audit))["status"] in ("done", "failed") and row,
                      timeout, f"audit {audit} to finish")


def assert_one_set_of_results(faults, audit: int, site: int) -> None:
    assert faults.sql.value("SELECT count(*) FROM audits_audit WHERE site_id = %s", site) == 1
    duplicated = faults.sql.rows("SELECT finding_id FROM audits_auditfinding WHERE audit_id = %s "
                                 "GROUP BY finding_id HAVING count(*) > 1", audit)
    assert duplicated == []
    assert faults.sql.value("SELECT count(*) FROM audits_auditfinding WHERE audit_id = %s", audit) > 10
    assert faults.sql.rows("SELECT protocol, name FROM audits_auditsuite WHERE audit_id = %s "
                           "GROUP BY protocol, name HAVING count(*) > 1", audit) == []
    assert faults.sql.value("SELECT count(*) FROM audits_auditcertificate WHERE audit_id = %s AND position = 0",
                            audit) == 1
    assert faults.sql.rows("SELECT last_audit_id, last_grade, last_audit_status FROM sites_site WHERE id = %s",
                           site) == [(audit, "A+", "done")]
    assert faults.sql.statuses() == {"done": 1}  # nothing left queued or running


def wait_running_again(faults, audit: int, killed: float, what: str) -> float:
    """Seconds from the kill until a second attempt claimed the audit; noted for the report."""
    wait_until(lambda: (row := audit_row(faults, audit))["attempts"] == 2 and row["status"] != "queued", RECOVERY_S,
               f"audit {audit} to run again within {RECOVERY_S} s of the kill", interval=0.05)
    recovery = time.monotonic() - killed
    faults.notes.append(f"RECOVERY {what}: audit running again {recovery:.1f} s after the kill")
    return recovery


def test_a_pool_child_killed_mid_audit_is_taken_over_by_its_redelivered_message(faults, tls_lab):
    production_timing(faults.env)
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.3) as slow:
        worker = faults.app.worker("w1", concurrency=1, wait=False)  # they start while the audit is queued
        faults.app.beat(wait=False)
        site, audit = queue_audit(faults, tls_lab, slow.port)
        # Given the audit running on the worker's one pool child
        wait_running_with_progress(faults, audit)
        running = wait_until(lambda: [t for t in active_tasks(faults.env["REDIS_URL"], worker.nodename)
                                      if t["args"] == [audit]], 20, "the worker to report the audit's task")
        child = running[0]["worker_pid"]
        assert child in worker.children()
        # When that child is SIGKILLed (the OOM killer's way) and the server is fast again
        os.kill(child, signal.SIGKILL)
        killed = time.monotonic()
        slow.delay = 0
        # Then the worker's new child runs it again at once, not a lease later, and it completes once
        assert wait_running_again(faults, audit, killed, "pool child SIGKILL") < 10
        row = wait_finished(faults, audit)
    assert (row["status"], row["grade"], row["attempts"]) == ("done", "A+", 2), row
    assert_one_set_of_results(faults, audit, site)
    assert worker.alive() and child not in worker.children()
    assert "WorkerLostError" in worker.output() or "signal 9" in worker.output()
    # Seen dead at once by its redelivered message, or by the reaper's next look at /proc: not a lease later.
    assert ("taken over by its redelivered message" in worker.output()
            or "lost its worker; re-queued" in worker.output())


@pytest.mark.parametrize("where", ["this host", "its own pid namespace"])
def test_a_worker_killed_whole_has_its_audit_run_again_by_another_worker(faults, tls_lab, where):
    production_timing(faults.env)
    isolated = where != "this host"
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.3) as slow:
        first = faults.app.worker("w1", concurrency=1, wait=False, container=isolated)
        faults.app.beat(wait=False)
        site, audit = queue_audit(faults, tls_lab, slow.port)
        wait_running_with_progress(faults, audit)
        runner = faults.sql.value("SELECT runner FROM audits_audit WHERE id = %s", audit)
        assert (runner.split(" ")[2] != os.readlink("/proc/self/ns/pid")) == isolated, runner
        faults.app.worker("w2", concurrency=1)  # the other worker, up before the fault
        # When the whole first worker (main process and pool) dies at once, as with a lost machine
        first.kill()
        killed = time.monotonic()
        slow.delay = 0
        # Then the other one runs the audit again within RECOVERY_S, and it completes once
        wait_running_again(faults, audit, killed, f"whole worker SIGKILL, {where}")
        row = wait_finished(faults, audit)
    assert (row["status"], row["grade"], row["attempts"]) == ("done", "A+", 2), row
    assert_one_set_of_results(faults, audit, site)


def test_an_audit_whose_worker_never_comes_back_is_requeued_once_then_fails_with_a_reason(faults, tls_lab):
    faults.env["AUDIT_QUEUE_TIMEOUT_SECONDS"] = "6"  # no scan worker takes it for 6 s: give up
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.3) as slow:
        scanner = faults.app.worker("scanner", queues=("scan",), concurrency=1, wait=False)
        housekeeper = faults.app.worker("housekeeper", queues=("default",), concurrency=1, wait=False)
        faults.app.beat(wait=False)
        # The reaper's first pass on this fresh Redis finds it new (it may have lost messages) and resends what
        # is queued: let it happen before the audit exists, as in a deployment that has been running.
        housekeeper.wait_for_output("'others_resent'", timeout=90)
        site, audit = queue_audit(faults, tls_lab, slow.port)
        started = wait_running_with_progress(faults, audit)
        scanner.kill()
        # The reaper re-queues it once...
        requeued = wait_until(lambda: (row := audit_row(faults, audit))["status"] == "queued" and row, 30,
                              "the reaper to re-queue the audit")
        assert requeued["queued_at"] > started["started_at"] and requeued["attempts"] == 1
        # ...and, no scan worker coming back, fails it with the reason.
        row = wait_finished(faults, audit, timeout=30)
    assert (row["status"], row["error_code"], row["attempts"]) == ("failed", "not_started", 1), row
    assert row["error_message"] == ("No worker started this audit within 6 s: the scan workers are down or "
                                    "overloaded. Please retry later.")
    # One message waits in the scan queue: the re-queue's (the first delivery is unacknowledged, not queued).
    assert faults.redis.client().llen("scan") == 1
    assert faults.sql.rows("SELECT last_audit_status FROM sites_site WHERE id = %s", site) == [("failed",)]
