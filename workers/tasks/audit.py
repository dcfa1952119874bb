"""The audit task: thin glue between the Audit row and the scan engine."""

import logging
import tempfile
import time
from contextlib import contextmanager, suppress

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from redis.exceptions import RedisError

from tlsaudit.core import runners
from workers.celery import app
from workers.tasks.heartbeat import keep_alive
from workers.tasks.transient import DATABASE_DOWN

log = logging.getLogger(__name__)
LOCK_WAIT_SECONDS = 10
# A scan result in hand is worth waiting for while PostgreSQL restarts; after this, the reaper re-runs it.
STORE_RETRY_SECONDS = 60


# PostgreSQL or Redis unreachable before the claim: the row is still queued, so try again later.
@app.task(name="workers.tasks.audit.run_audit", bind=True, acks_late=True, max_retries=60,
          autoretry_for=(*DATABASE_DOWN, RedisError), retry_backoff=2, retry_backoff_max=60,
          soft_time_limit=settings.AUDIT_SOFT_TIME_LIMIT, time_limit=settings.AUDIT_HARD_TIME_LIMIT)
def run_audit(self, audit_id: int) -> str:
    """1. load the queued audit, 2. resolve and check the target, 3. lock its ip:port,
    4. claim the row atomically (the attempt number fences this run's writes), 5. scan, grade and
    store, beating the row's heartbeat meanwhile, 6. release the lock."""
    from tlsaudit.audits import services
    from tlsaudit.audits.models import Audit
    from workers.net.errors import TargetError
    from workers.net.target import resolve_target

    audit = Audit.objects.select_related("site__organization").filter(pk=audit_id).first()
    if audit is not None:
        # A redelivery after its run's process died (Celery requeues the message of a SIGKILLed pool child) runs it now.
        services.take_over(audit)
    if audit is None or audit.status != Audit.Status.QUEUED:
        return "skipped"  # deleted with its site, or another delivery already ran it (or runs it)
    site = audit.site
    try:
        target = resolve_target(site.hostname, site.https_port, pinned_ip=site.pinned_ip,
                                allow_private=settings.ALLOW_PRIVATE_TARGETS, resolver=settings.DNS_RESOLVER)
    except TargetError as exc:
        services.fail(audit, exc.code, exc.message, exc.detail)
        return "failed"
    with target_lock(target.ip, target.port, audit_id) as lock:
        if not lock:
            services.mark_sent(audit_id)  # this delivery lives on as the retry: no need for the reaper to resend
            raise self.retry(countdown=LOCK_WAIT_SECONDS)  # another audit of this server is running
        attempt = services.claim(audit_id)
        if not attempt:
            return "skipped"
        with keep_alive(audit_id, attempt, lock):
            return scan_and_store(audit, target, attempt)


def scan_and_store(audit, target, attempt: int) -> str:
    from tlsaudit.audits import services
    from workers.tls.engine import run_scan

    try:
        with ca_file_for(audit.site.organization) as ca_file:
            outcome = run_scan(target.host, target.port, ip=target.ip, ca_file=ca_file,
                               allow_private=settings.ALLOW_PRIVATE_TARGETS,
                               on_progress=services.ProgressRecorder(audit.pk, attempt),
                               network_timeout=settings.SCAN_NETWORK_TIMEOUT, max_retries=1,
                               per_server_connections=settings.SCAN_CONNECTIONS_PER_SERVER,
                               resolver=settings.DNS_RESOLVER, deadline_s=settings.AUDIT_DEADLINE_SECONDS)
    except SoftTimeLimitExceeded:
        retrying_while_database_down(
            services.fail, audit, "timeout", f"The audit did not finish within {settings.AUDIT_SOFT_TIME_LIMIT} "
                                             "s: the server answers too slowly or stalls some handshakes.",
            attempt=attempt)
        return "failed"
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
def target_lock(ip: str, port: int, audit_id: int):
    """At most one audit per ip:port at a time (cache.add is SET NX on Redis). Yields the key when
    locked, else None. The lock lasts one lease; keep_alive extends it while the scan runs. It holds
    "<audit id> <process>": a lock whose process is certainly dead (core.runners) is taken over at once,
    instead of a lease later (a SIGKILLed pool child's audit, run again by its redelivered message)."""
    key, token = f"tlsaudit:scanlock:{ip}:{port}", f"{audit_id} {runners.this_process()}"
    locked = cache.add(key, token, timeout=settings.AUDIT_LEASE_SECONDS)
    if not locked and holder_is_gone(cache.get(key)):
        cache.delete(key)
        locked = cache.add(key, token, timeout=settings.AUDIT_LEASE_SECONDS)
    try:
        yield key if locked else None
    finally:
        # Redis down now: the lock expires by itself, and the stored result must not turn into an error.
        with suppress(RedisError):
            if locked and cache.get(key) == token:
                cache.delete(key)


def holder_is_gone(holder) -> bool:
    return isinstance(holder, str) and runners.is_gone(holder.partition(" ")[2])


@contextmanager
def ca_file_for(org):
    if not org.custom_ca_pem:
        yield None
        return
    with tempfile.NamedTemporaryFile("w", suffix=".pem", prefix="tlsaudit-ca-") as handle:
        handle.write(org.custom_ca_pem)
        handle.flush()
        yield handle.name

