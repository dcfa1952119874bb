"""Abuse limits shared by audits, probes and sign-up. Refusals raise `RateLimited`.

The API maps `RateLimited` to 429 with `Retry-After: <retry_after>`; views show `message`.
Limits on work (audits, probes) count rows in the database, exactly and under the caller's lock.
Limits on requests (sign-up, password reset, the API throttle) count them in Redis, because an
attempt that fails leaves no row: `count` keeps a sliding-window log per key and decides in one
atomic Redis operation, so concurrent requests in many processes cannot overshoot the limit.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone
from redis.commands.core import Script

from tlsaudit.core.rediscache import redis_client
from tlsaudit.domain.ratelimit import Tally, in_words, seconds_until_free, sliding_log, tally

logger = logging.getLogger(__name__)


class RateLimited(Exception):
    """Refused by a rate limit. `code` is stable (for the API), `message` is for people,
    `retry_after` is the whole seconds until the request would be accepted (at least 1)."""

    def __init__(self, code: str, message: str, retry_after: int):
        # Not super().__init__: subclasses also inherit from exceptions with their own signature
        # (probes' ProbeRefused), and Exception only needs the message.
        Exception.__init__(self, message)
        self.code = code
        self.message = message
        self.retry_after = max(1, int(retry_after))


def enforce(recent_times, *, limit: int, window: timedelta, code: str, what: str, error=RateLimited) -> None:
    """Raise `error(code, …)` if `limit` events already happened in `window` (times: a datetime iterable).

    `what` completes "… already <what> in the last hour", e.g. "ran 30 audits of example.com".
    """
    wait = seconds_until_free(list(recent_times), limit, window, timezone.now())
    if wait:
        span = in_words(int(window.total_seconds())).removeprefix("1 ")  # "the last hour", "the last 10 minutes"
        raise error(code, f"Rate limit: {what} in the last {span}. Try again in {in_words(wait)}.", wait)


def times_since(queryset, window: timedelta, field: str = "created_at"):
    """The `field` timestamps of `queryset` rows newer than `window` (what `enforce` counts)."""
    since = timezone.now() - window
    return queryset.filter(**{f"{field}__gt": since}).values_list(field, flat=True)


def times(n: int) -> str:
    return f"{n} time{'s' if n != 1 else ''}"


def hit(key: str, *, limit: int, window_s: int, code: str, what: str) -> None:
    """Count one request under `key` (at most `limit` per sliding `window_s`); RateLimited when refused.

    When the cache is down the request is let through (and logged): sign-up must not depend on Redis.
    """
    try:
        verdict = count(key, limit=limit, window_s=window_s)
    except Exception:  # noqa: BLE001  any cache failure: fail open, loudly
        logger.warning("rate limit %s not checked: the cache is unavailable", key, exc_info=True)
        return
    if not verdict.allowed:
        wait = verdict.retry_after
        raise RateLimited(code, f"Rate limit: {what}. Try again in {in_words(wait)}.", wait)


# The sliding-window log of domain.ratelimit.sliding_log, in one atomic round trip (EVALSHA): a
# sorted set of the admitted requests, scored by Redis's own clock so web hosts' clocks do not
# matter. KEYS[1] the log; ARGV: limit, window (ms), a member unique to this request.
# Returns {admitted 0/1, requests counted, ms until the oldest leaves, ms until a refused one fits}.
# TIME before a write needs script effects replication: Redis 5 or later (docker-compose.yml runs 7).
SLIDING_LOG = b"""
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local counted = redis.call('ZCARD', KEYS[1])
local admitted = counted < limit
if admitted then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  counted = counted + 1
end
local function leaves_in(rank)
  local entry = redis.call('ZRANGE', KEYS[1], rank, rank, 'WITHSCORES')
  return tonumber(entry[2]) + window - now
end
local frees = 0
if not admitted then frees = leaves_in(counted - limit) end
return {admitted and 1 or 0, counted, leaves_in(0), frees}
"""
sliding_log_script = Script(None, SLIDING_LOG)
in_process = threading.Lock()


def count(key: str, *, limit: int, window_s: int) -> Tally:
    """Count one request under `key` against `limit` per sliding `window_s`: one atomic Redis operation.

    Raises whatever the cache raises when it is unreachable: callers decide to fail open.
    """
    if limit < 1 or window_s < 1:
        raise ValueError("a rate limit needs a limit of at least 1 and a window of at least 1 second")
    client = redis_client()
    if client is None:
        return count_in_cache(key, limit, window_s)
    admitted, counted, oldest_leaves_ms, frees_ms = sliding_log_script(
        keys=[cache.make_key(f"ratelimit:{key}")], args=[limit, window_s * 1000, uuid.uuid4().hex], client=client)
    return tally(allowed=bool(admitted), limit=limit, window_s=window_s, counted=counted,
                 oldest_leaves_ms=oldest_leaves_ms, frees_ms=frees_ms)


def count_in_cache(key: str, limit: int, window_s: int) -> Tally:
    """Development without Redis (the file cache): the same log, read and written under a lock of
    this process. Exact for `make run` (one process), not across processes: production runs Redis."""
    bucket = f"ratelimit:{key}"
    with in_process:
        verdict, log = sliding_log(cache.get(bucket, []), int(time.time() * 1000), limit, window_s * 1000)
        cache.set(bucket, log, timeout=window_s)
    return verdict


def clear_counters() -> int:
    """Forget every cache-counted limit (between tests; an operator lifting a block). Returns keys removed."""
    redis = redis_client()
    if redis is None:  # not Redis: the file/locmem caches only serve development
        cache.clear()
        return 0
    keys = list(redis.scan_iter(match=cache.make_key("ratelimit:*")))
    return redis.delete(*keys) if keys else 0
