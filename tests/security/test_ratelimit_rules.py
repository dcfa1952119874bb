"""The pure rate-limit arithmetic (tlsaudit/domain/ratelimit.py), as tables."""

from datetime import datetime, timedelta, timezone

import pytest

from tlsaudit.domain.ratelimit import fixed_window, in_words, seconds_until_free

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


@pytest.mark.parametrize("now_s, window_s, expected", [
    (0, 60, (0, 60)), (59.5, 60, (0, 1)), (60, 60, (1, 60)), (3725, 3600, (1, 3475)),
])
def test_fixed_windows(now_s, window_s, expected):
    assert fixed_window(now_s, window_s) == expected


@pytest.mark.parametrize("seconds, words", [
    (1, "1 second"), (45, "45 seconds"), (60, "1 minute"), (61, "2 minutes"), (600, "10 minutes"),
    (3600, "1 hour"), (5400, "90 minutes"), (7200, "2 hours"), (7300, "3 hours"), (86400, "24 hours"),
])
def test_waits_in_words(seconds, words):
    assert in_words(seconds) == words
