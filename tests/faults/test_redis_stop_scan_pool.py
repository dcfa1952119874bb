"""The shipped scan pool (threads) through a Redis stop of 20 s mid-batch (issue #35 item 1)."""

import time

import pytest

from tests.faults.support import wait_until

pytestmark = pytest.mark.worker
AUDITS = 40


def finished(faults) -> int:
    statuses = faults.sql.statuses()
    return statuses.get("done", 0) + statuses.get("failed", 0)


def test_the_threads_scan_pool_outlives_a_redis_stop_mid_batch(faults, tls_lab):
    names = tls_lab.names("grade")
    plan = [names[i % len(names)] for i in range(AUDITS)]
    worker = faults.app.worker("scan", queues=("scan",), concurrency=16, pool="threads", wait=False,
                               as_shipped=True)
    jobs = faults.app.worker("jobs", queues=("default",), concurrency=2, wait=False, as_shipped=True)
    faults.app.beat(wait=False)
    seeded = faults.app.django(f"from tests.faults.seed import *; "
                               f"emit(lab_audits({str(tls_lab.ca_file)!r}, {[tls_lab.port(n) for n in plan]}, orgs=4))")
    assert len(seeded["audits"]) == AUDITS
    worker.wait_for_output(" ready.", timeout=90)
    wait_until(lambda: finished(faults) >= 4, 300, "4 audits to finish")
    faults.redis.stop()
    time.sleep(20)
    faults.redis.start()
    back = time.monotonic()
    wait_until(lambda: finished(faults) == AUDITS, 400, "all audits to finish")
    faults.notes.append(f"all {AUDITS} done {time.monotonic() - back:.0f} s after Redis came back; "
                        f"worker alive: {worker.process.poll() is None}")
    assert worker.process.poll() is None, worker.log.read_text()[-3000:]
    assert jobs.process.poll() is None
