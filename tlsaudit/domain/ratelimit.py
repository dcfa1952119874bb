"""Sliding-window rate limits as pure arithmetic: given when the recent events happened, may one
more happen now, and if not, in how many seconds? The services count rows; this decides."""

from __future__ import annotations

import math
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


def fixed_window(now_s: float, window_s: int) -> tuple[int, int]:
    """(the number of the window `now_s` falls in, seconds until that window ends), for counters in a cache."""
    if window_s < 1:
        raise ValueError("a window lasts at least 1 second")
    index = int(now_s // window_s)
    return index, max(1, math.ceil((index + 1) * window_s - now_s))


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
