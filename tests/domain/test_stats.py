"""tlsaudit.domain.stats against known distributions: intervals must cover the true value ~95 % of the
time over many seeded samples, estimates must recover known shifts, and the edge cases (one value, ties,
zeros, a side with nothing) must say so instead of inventing a number. Seeds are fixed: no flakes."""

import math
import random
from itertools import combinations

import pytest

from tlsaudit.domain import stats

DISTRIBUTIONS = {   # name -> (draw, true median)
    "normal": (lambda rng: rng.gauss(10, 1), 10.0),
    "lognormal": (lambda rng: rng.lognormvariate(0, 0.5), 1.0),
    "exponential": (lambda rng: rng.expovariate(1), math.log(2)),
}


def coverage(trials: int, seed: int, make_interval, truth) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        low, high = make_interval(rng)
        hits += low <= truth <= high
    return hits / trials


# --- basics ------------------------------------------------------------------------------------

def test_the_median_of_odd_even_and_empty_lists():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.median([]) is None


@pytest.mark.parametrize("df, expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423),
                                          (10_000, 1.9602)])
def test_t_quantiles_match_the_tables(df, expected):
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)
    assert stats.t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-3)


@pytest.mark.parametrize("m, n", [(1, 1), (2, 3), (3, 3), (4, 5), (5, 5)])
def test_the_u_distribution_counts_every_arrangement(m, n):
    # Brute force: every way to choose which of the m + n ranks belong to the first sample.
    expected = [0] * (m * n + 1)
    for ranks in combinations(range(m + n), m):
        u = sum(rank - i for i, rank in enumerate(ranks))   # pairs (x, y) with y < x
        expected[u] += 1
    assert stats.u_distribution(m, n) == expected
    assert sum(expected) == math.comb(m + n, m)


@pytest.mark.parametrize("m, n, cut", [(3, 3, 0), (4, 4, 1), (5, 5, 3), (6, 6, 6), (10, 10, 24), (8, 12, 23)])
def test_the_mann_whitney_cut_matches_the_published_critical_values(m, n, cut):
    # Two-sided 5 % critical values of U (reject when U <= c): cut = c + 1; none for 3 vs 3.
    assert stats.critical_count(m, n, 0.95) == cut


def test_the_normal_approximation_is_close_to_the_exact_cut_near_the_switch():
    assert abs(stats.critical_count(49, 49, 0.95, ties=True) - stats.critical_count(49, 49, 0.95)) <= 2


# --- median and its interval ---------------------------------------------------------------------

@pytest.mark.slow   # thousands of simulated experiments: in every full run, not in the edit-test loop
@pytest.mark.parametrize("name", DISTRIBUTIONS)
@pytest.mark.parametrize("n, trials", [(3, 1500), (10, 1000), (25, 300)])
def test_the_median_interval_covers_the_true_median_95_percent_of_the_time(name, n, trials):
    draw, truth = DISTRIBUTIONS[name]

    def interval(rng):
        result = stats.median_interval([draw(rng) for _ in range(n)])
        return result["low"], result["high"]

    assert coverage(trials, seed=n, make_interval=interval, truth=truth) == pytest.approx(0.95, abs=0.03)


def test_small_samples_use_the_t_interval_and_large_ones_the_bootstrap():
    assert stats.median_interval([1.0, 2.0, 3.0])["method"] == "t interval on the logs"
    assert stats.median_interval([-1.0, 0.0, 1.0])["method"] == "t interval"   # not all positive: raw values
    big = stats.median_interval([float(v) for v in range(1, stats.BOOTSTRAP_MIN_N + 1)])
    assert big["method"].startswith("bootstrap of the median") and big["n"] == stats.BOOTSTRAP_MIN_N
    assert big["low"] < big["median"] < big["high"]


def test_the_bootstrap_is_reproducible_and_follows_its_seed():
    rng = random.Random(5)
    values = [rng.random() for _ in range(40)]
    assert stats.bootstrap_median_interval(values) == stats.bootstrap_median_interval(values)
    # The median's bootstrap distribution is discrete: only with few resamples do two seeds disagree.
    assert stats.bootstrap_median_interval(values, resamples=40, seed=1) != stats.bootstrap_median_interval(
        values, resamples=40, seed=2)


def test_one_value_has_no_interval_and_none_has_no_median():
    assert stats.median_interval([12.5]) == {"median": 12.5, "low": None, "high": None, "n": 1,
                                             "method": stats.SINGLE, "level": 0.95}
    assert stats.median_interval([None, float("nan")])["median"] is None


def test_identical_repeats_give_a_zero_width_interval():
    result = stats.median_interval([7.0, 7.0, 7.0])
    assert (result["low"], result["median"], result["high"]) == pytest.approx((7.0, 7.0, 7.0))


# --- paired change -------------------------------------------------------------------------------

NOISES = {   # log-scale noise of one run, centred
    "normal": lambda rng: rng.gauss(0, 0.1),
    "lognormal": lambda rng: math.log(rng.lognormvariate(0, 0.1)),
    "exponential": lambda rng: 0.1 * (rng.expovariate(1) - 1),   # a long right tail: stalls
}


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("pairs", [3, 8])
def test_the_paired_change_covers_the_true_ratio_under_drift(noise, pairs):
    # Runs drift together (shared machine, real network); HTTPS takes 0.8x HTTP's time.
    true_ratio = 0.8
    draw = NOISES[noise]

    def interval(rng):
        data = []
        for _ in range(pairs):
            drift = rng.gauss(0, 0.2)
            data.append((math.exp(drift + draw(rng)), true_ratio * math.exp(drift + draw(rng))))
        result = stats.paired_change(data)
        return result["low_pct"], result["high_pct"]

    assert coverage(1500, seed=pairs, make_interval=interval, truth=(true_ratio - 1) * 100) == pytest.approx(
        0.95, abs=0.03)


def test_a_faster_other_side_is_negative_and_significant():
    # HTTP behind a 50 ms link, HTTPS local: HTTPS takes ~1/350 of the time.
    result = stats.paired_change([(10.0, 10.0 / 350), (10.2, 10.0 / 340), (9.9, 10.0 / 360)])
    assert result["pct"] < -99 and result["high_pct"] < 0
    assert result["verdict"] == stats.LOWER


def test_a_slower_other_side_is_positive_and_a_spanning_interval_is_no_difference():
    assert stats.paired_change([(1.0, 1.5), (1.1, 1.6), (0.9, 1.4)])["verdict"] == stats.HIGHER
    spanning = stats.paired_change([(1.0, 1.2), (1.0, 0.8), (1.0, 1.05)])
    assert spanning["low_pct"] < 0 < spanning["high_pct"]
    assert spanning["verdict"] == stats.NO_DIFFERENCE


def test_one_pair_is_a_single_run_and_zero_sides_are_left_out():
    single = stats.paired_change([(2.0, 1.0)])
    assert (single["pct"], single["low_pct"], single["verdict"]) == (-50.0, None, stats.SINGLE)
    assert stats.paired_change([(2.0, 1.0), (0, 1.0), (1.0, 0), (None, 1.0)])["n"] == 1
    nothing = stats.paired_change([(0, 5.0), (3.0, 0)])
    assert (nothing["pct"], nothing["verdict"]) == (None, stats.NO_DATA)


def test_negated_turns_a_rate_ratio_into_a_cost_of_the_same_direction():
    # HTTPS serves 350x the requests/s of HTTP: the requests/s overhead (HTTP - HTTPS) / HTTP is -34,900 %.
    rates = stats.paired_change([(10.0, 3500.0), (10.0, 3400.0), (10.0, 3600.0)])
    cost = stats.negated(rates)
    assert cost["pct"] == pytest.approx(-34_900, rel=0.01)
    assert cost["low_pct"] == pytest.approx(-rates["high_pct"]) and cost["high_pct"] == pytest.approx(-rates["low_pct"])
    assert cost["verdict"] == stats.LOWER and rates["verdict"] == stats.HIGHER


# --- Hodges-Lehmann and Mann-Whitney ---------------------------------------------------------------

def test_hodges_lehmann_recovers_a_known_shift():
    base = [random.Random(1).expovariate(1) for _ in range(15)]
    assert stats.hodges_lehmann(base, [x + 5 for x in base]) == pytest.approx(5)
    assert stats.hodges_lehmann([1, 2, 3], [1, 2, 3]) == 0


@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_the_mann_whitney_interval_covers_a_known_shift(name):
    draw, _ = DISTRIBUTIONS[name]

    def interval(rng):
        base = [draw(rng) for _ in range(8)]
        return stats.mann_whitney_interval(base, [draw(rng) + 2.0 for _ in range(8)])

    # Exact and discrete: at least 95 %, a little more (8 vs 8 reaches 95.0-95.9 %).
    assert 0.94 <= coverage(1500, seed=8, make_interval=interval, truth=2.0) <= 0.98


def test_three_against_three_cannot_reach_95_percent():
    assert stats.mann_whitney_interval([1, 2, 3], [4, 5, 6]) is None
    result = stats.shift_change([1, 2, 3], [4, 5, 6])
    assert result["pct"] is not None and result["low_pct"] is None and result["verdict"] == stats.SINGLE


def test_ties_fall_back_to_the_normal_approximation_and_still_give_an_interval():
    base, other = [10, 10, 10, 11, 11, 12, 12, 12], [14, 14, 15, 15, 15, 16, 16, 17]
    low, high = stats.mann_whitney_interval(base, other)
    assert low <= stats.hodges_lehmann(base, other) <= high and low > 0


def test_shift_change_is_a_signed_relative_change_and_ignores_zeros():
    slower = stats.shift_change([100, 102, 98, 101, 99], [150, 149, 155, 151, 148])
    assert slower["pct"] == pytest.approx(50, abs=2) and slower["verdict"] == stats.HIGHER
    faster = stats.shift_change([150, 149, 155, 151, 148, 0], [100, 102, 98, 101, 99])
    assert faster["pct"] < 0 and faster["verdict"] == stats.LOWER
    assert stats.shift_change([], [1, 2])["verdict"] == stats.NO_DATA
    assert stats.shift_change([0, 0], [1, 2])["verdict"] == stats.NO_DATA


# --- too short to conclude -------------------------------------------------------------------------

def test_a_run_is_only_unusable_when_nothing_completed_or_the_clock_cannot_tell():
    assert stats.too_short(0.05, 12) is None           # short runs are judged by their interval, not refused
    assert stats.too_short(5.0, 0) == "nothing completed"
    assert stats.too_short(None, 3) == stats.too_short(0.0, 3) == "shorter than the clock's resolution"

