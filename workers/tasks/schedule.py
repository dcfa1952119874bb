"""Scheduled audits: beat fires one entry per site; the claim per (site, date) makes retries,
duplicate deliveries and two beats harmless. On the default queue: they only enqueue."""

from tlsaudit.audits import sweep
from tlsaudit.monitoring import schedules
from tlsaudit.orgs.models import Organization
from workers.celery import app
from workers.tasks.transient import DATABASE_DOWN


# The database restarting when beat fires: retry (the claim makes a late second delivery harmless).
@app.task(name="workers.tasks.schedule.run_scheduled_audit", acks_late=True, autoretry_for=DATABASE_DOWN,
          retry_backoff=5, retry_backoff_max=300, max_retries=10)
def run_scheduled_audit(site_id: int) -> str:
    return schedules.run_scheduled(site_id)


@app.task(name="workers.tasks.schedule.catch_up", acks_late=False, expires=600)
def catch_up() -> list[int]:
    return schedules.catch_up()


# Every WAITING_AUDITS_SWEEP_SECONDS: audits past the organization's hourly limit start as the hour frees up.
@app.task(name="workers.tasks.schedule.start_waiting_audits", acks_late=False, expires=120)
def start_waiting_audits() -> int:
    return sweep.start_waiting()


# "Run tonight's audits now" (owners, admins, the API): thousands of claims for a large portfolio, off the request.
@app.task(name="workers.tasks.schedule.run_next_now", acks_late=True, autoretry_for=DATABASE_DOWN,
          retry_backoff=5, retry_backoff_max=300, max_retries=10)
def run_next_now(organization_id: int) -> list[int]:
    org = Organization.objects.filter(pk=organization_id).first()
    return list(schedules.run_next_now(org)) if org else [0, 0]
