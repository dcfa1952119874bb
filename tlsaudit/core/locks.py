"""Target locks: at most one run of a kind (audit, probe, load run) per ip:port at a time.

Here, not in workers/tasks, because both sides use them: the run tasks (through the gate,
workers/tasks/gate.py) and the load app (tlsaudit/loadtests/services.py), whose runs' locks outlive
the task that took them and are freed by their last step or by the reaper, without importing tasks.

A lock is a cache key that holds its holder: "<row id> <process>" (core.runners) while a task holds
it, so that a holder whose process is certainly dead is taken over at once instead of a lease later;
just "<row id>" once a load run owns it (`hand_over`), since the run outlives the task that took it.

Every change is one atomic step that first compares what the keys hold, so that a slow process can
never act on a lock that changed under it (expired and re-taken, or taken over meanwhile):
- on Redis (production, tests), a Lua script given the exact bytes read a moment before;
- on any other cache (development's file cache), the same read-compare-write under an flock(2) of
  a file under VAR_DIR: exact across the processes of one machine, which is all a file cache serves.
Values are encoded by the cache's own serializer, so `cache.get` reads them as before.
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager, suppress

from django.conf import settings
from django.core.cache import cache
from redis.commands.core import Script
from redis.exceptions import RedisError

from tlsaudit.core import runners
from tlsaudit.core.rediscache import redis_client, serializer

# KEYS: the locks; ARGV: the new holder, its lease (ms), then per key the bytes it held when read
# ("" when absent). All or none: every key must still hold what was read, or already this holder (one
# take's own, see gate.holder_of: this script run a second time by redis-py, whose first reply was
# lost); the checks run before the first write, so a failing GET (a key of another type) takes nothing.
TAKE = b"""
for i, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  if current ~= ARGV[1] and (current or '') ~= ARGV[2 + i] then return 0 end
end
for _, key in ipairs(KEYS) do redis.call('SET', key, ARGV[1], 'PX', ARGV[2]) end
return 1
"""
# KEYS: locks; ARGV: the operation (release, extend, hand_over), its argument (a lease in ms; for
# hand_over the new holder), its lease (ms), "all" or "each", then per key the bytes its holder
# left there. "each" acts on the keys that still hold them; "all" on all of them or none.
IF_HELD = b"""
local op, arg, ms, all = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == 'all'
local held = {}
for i, key in ipairs(KEYS) do
  held[i] = redis.call('GET', key) == ARGV[4 + i]
  if all and not held[i] then return 0 end
end
local n = 0
for i, key in ipairs(KEYS) do
  if held[i] then
    if op == 'release' then redis.call('DEL', key)
    elseif op == 'extend' then redis.call('PEXPIRE', key, ms)
    else redis.call('SET', key, arg, 'PX', ms) end
    n = n + 1
  end
end
return n
"""
take_script, if_held_script = Script(None, TAKE), Script(None, IF_HELD)


def keys(kind: str, ip: str, ports) -> list[str]:
    """The locks of `kind` ("scan", "probe", "load") on ip:port for each port, in one order for all."""
    return [f"tlsaudit:{kind}lock:{ip}:{port}" for port in sorted(set(ports))]


def holder_for(row_id: int | str, process: str = "") -> str:
    """What a lock holds: the row (its id, or one take of it), and the process that runs it when the lock
    ends with that process."""
    return f"{row_id} {process}" if process else str(row_id)


def holder_is_gone(holder) -> bool:
    """True only when the holder's process is certainly dead; a lock without a process never is."""
    return isinstance(holder, str) and runners.is_gone(holder.partition(" ")[2])


def take(keys: list[str], holder: str, seconds: int) -> bool:
    """All of `keys` for `seconds`, or none (True when taken), in one atomic step. A key is free when
    absent or held by a holder whose process is certainly dead (a SIGKILLed pool child: no need to
    wait out its lease); the step takes it only if it still holds what was read. A RedisError is left
    to the caller (before the claim the row is still queued and the task can retry), after freeing
    whatever this holder may hold: the step may have run before the connection broke."""
    store = store_of_cache()
    found = store.read(keys)
    if not all(value is None or holder_is_gone(value) for value, _ in found):
        return False
    try:
        return store.take(keys, holder, seconds, [seen for _, seen in found])
    except RedisError:
        release(keys, holder)
        raise


def release(keys: list[str], holder: str) -> None:
    """Delete those of `keys` that `holder` still holds (one that expired may be another run's now).
    A RedisError is swallowed: the lock expires by itself, and a run that stored its result must not
    end in an error because Redis went away meanwhile. Anything else is a bug and surfaces."""
    with suppress(RedisError):
        act_if_held("release", keys, holder, seconds=0)


def extend(keys: list[str], holder: str, seconds: int) -> int:
    """Renew the lease of those of `keys` that `holder` still holds (the audit heartbeat); how many.
    One that expired and was taken by another run stays theirs. RedisError is the caller's."""
    return act_if_held("extend", keys, holder, seconds)


def hand_over(keys: list[str], holder: str, new_holder: str, seconds: int) -> bool:
    """Give all of `keys`, still held by `holder`, to `new_holder` for `seconds`, or none (True when
    done): a load run's start task hands its locks to the run once it claimed it. False as well when
    Redis fails: the caller ends the run rather than load a server with no lock held for it."""
    try:
        return act_if_held("hand_over", keys, holder, seconds, new_holder=new_holder, every=True) == len(keys)
    except RedisError:
        return False


def act_if_held(op: str, keys: list[str], holder: str, seconds: int, new_holder: str = "",
                every: bool = False) -> int:
    store = store_of_cache()
    held = [(lock, seen) for lock, (value, seen) in zip(keys, store.read(keys), strict=True) if value == holder]
    if not held or (every and len(held) < len(keys)):
        return 0
    return store.act_if_held(op, [lock for lock, _ in held], [seen for _, seen in held], seconds, new_holder, every)


def store_of_cache():
    client = redis_client()
    return RedisLocks(client) if client is not None else CacheLocks()


class RedisLocks:
    """Locks on the cache's Redis: what a key holds is read as bytes, and each change is a script that
    compares those very bytes (no re-encoding, so any process's encoding of a holder compares)."""

    def __init__(self, client):
        self.client, self.codec = client, serializer()

    def read(self, keys: list[str]) -> list[tuple[object, bytes]]:
        """(holder, its bytes) per key: (None, b"") when absent."""
        return [(self.decode(raw), raw) if raw is not None else (None, b"")
                for raw in self.client.mget([cache.make_key(lock) for lock in keys])]

    def decode(self, raw: bytes):
        try:
            return self.codec.loads(raw)
        except Exception:  # noqa: BLE001  not a holder this code wrote: held, by nobody it can judge
            return raw

    def take(self, keys: list[str], holder: str, seconds: int, seen: list[bytes]) -> bool:
        return bool(take_script(keys=[cache.make_key(lock) for lock in keys],
                                args=[self.codec.dumps(holder), seconds * 1000, *seen], client=self.client))

    def act_if_held(self, op: str, keys: list[str], seen: list[bytes], seconds: int, new_holder: str,
                    every: bool) -> int:
        return if_held_script(keys=[cache.make_key(lock) for lock in keys],
                              args=[op, self.codec.dumps(new_holder), seconds * 1000, "all" if every else "each",
                                    *seen], client=self.client)


class CacheLocks:
    """Locks on a cache that is not Redis (development): the same compare-then-change, under an
    exclusive flock of one file, so that the processes of `make run` exclude each other."""

    def read(self, keys: list[str]) -> list[tuple[object, object]]:
        return [(value, value) for value in (cache.get(lock) for lock in keys)]

    def take(self, keys: list[str], holder: str, seconds: int, seen: list) -> bool:
        with exclusive():
            if any(cache.get(lock) not in (value, holder) for lock, value in zip(keys, seen, strict=True)):
                return False
            for lock in keys:
                cache.set(lock, holder, timeout=seconds)
            return True

    def act_if_held(self, op: str, keys: list[str], seen: list, seconds: int, new_holder: str, every: bool) -> int:
        with exclusive():
            held = [lock for lock, value in zip(keys, seen, strict=True) if cache.get(lock) == value]
            if every and len(held) < len(keys):
                return 0
            for lock in held:
                if op == "release":
                    cache.delete(lock)
                elif op == "extend":
                    cache.touch(lock, seconds)
                else:
                    cache.set(lock, new_holder, timeout=seconds)
            return len(held)


@contextmanager
def exclusive():
    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    with open(settings.VAR_DIR / "locks.flock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield
