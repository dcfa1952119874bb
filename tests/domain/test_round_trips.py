"""RTT estimates from TCP connect times, and phase times as RTT multiples (tlsaudit/domain/round_trips.py)."""

import random

import pytest
from hdrh.histogram import HdrHistogram

from tlsaudit.domain.round_trips import (
    MIN_MEANINGFUL_RTT_MS,
    estimate_rtt_from_histogram,
    estimate_rtt_ms,
    percentile_nearest_rank,
    phase_round_trips,
    round_trips,
    round_trips_label,
)


def test_the_rtt_of_connects_that_only_queue_on_top_of_it_is_their_low_end():
    # given 200 connects over a 50 ms path, each delayed 0-40 ms more by a busy server (exponential)
    rng = random.Random(5)
    connects = [50 + rng.expovariate(1 / 8) for _ in range(200)]
    # then the estimate sits within 2 ms above the path's RTT, while the median is well above it
    assert 50 <= estimate_rtt_ms(connects) <= 52
    assert sorted(connects)[100] > 54


def test_one_sample_below_the_path_does_not_decide_the_estimate():
    connects = [50.2, 50.4, 50.1, 50.3, 50.6, 50.2, 50.5, 50.3, 50.4, 50.2, 50.3, 31.0]
    assert estimate_rtt_ms(connects) == 50.1


def test_there_is_no_estimate_without_samples():
    assert estimate_rtt_ms([]) is None
    assert estimate_rtt_ms([None, 0]) is None
    assert estimate_rtt_from_histogram(None) is None
    assert estimate_rtt_from_histogram(HdrHistogram(1, 60_000_000, 3).encode()) is None


def test_the_histogram_estimate_matches_the_samples_one():
    rng = random.Random(9)
    connects_us = [int(20_000 + rng.expovariate(1 / 3000)) for _ in range(1000)]
    histogram = HdrHistogram(1, 60_000_000, 3)
    for value in connects_us:
        histogram.record_value(value)
    exact = estimate_rtt_ms([v / 1000 for v in connects_us])
    assert estimate_rtt_from_histogram(histogram.encode()) == pytest.approx(exact, rel=0.002)  # 3 digits


@pytest.mark.parametrize("values, percent, expected", [
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 10, 1), ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 10, 2),
    ([7], 10, 7), ([3, 1, 2], 50, 2), ([3, 1, 2], 100, 3),
])
def test_nearest_rank_percentiles(values, percent, expected):
    assert percentile_nearest_rank(values, percent) == expected


@pytest.mark.parametrize("value, rtt, expected", [
    (100.0, 50.0, 2.0),    # TLS 1.2 full handshake at 50 ms
    (52.4, 50.0, 1.0),     # TLS 1.3
    (205.6, 50.0, 4.1),    # a new HTTPS/1.2 request: TCP + 2 + request
    (31.0, 20.0, 1.6),
    (0.0, 50.0, 0.0),      # a reused connection's connect
])
def test_a_phase_in_round_trips(value, rtt, expected):
    assert round_trips(value, rtt) == expected


def test_no_multiples_on_loopback_or_without_an_rtt():
    assert round_trips(2.4, 0.05) is None                       # loopback: only CPU, "48 RTT" would be silly
    assert round_trips(30.0, MIN_MEANINGFUL_RTT_MS - 0.1) is None
    assert round_trips(30.0, MIN_MEANINGFUL_RTT_MS) == 3.0
    assert round_trips(30.0, None) is None and round_trips(None, 50.0) is None


def test_labels_and_whole_rows():
    assert round_trips_label(101.3, 50.0) == "≈ 2 RTT"
    assert round_trips_label(57.0, 50.0) == "≈ 1.1 RTT"
    assert round_trips_label(1.2, 0.04) == ""
    assert phase_round_trips({"tcp": 50.3, "tls": 104.9, "ttfb": None}, 50.0) == {"tcp": 1.0, "tls": 2.1, "ttfb": None}
    assert phase_round_trips({"tcp": 0.05, "tls": 1.9}, 0.05) == {"tcp": None, "tls": None}
