"""Fifty audits while Redis, then PostgreSQL, restart under them (issue #8).

The private Redis runs without persistence, so its restart loses every queued message and every
unacknowledged delivery: the harshest broker failure. The reaper's next pass finds the key it keeps
in Redis gone and resends every queued audit at once (issue #14; before, it waited until their
messages were AUDIT_RESEND_AFTER_SECONDS old, 8 s here and 15 min in production); running audits go
on; a duplicate delivery is skipped by the atomic claim. PostgreSQL's restart is a fast shutdown:
every connection of the worker, beat and reaper is cut mid-way, and no live audit is run twice.
"""

import time

import pytest

from tests.faults.support import wait_until

pytestmark = pytest.mark.worker
AUDITS = 50


def finished(faults) -> int:
    statuses = faults.sql.statuses()
    return statuses.get("done", 0) + statuses.get("failed", 0)


def test_fifty_audits_survive_a_redis_restart_then_a_postgres_restart(faults, tls_lab):
    names = tls_lab.names("grade")
    plan = [names[i % len(names)] for i in range(AUDITS)]  # neighbours differ: two workers rarely share a server;
    # with 4 organizations, the same server never appears twice in one (one site per org, host and port)
    worker = faults.app.worker("w1", concurrency=2, wait=False)  # starting while the audits are queued
    faults.app.beat(wait=False)
    # Given fifty queued audits
    started = time.monotonic()
    seeded = faults.app.django(f"from tests.faults.seed import *; "
                               f"emit(lab_audits({str(tls_lab.ca_file)!r}, {[tls_lab.port(n) for n in plan]}, orgs=4))")
    expected = {site: tls_lab.spec(name).grade for site, name in zip(seeded["sites"], plan)}
    assert len(seeded["audits"]) == AUDITS
    worker.wait_for_output(" ready.", timeout=90)
    # When Redis restarts once some are done (the others queued or running)
    wait_until(lambda: finished(faults) >= 8, 300, "8 audits to finish")
    at_redis = faults.sql.statuses()
    faults.redis.restart()
    # and PostgreSQL restarts once half are done
    wait_until(lambda: finished(faults) >= 25, 300, "25 audits to finish")
    at_postgres = faults.sql.statuses()
    faults.pg.restart()
    # Then every audit ends
    wait_until(lambda: finished(faults) == AUDITS, 400, "all 50 audits to finish")
    elapsed = time.monotonic() - started

    rows = faults.sql.rows("SELECT id, site_id, status, grade, error_code, error_message, attempts FROM audits_audit")
    faults.notes.append(f"50 audits in {elapsed:.0f} s; at the Redis restart {at_redis}, at the PostgreSQL "
                        f"restart {at_postgres}; attempts: {sorted(r[6] for r in rows)}")
    # none lost, none duplicated: one audit per site, each done with its server's grade (or failed, saying why)
    assert len(rows) == AUDITS and sorted(r[1] for r in rows) == sorted(expected)
    for audit, site, status, grade, code, message, _ in rows:
        assert status in ("done", "failed")
        if status == "failed":
            assert code and message, (audit, code, message)
        else:
            assert grade == expected[site], (audit, site, grade)
    # one set of results each
    assert faults.sql.rows("SELECT audit_id, finding_id FROM audits_auditfinding "
                           "GROUP BY audit_id, finding_id HAVING count(*) > 1") == []
    assert faults.sql.rows("SELECT audit_id, protocol, name FROM audits_auditsuite "
                           "GROUP BY audit_id, protocol, name HAVING count(*) > 1") == []
    assert faults.sql.rows("SELECT id FROM audits_audit a WHERE status = 'done' AND NOT EXISTS "
                           "(SELECT 1 FROM audits_auditfinding f WHERE f.audit_id = a.id)") == []
    assert faults.sql.rows("SELECT s.id FROM sites_site s JOIN audits_audit a ON a.site_id = s.id "
                           "WHERE s.last_audit_id IS DISTINCT FROM a.id OR s.last_audit_status <> a.status") == []
    # The targets are healthy: every audit should have been carried through the restarts, each run once.
    assert faults.sql.statuses() == {"done": AUDITS}
    assert {row[6] for row in rows} == {1}
