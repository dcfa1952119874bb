"""The shipped scan pool (threads, the Procfile's flags) through a 20 s Redis stop mid-batch (#35 item 1).

The private Redis runs without persistence: its restart loses every queued message and unacknowledged
delivery. Sixty audits of lab servers, more than the pool's 16 threads, several sites on one address.
Before the fix every scan process exited with kombu's AttributeError within 0.1 s of Redis stopping.
"""

import time
from datetime import datetime, timezone

import pytest

from tests.faults.support import wait_until

pytestmark = pytest.mark.worker
AUDITS = 60
STOPPED_S = 20
FIRST_WITHIN_S = 30


def finished(faults) -> int:
    statuses = faults.sql.statuses()
    return statuses.get("done", 0) + statuses.get("failed", 0)


def test_the_threads_scan_pool_outlives_a_redis_stop_and_every_audit_runs_once(faults, tls_lab):
    names = tls_lab.names("grade")
    plan = [names[i % len(names)] for i in range(AUDITS)]
    scan = faults.app.worker("scan", queues=("scan",), concurrency=16, pool="threads", wait=False, as_shipped=True)
    jobs = faults.app.worker("jobs", queues=("default",), concurrency=2, wait=False, as_shipped=True)
    faults.app.beat(wait=False)
    seeded = faults.app.django(f"from tests.faults.seed import *; "
                               f"emit(lab_audits({str(tls_lab.ca_file)!r}, {[tls_lab.port(n) for n in plan]}, orgs=4))")
    assert len(seeded["audits"]) == AUDITS
    scan.wait_for_output(" ready.", timeout=90)
    # When Redis stops for 20 s once a few audits are done
    wait_until(lambda: finished(faults) >= 4, 300, "4 audits to finish")
    at_stop = faults.sql.statuses()
    faults.redis.stop()
    time.sleep(STOPPED_S)
    assert scan.alive(), scan.output()[-3000:]           # before: "Unrecoverable error: AttributeError"
    faults.redis.start()
    back, back_at = time.monotonic(), datetime.now(timezone.utc)
    # Then the first audit after it ends within 30 s, and every audit ends, done, once
    wait_until(lambda: faults.sql.value("SELECT count(*) FROM audits_audit WHERE finished_at > %s", back_at),
               FIRST_WITHIN_S, f"an audit to finish within {FIRST_WITHIN_S} s of Redis coming back")
    first = time.monotonic() - back
    wait_until(lambda: finished(faults) == AUDITS, 400, "all audits to finish")
    faults.notes.append(f"Redis stopped {STOPPED_S} s at {at_stop}: first audit done {first:.1f} s after it came back, "
                        f"all {AUDITS} {time.monotonic() - back:.0f} s after")
    assert scan.alive() and jobs.alive()
    assert faults.sql.statuses() == {"done": AUDITS}
    assert faults.sql.rows("SELECT audit_id, finding_id FROM audits_auditfinding "
                           "GROUP BY audit_id, finding_id HAVING count(*) > 1") == []
    assert faults.sql.value("SELECT count(DISTINCT site_id) FROM audits_audit") == AUDITS
