"""Liveness: `ping` answers, `heartbeat` (run by beat) records that a worker is alive."""

from tlsaudit.core.models import WorkerHeartbeat
from workers.celery import app


@app.task(name="workers.tasks.ping.ping", acks_late=False)
def ping(token: str = "") -> str:
    """Record the token in the database so a caller can see a worker ran it."""
    WorkerHeartbeat.record(token or "ping")
    return "pong"


@app.task(name="workers.tasks.ping.heartbeat", acks_late=False, expires=30)
def heartbeat() -> None:
    WorkerHeartbeat.record("heartbeat")
