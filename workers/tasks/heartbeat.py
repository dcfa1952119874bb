"""The heartbeats of the audits a worker process runs, from one thread on one connection (closed when idle).

Every AUDIT_HEARTBEAT_SECONDS the thread stamps the rows of all the process's running audits in one
UPDATE (services.beat_all) and extends each one's ip:port lock while it still holds it (core.locks.extend). One thread per audit,
connecting for every beat (the first design), cost PostgreSQL 14 % of a core for 100 audits in flight
at a 3 s heartbeat, mostly in connection start-ups; keeping one connection per audit would instead
hold a second connection per running audit (100 audits exhausted a max_connections of 100). Here a
process holds one connection and sends two statements per interval, however many audits it runs
(bench/heartbeat_cost.py). A run whose row was re-queued or finished is dropped: its writes are
fenced by its attempt number anyway.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager, suppress

from django.conf import settings
from django.db import connection
from redis.exceptions import RedisError

from tlsaudit.audits import services
from tlsaudit.core import locks
from workers.tasks.transient import DATABASE_DOWN

log = logging.getLogger(__name__)


class Heartbeats:
    def __init__(self):
        self.runs: dict[int, tuple[int, list[str], str]] = {}  # audit id -> (attempt, its locks, their holder)
        self.guard = threading.Lock()
        self.idle = threading.Event()  # set when the last run left: close the connection now
        self.thread = threading.Thread(target=self.beat_forever, name="audit-heartbeats", daemon=True)
        self.thread.start()

    def add(self, audit_id: int, attempt: int, lock_keys: list[str], holder: str) -> None:
        with self.guard:
            self.runs[audit_id] = (attempt, lock_keys, holder)

    def discard(self, audit_id: int, attempt: int) -> None:
        with self.guard:
            if self.runs.get(audit_id, (None,))[0] == attempt:
                del self.runs[audit_id]
            if not self.runs:
                self.idle.set()

    def beat_forever(self) -> None:
        while True:
            self.idle.wait(settings.AUDIT_HEARTBEAT_SECONDS)
            with self.guard:
                runs = dict(self.runs)
                self.idle.clear()
            if runs:
                self.beat(runs)
            else:
                connection.close()  # no audit to beat: an idle process holds no PostgreSQL connection

    def beat(self, runs: dict[int, tuple[int, list[str], str]]) -> None:
        for _, lock_keys, holder in runs.values():
            with suppress(RedisError):  # a lock that expired meanwhile (and may be another run's) is not extended
                locks.extend(lock_keys, holder, settings.AUDIT_LEASE_SECONDS)
        try:
            lost = services.beat_all({audit_id: run[0] for audit_id, run in runs.items()})
        except DATABASE_DOWN as exc:
            # A missed beat or two cost nothing: the lease is several beats, and the reaper looks twice.
            log.warning("audits %s: heartbeat not recorded (%s)", sorted(runs), exc)
            connection.close()  # the next beat connects again
            return
        for audit_id in lost:  # finished, or the reaper gave the row to a new attempt
            self.discard(audit_id, runs[audit_id][0])


_process: tuple[int, Heartbeats] | None = None


def heartbeats() -> Heartbeats:
    """This process's Heartbeats, started on first use (a forked pool child starts its own)."""
    global _process
    if _process is None or _process[0] != os.getpid():
        _process = (os.getpid(), Heartbeats())
    return _process[1]


@contextmanager
def keep_alive(audit_id: int, attempt: int, lock_keys: list[str], holder: str):
    """Beat the row's heartbeat and extend the target lock while the scan runs: a run whose beat stops
    for AUDIT_LEASE_SECONDS lost its worker; the reaper re-queues it, and its lock has expired by then,
    so the next attempt can scan the server."""
    beating = heartbeats()
    beating.add(audit_id, attempt, lock_keys, holder)
    try:
        yield
    finally:
        beating.discard(audit_id, attempt)
