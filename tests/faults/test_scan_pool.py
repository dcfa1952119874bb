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

from tests.faults.support import delay_proxy, production_timing
from tests.faults.test_worker_killed import audit_row, wait_finished, wait_running_with_progress

pytestmark = pytest.mark.worker
SERVERS = ("a_plus_rsa_hsts", "b_tls10_enabled", "a_minus_tls12_only")


def test_a_scan_pool_killed_with_three_audits_in_flight_has_each_run_again_once(faults, tls_lab):
    production_timing(faults.env)
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
