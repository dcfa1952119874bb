"""The audit task: thin glue between the Audit row and the scan engine (its opening: gate.py)."""

import logging
import tempfile
import time
from contextlib import contextmanager

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection
from redis.exceptions import RedisError

from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from tlsaudit.core import runners
from workers.celery import app
from workers.tasks import gate
from workers.tasks.heartbeat import keep_alive
from workers.tasks.transient import DATABASE_DOWN
from workers.tls.engine import run_scan

log = logging.getLogger(__name__)
# A scan result in hand is worth waiting for while PostgreSQL restarts; after this, the reaper re-runs it.
STORE_RETRY_SECONDS = 60


# PostgreSQL or Redis unreachable before the claim: the row is still queued, so try again later.
@app.task(name="workers.tasks.audit.run_audit", bind=True, acks_late=True, max_retries=60,
          autoretry_for=(*DATABASE_DOWN, RedisError), retry_backoff=2, retry_backoff_max=60,
          soft_time_limit=settings.AUDIT_SOFT_TIME_LIMIT, time_limit=settings.AUDIT_HARD_TIME_LIMIT)
@gate.opening
def run_audit(self, audit_id: int) -> str:
    """1. load the queued audit (taking over a redelivered run whose process died), 2. resolve and
    check the target, 3. lock its ip:port for one lease, 4. claim the row atomically (the attempt
    number fences this run's writes), 5. scan, grade and store, beating the row's heartbeat and
    extending the lock meanwhile, 6. release the lock."""
    audit = gate.queued(Audit, audit_id, take_over=services.take_over)
    target = gate.resolved(audit, services.fail)
    holder = gate.holder_of(audit_id)
    with gate.target_lock("scan", target.ip, [target.port], holder, settings.AUDIT_LEASE_SECONDS) as lock:
        if not lock:
            # this delivery lives on as the retry, held here: see services.mark_held
            services.mark_held(audit_id, runners.this_process(), settings.AUDIT_LOCK_WAIT_SECONDS)
            gate.wait_for_target(self, settings.AUDIT_LOCK_WAIT_SECONDS)  # another audit of this server is running
        attempt = services.claim(audit_id)
        if not attempt:
            return gate.SKIPPED
        with keep_alive(audit_id, attempt, lock.keys, lock.holder):
            return scan_and_store(audit, target, attempt)


def scan_and_store(audit, target, attempt: int) -> str:
    progress = services.ProgressRecorder(audit.pk, attempt)
    try:
        with ca_file_for(audit.site.organization) as ca_file:
            outcome = run_scan(target.host, target.port, ip=target.ip, ca_file=ca_file,
                               allow_private=settings.ALLOW_PRIVATE_TARGETS,
                               on_progress=progress,
                               network_timeout=settings.SCAN_NETWORK_TIMEOUT, max_retries=1,
                               per_server_connections=settings.SCAN_CONNECTIONS_PER_SERVER,
                               resolver=settings.DNS_RESOLVER, deadline_s=settings.AUDIT_DEADLINE_SECONDS,
                               service=audit.site.service)
    except SoftTimeLimitExceeded:
        retrying_while_database_down(
            services.fail, audit, "timeout", f"The audit did not finish within {settings.AUDIT_SOFT_TIME_LIMIT} "
                                             "s: the server answers too slowly or stalls some handshakes.",
            attempt=attempt)
        return "failed"
    progress.flush()
    return retrying_while_database_down(services.store_outcome, audit.pk, outcome, attempt).status


def retrying_while_database_down(write, *args, **kwargs):
    """Call `write`; while PostgreSQL is unreachable, reconnect and try again for STORE_RETRY_SECONDS."""
    deadline = time.monotonic() + STORE_RETRY_SECONDS
    delay = 0.5
    while True:
        try:
            return write(*args, **kwargs)
        except DATABASE_DOWN as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("database unavailable while storing (%s); retrying in %.1f s", exc, delay)
            connection.close()  # the broken connection; the next query opens a new one
            time.sleep(delay)
            delay = min(2 * delay, 5.0)


@contextmanager
def ca_file_for(org):
    if not org.custom_ca_pem:
        yield None
        return
    with tempfile.NamedTemporaryFile("w", suffix=".pem", prefix="tlsaudit-ca-") as handle:
        handle.write(org.custom_ca_pem)
        handle.flush()
        yield handle.name

