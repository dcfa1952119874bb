"""Beat restarted twice around a site's nightly time queues one audit (issue #8).

The real beat (django-celery-beat's DatabaseScheduler, reading the site's PeriodicTask from the
database) runs on a clock moved to a few seconds before the site's due minute with time-machine (in
the beat process only; the worker keeps the real clock), so the night comes in seconds:

1. beat #1 starts a minute before the due time and is stopped before it (SIGTERM, as a deploy does);
2. beat #2 starts 6 s before it, fires the entry at the due time, and is SIGKILLed right after,
   before it saved the entry's new last_run_at (beat saves every 3 minutes, and once after the first
   task it sends: the reaper's, a second after it starts);
3. beat #3 starts after the due time, reads yesterday's last_run_at from the database and fires the
   entry again.

The second delivery meets the (site, date) claim, a unique ScheduledRun row, and does nothing.
"""

import math
import signal
import time
from datetime import datetime, timezone

import pytest

from tests.faults.support import wait_until

pytestmark = pytest.mark.worker
# Beat on a clock that starts at FAKE_CLOCK_START (epoch seconds) and ticks.
FAKE_CLOCK_BEAT = """\
import os, sys
import time_machine
time_machine.travel(float(os.environ["FAKE_CLOCK_START"]), tick=True).start()
from celery.__main__ import main
sys.argv = ["celery", *sys.argv[1:]]
main()
"""


def test_beat_restarted_twice_around_the_due_time_queues_one_nightly_audit(faults, tls_lab):
    # The due time: the next whole minute (cron's resolution): beats' clocks stay within a minute of the real one.
    due = math.ceil(time.time() / 60) * 60
    worker = faults.app.worker("w1", concurrency=2, wait=False)  # starts while the site is created
    seeded = faults.app.django(
        f"from tests.faults.seed import *; site = lab_sites({str(tls_lab.ca_file)!r}, "
        f"[{tls_lab.port('a_plus_rsa_hsts')}], schedules=True)['sites'][0]; "
        f"emit({{'site': site, **nightly_at(site, {datetime.fromtimestamp(due, timezone.utc).isoformat()!r})}})")
    site = seeded["site"]
    entry = f"scheduled audit of site {site}"

    # 1. a beat that is restarted (gracefully) before the due time
    first = faults.app.beat("beat1", python_code=FAKE_CLOCK_BEAT, FAKE_CLOCK_START=due - 60)
    # Stopped once it ticks: a SIGTERM during its start-up queries is swallowed (celery's handler saves
    # the schedule on the connection the interrupted query holds, the error is logged, beat runs on).
    first.wait_for_output("Sending due task reap-abandoned-audits", timeout=30)
    first.stop(signal.SIGTERM, timeout=15)
    assert f"Sending due task {entry}" not in first.output()
    # 2. the next one fires at the due time, and dies at once
    second = faults.app.beat("beat2", python_code=FAKE_CLOCK_BEAT, FAKE_CLOCK_START=due - 6)
    second.wait_for_output(f"Sending due task {entry}", timeout=40)
    second.kill()
    assert second.output().index("beat: Starting") < second.output().index(f"Sending due task {entry}")
    # 3. the third reads yesterday's last run from the database and fires again
    third = faults.app.beat("beat3", python_code=FAKE_CLOCK_BEAT, FAKE_CLOCK_START=due + 2)
    third.wait_for_output(f"Sending due task {entry}", timeout=30)

    # The worker saw two deliveries: one queued the audit, the other met the claim.
    worker.wait_for_output("'duplicate'", timeout=60)
    assert (worker.output().count("'queued'"), worker.output().count("'duplicate'")) == (1, 1)
    audit = wait_until(lambda: faults.sql.rows("SELECT id, status, trigger, grade FROM audits_audit "
                                               "WHERE site_id = %s AND status IN ('done', 'failed')", site),
                       60, "the nightly audit to finish")
    assert faults.sql.rows("SELECT count(*) FROM audits_audit WHERE site_id = %s", site) == [(1,)]
    assert [row[1:] for row in audit] == [("done", "schedule", "A+")]
    runs = faults.sql.rows("SELECT run_date, audit_id, caught_up FROM monitoring_scheduledrun WHERE site_id = %s",
                           site)
    assert runs == [(datetime.now(timezone.utc).date(), audit[0][0], False)]
