"""Periodic housekeeping, on the default queue so it never waits behind scans."""

from workers.celery import app


@app.task(name="workers.tasks.housekeeping.reap_abandoned_audits", acks_late=False, expires=50)
def reap_abandoned_audits() -> dict:
    from tlsaudit.audits.services import reap_abandoned
    from tlsaudit.loadtests.services import reap_abandoned_runs
    from tlsaudit.probes.services import reap_abandoned_probes

    return {**reap_abandoned(), "perf_runs_failed": reap_abandoned_runs(), "probes_failed": reap_abandoned_probes()}
