"""Audits of one IP address take turns, fleet-wide, first come first served.

Politeness is per address: however many sites share it (shared hosting, a CDN, a load balancer), at
most one audit of that address runs at a time in the whole fleet (the scan lock, core.locks, keyed by
the address), and its connections are this process's per-address gate (workers/net/deadline.py). The
others wait *before* their deadline starts, so a busy address delays audits and never fails them for
a slowness that is our own queue's.

Who goes next is this line: a Redis sorted set per address of the audits waiting for it, by ticket
(the order they first asked). An audit may take the address only when no live waiter is ahead of it.
A waiter stays in line while it keeps coming back (every retry renews its place for `alive_s`); one
that stops (its process died) drops out when that expires, and the line moves on. The holder is not
in line: it left when it took the address.

On another cache than Redis (development's file cache, one machine) there is no line: the address
lock alone keeps audits one at a time, in no promised order.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.commands.core import Script

from tlsaudit.core.rediscache import redis_client

PREFIX = "tlsaudit:turns"

# KEYS: the line (token -> ticket), the expiries (token -> ms), the join times (token -> ms), the ticket
# counter. ARGV: the token, how long it stays in line without coming back (ms). Returns how many live
# waiters are ahead of it and how long (ms) it has waited since it first joined. Redis's clock for all.
JOIN = b"""
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  redis.call('ZREM', KEYS[1], gone); redis.call('ZREM', KEYS[2], gone); redis.call('HDEL', KEYS[3], gone)
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[4]), ARGV[1])
  redis.call('HSET', KEYS[3], ARGV[1], now)
end
local alive = tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], now + alive, ARGV[1])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], alive + 60000) end
return {redis.call('ZRANK', KEYS[1], ARGV[1]), now - tonumber(redis.call('HGET', KEYS[3], ARGV[1]))}
"""
LEAVE = b"""
redis.call('ZREM', KEYS[1], ARGV[1]); redis.call('ZREM', KEYS[2], ARGV[1]); redis.call('HDEL', KEYS[3], ARGV[1])
return 1
"""
join_script, leave_script = Script(None, JOIN), Script(None, LEAVE)


@dataclass(frozen=True)
class Place:
    ahead: int          # live waiters before this one (0: it is next)
    waited_s: float     # since it first joined this line


def keys(ip: str) -> list[str]:
    return [f"{PREFIX}:line:{ip}", f"{PREFIX}:alive:{ip}", f"{PREFIX}:joined:{ip}", f"{PREFIX}:tickets"]


def join(ip: str, token: str, alive_s: float) -> Place:
    """Take (or keep) `token`'s place in the line for `ip`, alive for `alive_s` more seconds."""
    client = redis_client()
    if client is None:
        return Place(0, 0.0)
    ahead, waited_ms = join_script(keys=keys(ip), args=[token, int(alive_s * 1000)], client=client)
    return Place(int(ahead), int(waited_ms) / 1000)


def leave(ip: str, token: str) -> None:
    """Out of the line for `ip` (it took the address, or gave up)."""
    client = redis_client()
    if client is not None:
        leave_script(keys=keys(ip)[:3], args=[token], client=client)


def waiting(ip: str) -> int:
    """How many are in line for `ip` now (dead ones included until someone joins): for the bench and tests."""
    client = redis_client()
    return 0 if client is None else int(client.zcard(keys(ip)[0]))


def first(ip: str) -> str | None:
    """The token next in line for `ip` (live or not yet seen dead), or None."""
    client = redis_client()
    if client is None:
        return None
    front = client.zrange(keys(ip)[0], 0, 0)
    return front[0].decode() if front else None


def ahead_of(ip: str, token: str) -> list[str]:
    """The tokens before `token` in the line for `ip` (all of them when it is not in line)."""
    client = redis_client()
    if client is None:
        return []
    line = keys(ip)[0]
    rank = client.zrank(line, token)
    if rank == 0:
        return []
    return [member.decode() for member in client.zrange(line, 0, -1 if rank is None else rank - 1)]


def line(ip: str) -> list[str]:
    """Every token in line for `ip`, first first."""
    client = redis_client()
    return [] if client is None else [member.decode() for member in client.zrange(keys(ip)[0], 0, -1)]
