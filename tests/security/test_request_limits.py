"""Limits on requests (sign-up, password reset, the API throttle) count in Redis with one atomic
operation, a sliding-window log (core/ratelimits.count): at most `limit` in ANY span of the window,
a Retry-After that a client can trust, and the same behaviour on the development cache."""

import threading
import time

import pytest

from tlsaudit.core import ratelimits
from tlsaudit.core.ratelimits import RateLimited

pytestmark = pytest.mark.django_db


def admitted(key: str, attempts: int, *, limit: int, window_s: int) -> int:
    passed = 0
    for _ in range(attempts):
        try:
            ratelimits.hit(key, limit=limit, window_s=window_s, code="test", what="too many tests")
            passed += 1
        except RateLimited:
            pass
    return passed


def sleep_until_second(of_window: float, window_s: int) -> None:
    """Until the wall clock is `of_window` seconds into a multiple of `window_s` (a fixed window's start)."""
    time.sleep((of_window - time.time() % window_s) % window_s)


def test_a_burst_on_each_side_of_a_window_boundary_is_one_limit_not_two():
    # The counter this replaced reset at every multiple of the window: 5 requests just before a
    # boundary and 5 just after all passed, 10 within a second against "5 per 4 seconds".
    sleep_until_second(3.2, window_s=4)
    before = admitted("boundary", 5, limit=5, window_s=4)
    sleep_until_second(0.1, window_s=4)
    after = admitted("boundary", 5, limit=5, window_s=4)
    assert (before, after) == (5, 0)


def test_a_client_that_waits_retry_after_gets_in_and_one_that_does_not_stays_out():
    assert admitted("patient", 2, limit=2, window_s=5) == 2
    with pytest.raises(RateLimited) as refused:
        ratelimits.hit("patient", limit=2, window_s=5, code="test", what="too many tests")
    refused_at, wait = time.monotonic(), refused.value.retry_after
    assert 4 <= wait <= 5
    # Refusals are not logged: hammering does not push the wait further away.
    assert admitted("patient", 20, limit=2, window_s=5) == 0
    time.sleep(max(0.0, refused_at + wait - 2.5 - time.monotonic()))
    assert admitted("patient", 1, limit=2, window_s=5) == 0   # still inside the window
    time.sleep(max(0.0, refused_at + wait + 0.3 - time.monotonic()))
    assert admitted("patient", 1, limit=2, window_s=5) == 1


def test_twenty_threads_counting_at_once_admit_exactly_the_limit():
    start = threading.Barrier(20)
    verdicts = []

    def client():
        start.wait()
        for _ in range(10):
            verdicts.append(ratelimits.count("crowd", limit=75, window_s=60).allowed)

    threads = [threading.Thread(target=client) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(verdicts), verdicts.count(True)) == (200, 75)


def test_the_tally_says_what_is_left_and_when_a_slot_comes_back():
    first = ratelimits.count("tally", limit=3, window_s=60)
    assert (first.allowed, first.limit, first.remaining, first.retry_after, first.window_s) == (True, 3, 2, 0, 60)
    assert 59 <= first.reset_s <= 60
    ratelimits.count("tally", limit=3, window_s=60)
    third = ratelimits.count("tally", limit=3, window_s=60)
    refused = ratelimits.count("tally", limit=3, window_s=60)
    assert (third.allowed, third.remaining, refused.allowed, refused.remaining) == (True, 0, False, 0)
    assert 58 <= refused.retry_after == refused.reset_s <= 60


def test_a_lowered_limit_waits_for_enough_requests_to_leave():
    for _ in range(3):
        ratelimits.count("lowered", limit=3, window_s=60)
    refused = ratelimits.count("lowered", limit=1, window_s=60)
    assert not refused.allowed and refused.retry_after >= 58


def test_keys_are_counted_apart_and_cleared_together():
    assert admitted("one", 2, limit=1, window_s=60) == 1
    assert admitted("two", 1, limit=1, window_s=60) == 1
    assert ratelimits.clear_counters() == 2
    assert admitted("one", 1, limit=1, window_s=60) == 1


def test_without_redis_the_development_cache_keeps_the_same_log(settings, tmp_path):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}
    assert ratelimits.redis_client() is None
    assert admitted("dev", 4, limit=3, window_s=60) == 3
    refused = ratelimits.count("dev", limit=3, window_s=60)
    assert (refused.allowed, refused.remaining) == (False, 0) and 58 <= refused.retry_after <= 60
