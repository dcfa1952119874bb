"""The audit task: thin glue between the Audit row and the scan engine (its opening: gate.py)."""

import logging
import math
import tempfile
import time
from contextlib import contextmanager

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection
from redis.exceptions import RedisError

from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from tlsaudit.core import locks, runners, turns
from workers.celery import app
from workers.tasks import gate
from workers.tasks.heartbeat import keep_alive
from workers.tasks.transient import DATABASE_DOWN
from workers.tls.engine import run_scan

log = logging.getLogger(__name__)
# A scan result in hand is worth waiting for while PostgreSQL restarts; after this, the reaper re-runs it.
STORE_RETRY_SECONDS = 60
# The scan locks are the address's, whatever the port or the name: "<ip>:slot0", "<ip>:slot1"...
ADDRESS = "slot"
ADDRESS_BUSY = "address_busy"


# PostgreSQL or Redis unreachable before the claim: the row is still queued, so try again later.
@app.task(name="workers.tasks.audit.run_audit", bind=True, acks_late=True, max_retries=60,
          autoretry_for=(*DATABASE_DOWN, RedisError), retry_backoff=2, retry_backoff_max=60,
          soft_time_limit=settings.AUDIT_SOFT_TIME_LIMIT, time_limit=settings.AUDIT_HARD_TIME_LIMIT)
@gate.opening
def run_audit(self, audit_id: int) -> str:
    """1. load the queued audit (taking over a redelivered run whose process died), 2. resolve and
    check the target, 3. take its turn at the address (one audit per IP address in the whole fleet, the
    others in line: address_turn) with a lock for one lease, 4. claim the row atomically (the attempt
    number fences this run's writes), 5. scan, grade and store, beating the row's heartbeat and
    extending the lock meanwhile, 6. release the lock."""
    audit = gate.queued(Audit, audit_id, take_over=services.take_over)
    target = gate.resolved(audit, services.fail)
    if refusal := services.over_target_limit(audit, target.ip, target.port):
        services.fail(audit, "audits_per_target", refusal)
        return gate.FAILED
    holder = gate.holder_of(audit_id)
    with address_turn(audit, target.ip, holder) as lock:
        if not lock:
            # this delivery lives on as the retry, held here: see services.mark_held
            services.mark_held(audit_id, runners.this_process(), settings.AUDIT_LOCK_WAIT_SECONDS)
            # another audit of this address runs: wait in line, as long as the line's own bound allows
            gate.wait_for_target(self, settings.AUDIT_LOCK_WAIT_SECONDS, max_retries=self.max_retries + math.ceil(
                settings.AUDIT_TURN_WAIT_SECONDS / settings.AUDIT_LOCK_WAIT_SECONDS))
        attempt = services.claim(audit_id)
        if not attempt:
            return gate.SKIPPED
        with keep_alive(audit_id, attempt, lock.keys, lock.holder):
            return scan_and_store(audit, target, attempt)


def turn_alive_s() -> float:
    """How long a waiter keeps its place in line without coming back: the whole wait it may have, and a
    minute. A retry delayed by a busy pool keeps its place and its waiting time; an audit that no longer
    waits (deleted, run, failed) is taken out by drop_finished_waiters as soon as it is in the way."""
    return settings.AUDIT_TURN_WAIT_SECONDS + 60


@contextmanager
def address_turn(audit, ip: str, holder: str):
    """A scan lock of the audit's address (SCAN_AUDITS_PER_IP of them in the whole fleet, one by default)
    when it is this audit's turn (core.turns), else None after noting on the row that it waits, and for
    what. Leaving, the holder sends the next in line at once instead of leaving the address idle until
    that one's retry is due (a duplicate delivery is harmless: the claim is one atomic UPDATE). Past
    AUDIT_TURN_WAIT_SECONDS in line the audit fails, as ours to blame: nothing was sent to the server."""
    token = turn_token(audit.pk)
    if audit.ip and audit.ip != ip:     # its name resolves elsewhere now: out of the old address's line
        turns.leave(audit.ip, token)
    place = turns.join(ip, token, turn_alive_s())
    if place.ahead >= settings.SCAN_AUDITS_PER_IP and drop_finished_waiters(ip, token):
        place = turns.join(ip, token, turn_alive_s())
    lock = take_an_address_slot(ip, holder) if place.ahead < settings.SCAN_AUDITS_PER_IP else None
    if lock is not None:
        try:
            turns.leave(ip, token)
            services.note_turn(audit, "", ip)
            yield lock
        finally:
            if not lock.kept:
                locks.release(lock.keys, holder)
            send_next_in_line(ip)
        return
    if place.waited_s > settings.AUDIT_TURN_WAIT_SECONDS:
        turns.leave(ip, token)
        services.fail(audit, ADDRESS_BUSY, services.address_busy_message(ip, place, settings.AUDIT_TURN_WAIT_SECONDS))
        raise gate.Stop(gate.FAILED)
    services.note_turn(audit, services.turn_message(ip, place), ip)
    yield None


def drop_finished_waiters(ip: str, token: str | None = None) -> int:
    """Take out of the line the audits ahead of `token` (all, without one) that no longer wait (deleted
    with their site, or run, failed or cancelled by another delivery): otherwise each would hold the line,
    with the address free. How many were taken out (one query, only when someone is ahead)."""
    tokens = turns.ahead_of(ip, token) if token else turns.line(ip)
    ahead = {int(t.removeprefix("audit:")): t for t in tokens if t.startswith("audit:")}
    if not ahead:
        return 0
    waiting = set(Audit.objects.filter(pk__in=list(ahead), status=Audit.Status.QUEUED).values_list("pk", flat=True))
    finished = [t for pk, t in ahead.items() if pk not in waiting]
    for stale in finished:
        turns.leave(ip, stale)
    return len(finished)


def take_an_address_slot(ip: str, holder: str) -> gate.TargetLock | None:
    """The first free one of the address's SCAN_AUDITS_PER_IP scan locks, for one lease."""
    for slot in range(settings.SCAN_AUDITS_PER_IP):
        keys = locks.keys("scan", ip, [f"{ADDRESS}{slot}"])
        if locks.take(keys, holder, settings.AUDIT_LEASE_SECONDS):
            return gate.TargetLock(keys, holder)
    return None


def turn_token(audit_id: int) -> str:
    return f"audit:{audit_id}"


def send_next_in_line(ip: str) -> None:
    """Deliver the audit next in line for `ip` now (after taking out the ones that no longer wait); on a
    Redis or broker error its own retry comes as planned, and whatever the holder's run raised stands."""
    try:
        drop_finished_waiters(ip)
        token = turns.first(ip)
        if token is not None and token.startswith("audit:"):
            run_audit.apply_async((int(token.removeprefix("audit:")),))
    except Exception as exc:  # noqa: BLE001  (kombu's, redis's and the database's errors alike: the retry is the fallback)
        log.warning("could not send the next audit of %s at once (%s): its retry will", ip, exc)


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
                               service=audit.site.service,
                               connection_lifetime_s=settings.SCAN_CONNECTION_LIFETIME_SECONDS)
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

