"""A worker SIGKILLed in the middle of an audit (issue #8): the audit still ends exactly once.

The audit scans a lab server through a relay that holds every connection 0.3 s, so it is still
running when its worker dies. Beat runs the reaper every second, and a run's heartbeat lease is 4 s
(see support.env_for): recovery takes seconds here, about two minutes with production settings.
"""

import os
import signal

import pytest

from tests.faults.support import active_tasks, delay_proxy, wait_until

pytestmark = pytest.mark.worker
LAB_SERVER = "a_plus_rsa_hsts"


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


def test_a_pool_child_killed_mid_audit_is_requeued_once_and_the_audit_completes(faults, tls_lab):
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
        slow.delay = 0
        # Then the worker's new child runs it again, once, and it completes
        row = wait_finished(faults, audit)
    assert (row["status"], row["grade"], row["attempts"]) == ("done", "A+", 2), row
    assert_one_set_of_results(faults, audit, site)
    assert worker.alive() and child not in worker.children()
    assert "WorkerLostError" in worker.output() or "signal 9" in worker.output()
    assert "lost its worker; re-queued" in worker.output()  # the reaper's doing, not a lucky redelivery


def test_a_worker_killed_whole_is_recovered_by_a_new_worker(faults, tls_lab):
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.3) as slow:
        first = faults.app.worker("w1", concurrency=1, wait=False)
        faults.app.beat(wait=False)
        site, audit = queue_audit(faults, tls_lab, slow.port)
        wait_running_with_progress(faults, audit)
        # When the whole worker (main process and pool) dies at once, as with a lost machine
        first.kill()
        slow.delay = 0
        # and a new worker starts
        faults.app.worker("w2", concurrency=1)
        row = wait_finished(faults, audit)
    assert (row["status"], row["grade"], row["attempts"]) == ("done", "A+", 2), row
    assert_one_set_of_results(faults, audit, site)


def test_an_audit_whose_worker_never_comes_back_is_requeued_once_then_fails_with_a_reason(faults, tls_lab):
    faults.env["AUDIT_QUEUE_TIMEOUT_SECONDS"] = "6"  # no scan worker takes it for 6 s: give up
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.3) as slow:
        scanner = faults.app.worker("scanner", queues=("scan",), concurrency=1, wait=False)
        faults.app.worker("housekeeper", queues=("default",), concurrency=1, wait=False)
        faults.app.beat(wait=False)
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
