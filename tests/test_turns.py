"""The line of audits waiting for one address (core.turns, #27), on the real Redis."""

import time

import pytest

from tlsaudit.core import turns
from tlsaudit.core.rediscache import redis_client

IP = "192.0.2.77"


@pytest.fixture(autouse=True)
def empty_line():
    client = redis_client()
    client.delete(*turns.keys(IP)[:3])
    yield
    client.delete(*turns.keys(IP)[:3])


def test_waiters_are_served_in_the_order_they_first_asked_whatever_order_they_come_back_in():
    for token in ("audit:3", "audit:1", "audit:2"):
        turns.join(IP, token, alive_s=30)

    # coming back (each retry renews its place) does not change the order
    assert [turns.join(IP, token, alive_s=30).ahead for token in ("audit:2", "audit:1", "audit:3")] == [2, 1, 0]
    assert turns.first(IP) == "audit:3"
    turns.leave(IP, "audit:3")
    assert turns.first(IP) == "audit:1"
    assert turns.join(IP, "audit:2", alive_s=30).ahead == 1


def test_a_waiter_that_stops_coming_back_drops_out_and_the_line_moves_on():
    turns.join(IP, "audit:dead", alive_s=0.3)        # its process died: it never comes back
    assert turns.join(IP, "audit:alive", alive_s=30).ahead == 1

    time.sleep(0.5)

    assert turns.join(IP, "audit:alive", alive_s=30).ahead == 0
    assert turns.first(IP) == "audit:alive" and turns.waiting(IP) == 1


def test_the_wait_is_counted_from_the_first_time_it_joined_by_redis_clock():
    first = turns.join(IP, "audit:9", alive_s=30)
    time.sleep(0.4)
    again = turns.join(IP, "audit:9", alive_s=30)

    assert first.waited_s < 0.1
    assert 0.35 <= again.waited_s < 5, again


def test_the_line_is_per_address():
    turns.join(IP, "audit:1", alive_s=30)
    other = "192.0.2.78"
    try:
        assert turns.join(other, "audit:2", alive_s=30).ahead == 0
    finally:
        redis_client().delete(*turns.keys(other)[:3])
    assert turns.join(IP, "audit:3", alive_s=30).ahead == 1


def test_an_idle_line_expires_from_redis_by_itself():
    turns.join(IP, "audit:1", alive_s=0.1)

    ttl_ms = redis_client().pttl(turns.keys(IP)[0])

    assert 0 < ttl_ms <= 60_100   # alive + one minute: nothing left behind for addresses no longer audited


def test_ahead_of_lists_the_tokens_before_one_in_order():
    for token in ("audit:1", "audit:2", "audit:3"):
        turns.join(IP, token, alive_s=30)

    assert turns.ahead_of(IP, "audit:1") == []
    assert turns.ahead_of(IP, "audit:3") == ["audit:1", "audit:2"]
    assert turns.ahead_of(IP, "audit:9") == ["audit:1", "audit:2", "audit:3"]
