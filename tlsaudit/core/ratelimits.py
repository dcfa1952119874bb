"""Abuse limits shared by audits, probes and sign-up. Refusals raise `RateLimited`.

The API maps `RateLimited` to 429 with `Retry-After: <retry_after>`; views show `message`.
Limits on work (audits, probes) count rows in the database, exactly and under the caller's lock;
the sign-up limit counts requests in the cache, because an attempt that fails leaves no row.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.core.cache import cache
from django.utils import timezone

from tlsaudit.domain.ratelimit import fixed_window, in_words, seconds_until_free

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
    """Count one request under `key` in a fixed cache window; RateLimited once `limit` is passed.

    When the cache is down the request is let through (and logged): sign-up must not depend on Redis.
    """
    index, remaining = fixed_window(time.time(), window_s)
    bucket = f"ratelimit:{key}:{index}"
    try:
        cache.add(bucket, 0, timeout=window_s + 5)
        count = cache.incr(bucket)
    except Exception:  # noqa: BLE001  any cache failure: fail open, loudly
        logger.warning("rate limit %s not checked: the cache is unavailable", key, exc_info=True)
        return
    if count > limit:
        raise RateLimited(code, f"Rate limit: {what}. Try again in {in_words(remaining)}.", remaining)


def clear_counters() -> int:
    """Forget every cache-counted limit (between tests; an operator lifting a block). Returns keys removed."""
    get_client = getattr(getattr(cache, "_cache", None), "get_client", None)
    if get_client is None:  # not Redis: the file/locmem caches only serve development
        cache.clear()
        return 0
    redis = get_client(write=True)
    keys = list(redis.scan_iter(match=cache.make_key("ratelimit:*")))
    return redis.delete(*keys) if keys else 0
