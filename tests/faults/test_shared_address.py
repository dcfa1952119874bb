"""Sites that share an address, through Celery (#27 item 1): two scan processes as shipped (threads, the
Procfile's flags), fifteen sites on one address, each audit with a 10 s deadline. Before, the audits
shared the address's 5 connections per process until all of them ran out of time; now one audit of the
address runs at a time in the whole fleet, the others wait in line before their deadline starts, and
the address never sees more than 5 of our connections (counted at the server, by a relay)."""

import pytest

from tests.faults.support import wait_until
from tests.support.relay import counting_relay

pytestmark = pytest.mark.worker
SITES = 15


def test_fifteen_sites_on_one_address_through_two_scan_processes_all_graded_within_five_connections(faults, tls_lab):
    names = tls_lab.names("grade")
    plan = [names[i % len(names)] for i in range(SITES)]
    faults.env["AUDIT_DEADLINE_SECONDS"] = "10"
    with counting_relay([tls_lab.port(name) for name in plan]) as relay:
        first = faults.app.worker("scan1", queues=("scan",), concurrency=16, pool="threads", wait=False,
                                  as_shipped=True)
        second = faults.app.worker("scan2", queues=("scan",), concurrency=16, pool="threads", wait=False,
                                   as_shipped=True)
        faults.app.worker("jobs", queues=("default",), concurrency=2, wait=False, as_shipped=True)
        faults.app.beat(wait=False)
        for worker in (first, second):
            worker.wait_for_output(" ready.", timeout=90)
        seeded = faults.app.django(f"from tests.faults.seed import *; "
                                   f"emit(lab_audits({str(tls_lab.ca_file)!r}, {relay.ports()}, orgs=3))")
        audits = [seeded["audits"][str(site)] for site in seeded["sites"]]
        # While they run, the ones in line say so, and that their deadline has not started
        notes = set()

        def all_finished() -> bool:
            notes.update(note for (note,) in faults.sql.rows(
                "SELECT turn_note FROM audits_audit WHERE status = 'queued' AND turn_note <> ''"))
            statuses = faults.sql.statuses()
            return statuses.get("done", 0) + statuses.get("failed", 0) == SITES

        wait_until(all_finished, SITES * 15 + 60, "all audits to finish")
        runners = {runner.split(" ")[-2] for (runner,) in faults.sql.rows("SELECT runner FROM audits_audit") if runner}
    rows = {audit: faults.sql.rows("SELECT status, grade, error_code, error_message FROM audits_audit WHERE id = %s",
                                   audit)[0] for audit in audits}
    for name, audit in zip(plan, audits):
        assert rows[audit][:3] == ("done", tls_lab.spec(name).grade, ""), (name, rows[audit])
    assert len(runners) == 2                           # both scan processes ran audits of the address
    assert relay.total > SITES * 60   # each audit went through the relay (~90-120 connections each)
    assert relay.peak <= 5 + 1, relay.peak             # the relay's count: within the connection in flight
    assert notes and all("Waiting for its turn at 127.0.0.1" in note and "deadline starts with its turn" in note
                         for note in notes), notes
    faults.notes.append(f"SHARED ADDRESS: {SITES} audits through 2 scan processes, peak {relay.peak} connections "
                        f"at the server, {relay.total} connections")
