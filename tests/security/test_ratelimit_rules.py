"""The pure rate-limit arithmetic (tlsaudit/domain/ratelimit.py), as tables."""

from datetime import datetime, timedelta, timezone

import pytest

from tlsaudit.domain.ratelimit import in_words, seconds_until_free, sliding_log

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


def ago(minutes):
    return NOW - timedelta(minutes=minutes)


@pytest.mark.parametrize("recent, limit, expected", [
    ([], 1, 0),
    ([ago(10)], 2, 0),
    ([ago(10), ago(50)], 2, 600),              # the one of 50 minutes ago leaves in 10
    ([ago(50), ago(10), ago(30)], 2, 1800),    # unsorted; with 3 inside and room for 2, the 2nd oldest decides
    ([ago(61), ago(70)], 1, 0),                # outside the window
    ([ago(60)], 1, 0),                         # exactly an hour ago has just left
    ([ago(0)], 1, 3600),
    ([NOW + timedelta(minutes=5)], 1, 0),      # a clock-skewed future row does not count
])
def test_seconds_until_a_slot_frees(recent, limit, expected):
    assert seconds_until_free(recent, limit, HOUR, NOW) == expected


def test_a_wait_is_never_less_than_a_second():
    assert seconds_until_free([NOW - HOUR + timedelta(milliseconds=10)], 1, HOUR, NOW) == 1


def test_a_limit_below_one_is_a_programming_error():
    with pytest.raises(ValueError):
        seconds_until_free([], 0, HOUR, NOW)


# The sliding-window log (what Redis runs for sign-ups, password resets and the API throttle), at
# now = 100 s with a 60 s window, in milliseconds: (log before, limit) -> admitted, remaining,
# reset (until the oldest leaves), retry_after, log after.
S = 1000
NOW_MS = 100 * S


@pytest.mark.parametrize("log, limit, admitted, remaining, reset_s, retry_after, kept", [
    ([], 3, True, 2, 60, 0, [NOW_MS]),
    ([50 * S], 3, True, 1, 10, 0, [50 * S, NOW_MS]),                            # unsorted in, sorted out
    ([90 * S, 50 * S, 70 * S], 3, False, 0, 10, 10, [50 * S, 70 * S, 90 * S]),  # full: the oldest frees first
    ([40 * S], 1, True, 0, 60, 0, [NOW_MS]),                                    # exactly 60 s old has left
    ([40 * S + 1, 90 * S], 1, False, 0, 1, 50, [40 * S + 1, 90 * S]),           # 1 ms left rounds up to 1 s
    ([50 * S, 70 * S, 90 * S], 2, False, 0, 10, 30, [50 * S, 70 * S, 90 * S]),  # limit lowered: the 2nd must leave
])
def test_the_sliding_log(log, limit, admitted, remaining, reset_s, retry_after, kept):
    verdict, after = sliding_log(log, NOW_MS, limit, 60 * S)
    assert (verdict.allowed, verdict.remaining, verdict.reset_s, verdict.retry_after) == (
        admitted, remaining, reset_s, retry_after)
    assert (verdict.limit, verdict.window_s, after) == (limit, 60, kept)


def test_the_sliding_log_never_admits_more_than_the_limit_in_any_window():
    # One attempt every 100 ms for 5 minutes against 7 per 10 s: every 10 s span holds exactly 7.
    log, admitted = [], []
    for now_ms in range(0, 300 * S, 100):
        verdict, log = sliding_log(log, now_ms, 7, 10 * S)
        if verdict.allowed:
            admitted.append(now_ms)
    assert max(sum(1 for t in admitted if start <= t < start + 10 * S) for start in range(0, 290 * S, 100)) == 7
    assert len(admitted) == 7 * 30


def test_a_sliding_log_needs_a_limit_and_a_window():
    with pytest.raises(ValueError):
        sliding_log([], NOW_MS, 0, 60 * S)


@pytest.mark.parametrize("seconds, words", [
    (1, "1 second"), (45, "45 seconds"), (60, "1 minute"), (61, "2 minutes"), (600, "10 minutes"),
    (3600, "1 hour"), (5400, "90 minutes"), (7200, "2 hours"), (7300, "3 hours"), (86400, "24 hours"),
])
def test_waits_in_words(seconds, words):
    assert in_words(seconds) == words
