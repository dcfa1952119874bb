"""The audit task: thin glue between the Audit row and the scan engine."""

import logging
import tempfile
from contextlib import contextmanager

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache

from workers.celery import app

log = logging.getLogger(__name__)
LOCK_WAIT_SECONDS = 10


@app.task(name="workers.tasks.audit.run_audit", bind=True, acks_late=True, max_retries=60,
          soft_time_limit=settings.AUDIT_SOFT_TIME_LIMIT, time_limit=settings.AUDIT_HARD_TIME_LIMIT)
def run_audit(self, audit_id: int) -> str:
    """1. load the queued audit, 2. resolve and check the target, 3. lock its ip:port,
    4. claim the row atomically, 5. scan, grade and store, 6. release the lock."""
    from tlsaudit.audits import services
    from tlsaudit.audits.models import Audit
    from workers.tls.errors import TargetError
    from workers.tls.target import resolve_target

    audit = Audit.objects.select_related("site__organization").filter(pk=audit_id).first()
    if audit is None or audit.status != Audit.Status.QUEUED:
        return "skipped"  # deleted with its site, or another delivery already ran it
    site = audit.site
    try:
        target = resolve_target(site.hostname, site.https_port, pinned_ip=site.pinned_ip,
                                allow_private=settings.ALLOW_PRIVATE_TARGETS)
    except TargetError as exc:
        services.fail(audit, exc.code, exc.message, exc.detail)
        return "failed"
    with target_lock(target.ip, target.port, audit_id) as locked:
        if not locked:
            raise self.retry(countdown=LOCK_WAIT_SECONDS)  # another audit of this server is running
        if not services.claim(audit_id):
            return "skipped"
        return scan_and_store(audit, target)


def scan_and_store(audit, target) -> str:
    from tlsaudit.audits import services
    from workers.tls.engine import run_scan

    try:
        with ca_file_for(audit.site.organization) as ca_file:
            outcome = run_scan(target.host, target.port, ip=target.ip, ca_file=ca_file,
                               allow_private=settings.ALLOW_PRIVATE_TARGETS,
                               on_progress=services.ProgressRecorder(audit.pk),
                               network_timeout=settings.SCAN_NETWORK_TIMEOUT, max_retries=1,
                               per_server_connections=settings.SCAN_CONNECTIONS_PER_SERVER)
    except SoftTimeLimitExceeded:
        services.fail(audit, "timeout", f"The audit did not finish within {settings.AUDIT_SOFT_TIME_LIMIT} s: "
                                        "the server answers too slowly or stalls some handshakes.")
        return "failed"
    return services.store_outcome(audit.pk, outcome).status


@contextmanager
def target_lock(ip: str, port: int, audit_id: int):
    """At most one audit per ip:port at a time (cache.add is SET NX on Redis)."""
    key = f"tlsaudit:scanlock:{ip}:{port}"
    locked = cache.add(key, audit_id, timeout=settings.AUDIT_HARD_TIME_LIMIT + 30)
    try:
        yield locked
    finally:
        if locked and cache.get(key) == audit_id:
            cache.delete(key)


@contextmanager
def ca_file_for(org):
    if not org.custom_ca_pem:
        yield None
        return
    with tempfile.NamedTemporaryFile("w", suffix=".pem", prefix="tlsaudit-ca-") as handle:
        handle.write(org.custom_ca_pem)
        handle.flush()
        yield handle.name

