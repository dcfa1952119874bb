"""Sliding-window rate limits as pure arithmetic: given when the recent events happened, may one
more happen now, and if not, in how many seconds? The services count rows, or Redis keeps a log
(core/ratelimits.py); this decides, and is the specification of what Redis runs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta


def seconds_until_free(recent: list[datetime], limit: int, window: timedelta, now: datetime) -> int:
    """0 if one more event fits in the window ending `now`, else the whole seconds until one does.

    1. keep the events inside (now - window, now];
    2. fewer than `limit` of them: there is room (0);
    3. else a slot frees when the oldest event that must leave ages out: the
       (count - limit + 1)-th oldest, at its time + window.
    """
    if limit < 1:
        raise ValueError("a rate limit needs a limit of at least 1")
    inside = sorted(t for t in recent if now - window < t <= now)
    if len(inside) < limit:
        return 0
    frees_at = inside[len(inside) - limit] + window
    return max(1, math.ceil((frees_at - now).total_seconds()))


@dataclass(frozen=True)
class Tally:
    """One request counted against `limit` requests per `window_s`: admitted or not, and what the
    client is told (the IETF RateLimit-* header fields and, when refused, Retry-After)."""

    allowed: bool
    limit: int
    window_s: int
    remaining: int     # requests still admitted in the window, after this one
    reset_s: int       # until the oldest counted request leaves the window: a slot comes back
    retry_after: int   # refused: whole seconds until this request would be admitted (>= 1); admitted: 0


def tally(*, allowed: bool, limit: int, window_s: int, counted: int, oldest_leaves_ms: int, frees_ms: int) -> Tally:
    """A Tally from what the sliding log found (as counted by Redis or by `sliding_log`), in milliseconds."""
    return Tally(allowed=allowed, limit=limit, window_s=window_s, remaining=max(0, limit - counted),
                 reset_s=math.ceil(oldest_leaves_ms / 1000),
                 retry_after=0 if allowed else max(1, math.ceil(frees_ms / 1000)))


def sliding_log(admitted: list[int], now_ms: int, limit: int, window_ms: int) -> tuple[Tally, list[int]]:
    """The sliding-window log: at most `limit` requests admitted in any `window_ms`. Returns the
    verdict and the log to keep. core/ratelimits.SLIDING_LOG runs the same steps inside Redis:

    1. forget the requests admitted at or before now - window (they have left the window);
    2. fewer than `limit` remain: admit this one and log it at `now_ms`;
    3. else refuse (and log nothing): a slot frees when the (count - limit + 1)-th oldest leaves,
       at its time + window (the oldest, unless the limit was lowered since they were admitted).
    """
    if limit < 1 or window_ms < 1:
        raise ValueError("a rate limit needs a limit of at least 1 and a window of at least 1 ms")
    kept = sorted(t for t in admitted if now_ms - window_ms < t)
    allowed = len(kept) < limit
    if allowed:
        kept.append(now_ms)
    frees_ms = 0 if allowed else kept[len(kept) - limit] + window_ms - now_ms
    verdict = tally(allowed=allowed, limit=limit, window_s=window_ms // 1000, counted=len(kept),
                    oldest_leaves_ms=kept[0] + window_ms - now_ms, frees_ms=frees_ms)
    return verdict, kept


def in_words(seconds: int) -> str:
    """'45 seconds', '1 minute', '12 minutes', '1 hour', '3 hours': how long to wait, for a person."""
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{'s' if hours != 1 else ''}"
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{math.ceil(minutes / 60)} hours"
