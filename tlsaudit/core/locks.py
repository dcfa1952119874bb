"""Target locks: at most one run of a kind (audit, probe, load run) per ip:port at a time.

Here, not in workers/tasks, because both sides use them: the run tasks (through the gate,
workers/tasks/gate.py) and the load app (tlsaudit/loadtests/services.py), whose runs' locks outlive
the task that took them and are freed by their last step or by the reaper, without importing tasks. A lock is a cache key (`cache.add` is SET NX on
Redis) that holds its holder, "<row id> <process>" (core.runners) or just "<row id>" for a lock that
outlives the task that took it (a load run's, released by its last step): a holder whose process is
certainly dead is taken over at once instead of a lease later.
"""

from __future__ import annotations

from contextlib import suppress

from django.core.cache import cache
from redis.exceptions import RedisError

from tlsaudit.core import runners


def keys(kind: str, ip: str, ports) -> list[str]:
    """The locks of `kind` ("scan", "probe", "load") on ip:port for each port, in one order for all."""
    return [f"tlsaudit:{kind}lock:{ip}:{port}" for port in sorted(set(ports))]


def holder_for(row_id: int, process: str = "") -> str:
    """What a lock holds: the row, and the process that runs it when the lock ends with that process."""
    return f"{row_id} {process}" if process else str(row_id)


def take(keys: list[str], holder: str, seconds: int) -> bool:
    """All of `keys` for `seconds`, or none (True when taken). A RedisError is left to the caller: before
    the claim, the row is still queued and the task can retry."""
    taken = []
    for lock in keys:
        if not take_one(lock, holder, seconds):
            for held in taken:
                cache.delete(held)
            return False
        taken.append(lock)
    return True


def take_one(lock: str, holder: str, seconds: int) -> bool:
    if cache.add(lock, holder, timeout=seconds):
        return True
    if not holder_is_gone(cache.get(lock)):
        return False
    cache.delete(lock)  # its run's process died (a SIGKILLed pool child): no need to wait out its lease
    return cache.add(lock, holder, timeout=seconds)


def holder_is_gone(holder) -> bool:
    """True only when the holder's process is certainly dead; a lock without a process never is."""
    return isinstance(holder, str) and runners.is_gone(holder.partition(" ")[2])


def release(keys: list[str], holder: str) -> None:
    """Delete those of `keys` that `holder` still holds (one that expired may be another run's now).
    A RedisError is swallowed: the lock expires by itself, and a run that stored its result must not
    end in an error because Redis went away meanwhile. Anything else is a bug and surfaces."""
    with suppress(RedisError):
        for lock in keys:
            if cache.get(lock) == holder:
                cache.delete(lock)
