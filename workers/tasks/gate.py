"""The way in that the three run tasks share (audit, browser probe, load run), written once.

Each task opens the same way, in this order, by calling these functions:
1. `queued`: load the row; anything but a queued row is skipped (deleted with its site, or another
   delivery already ran it). An audit first takes over a run whose process died.
2. `resolved`: resolve the site's name and refuse private addresses, or fail the row.
3. `reachable`: pre-flight the ports the run loads, or fail the row (a dead server fails in seconds).
4. `target_lock`: at most one run of a kind per ip:port; `wait_for_target` when another holds it.
5. the task's own claim (one atomic UPDATE in its app's services), then its work.
A function that ends the opening raises `Stop`; `@opening` turns that into the status the task returns.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NoReturn

from django.conf import settings

from tlsaudit.core import locks, runners
from workers.net.errors import TargetError
from workers.net.reach import engine_preflight
from workers.net.target import ResolvedTarget, resolve_target

SKIPPED, FAILED = "skipped", "failed"

# How a task fails its row: (row, code, message, detail). Probes and load runs keep no detail.
Fail = Callable[[object, str, str, str], object]


def without_detail(fail: Callable[[object, str, str], object]) -> Fail:
    """A Fail for an app whose rows keep no detail (probes, load runs): `fail(row, code, message)`."""
    return lambda row, code, message, detail="": fail(row, code, message)


class Stop(Exception):
    """The opening ends here: the task returns `status` (its row, if any, already says why)."""

    def __init__(self, status: str):
        super().__init__(status)
        self.status = status


def opening(task_function):
    """Return the status of a `Stop` raised by the gate instead of raising it."""
    @functools.wraps(task_function)
    def run(*args, **kwargs):
        try:
            return task_function(*args, **kwargs)
        except Stop as stop:
            return stop.status
    return run


def queued(model, row_id: int, take_over: Callable[[object], object] | None = None):
    """The queued row with its site and organization; else Stop(SKIPPED). `take_over(row)` first puts
    back in the queue a run whose process is certainly gone (its redelivered message runs it now)."""
    row = model.objects.select_related("site__organization").filter(pk=row_id).first()
    if row is not None and take_over is not None:
        take_over(row)
    if row is None or row.status != model.Status.QUEUED:
        raise Stop(SKIPPED)
    return row


def refuse(row, fail: Fail, code: str, message: str, detail: str = "") -> NoReturn:
    """Fail the row with an owner-facing reason and end the opening."""
    fail(row, code, message, detail)
    raise Stop(FAILED)


def resolved(row, fail: Fail) -> ResolvedTarget:
    """The site's one checked address (its pinned IP, or its name resolved, public addresses only)."""
    site = row.site
    try:
        return resolve_target(site.hostname, site.https_port, pinned_ip=site.pinned_ip,
                              allow_private=settings.ALLOW_PRIVATE_TARGETS, resolver=settings.DNS_RESOLVER)
    except TargetError as exc:
        refuse(row, fail, exc.code, exc.message, exc.detail)


def reachable(row, ip: str, ports: Iterable[tuple[str, int]], fail: Fail, then: str = "") -> None:
    """Pre-flight each (scheme, port) with a deadline on the whole exchange (one TLS handshake for
    HTTPS, a TCP connect for HTTP): a silent, dropping, trickling or non-TLS server fails the row in
    seconds, with the reason (and `then`, what was not done), before the engine waits out its own
    timeouts. A refused port is left to the engine: it fails as fast and says so."""
    for scheme, port in ports:
        problem = engine_preflight(ip, port, row.site.hostname, settings.SCAN_NETWORK_TIMEOUT, tls=scheme == "https")
        if problem is not None:
            refuse(row, fail, problem.code, f"{problem.message}{then}")


@dataclass
class TargetLock:
    keys: list[str]
    holder: str
    kept: bool = field(default=False)

    def keep(self, owner: str, seconds: int) -> bool:
        """Hand the locks to `owner` for `seconds`, past the task (a load run: its last step or the reaper
        releases them). False when they were not all still this holder's, or Redis failed: nothing kept."""
        self.kept = locks.hand_over(self.keys, self.holder, owner, seconds)
        return self.kept


def holder_of(row_id: int) -> str:
    """This process holds the lock for the row: if it dies before its claim, the row's redelivered
    message (or any other run) takes the lock over at once (core.locks). One take's own ("<id>.<nonce>"):
    two deliveries of a row in one process (the threads pool) never share a lock, so the loser's release
    cannot free the winner's, and a take that Redis ran twice (a lost reply, sent again) knows its lock."""
    return locks.holder_for(f"{row_id}.{secrets.token_hex(4)}", runners.this_process())


@contextmanager
def target_lock(kind: str, ip: str, ports: Iterable[int], holder: str, seconds: int):
    """The `kind` locks of ip:port for each port, all or none, for `seconds` (core.locks). Yields a
    TargetLock, or None when another run holds one; releases them on leaving unless `keep()` handed them over.

    The release swallows RedisError, and only that, in every task: Redis gone at the end of a run must
    not turn a stored result into an error (the lock expires by itself), while any other error there is
    a bug that should be seen."""
    lock = TargetLock(locks.keys(kind, ip, ports), holder)
    if not locks.take(lock.keys, holder, seconds):
        yield None
        return
    try:
        yield lock
    finally:
        if not lock.kept:
            locks.release(lock.keys, holder)


def wait_for_target(task, countdown: int, give_up: Callable[[], object] | None = None,
                    max_retries: int | None = None) -> NoReturn:
    """Another run holds the target: retry this delivery in `countdown` s. After the task's last retry
    (`max_retries`, else the task's), `give_up()` fails the row and the opening ends (without it,
    Celery's MaxRetriesExceeded does)."""
    limit = task.max_retries if max_retries is None else max_retries
    if give_up is not None and task.request.retries >= limit:
        give_up()
        raise Stop(FAILED)
    raise task.retry(countdown=countdown, max_retries=limit)
