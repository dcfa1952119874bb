"""HTTPS vs HTTP from every request: the change in median time, with an interval drift can widen.

The question a site owner asks is "how much longer does a visitor wait over HTTPS?". Each side of a
comparison is measured as interleaved runs (HTTP, HTTPS, HTTP, HTTPS, ...), and every run keeps the time
of each of its requests (or handshakes, or page loads) as a distribution: exact values or an
HdrHistogram's buckets. The figure:

    change = median(every HTTPS request) / median(every HTTP request) - 1

positive when HTTPS is slower, so its sign always agrees with the two medians printed beside it.

Its 95 % interval treats the run pair as the unit of drift (docs/decisions.md "Statistics: every
request counts, the run pair is the unit of drift"): what drifts between runs (a neighbour's cron job, a
CPU's clock, a congested link) moves the pairs apart and must widen the interval, and what varies
within a run is already in each run's median. The standard error of the log change is the delete-one-
pair jackknife's (the change recomputed from every request of the other G - 1 pairs); times Student's
t with G - 1 degrees of freedom it gives the interval on the log scale, back-transformed, around the
change of the plain medians. The jackknife recomputes the change with Harrell-Davis medians (a weighted
mean of every order statistic, BenchmarkDotNet's quantile estimator): the jackknife needs a smooth
statistic, and a plain median is not one when a run holds one value per side (a browser probe's round:
deleting one pair moves the median a whole gap between two loads, and the error came out anywhere from
half to twice what it is, covering 86-91 % instead of 95). In tests/domain/test_compare.py's simulation
it covers the true change in 93-97 % of experiments from 3 to 10 pairs of hundreds of requests, quiet or
drifting, and in 92-93 % from 4 to 15 pairs of one request each. Under MIN_PAIRS pairs there is no interval: one pair cannot tell
what drifts between runs, and from two, t with one degree of freedom (x 12.7) gives intervals like
-99 % to +10,000 % that are right 95 % of the time and say nothing; the figure is shown with the words.

Pure: numpy for the sums, no Django, no sockets; no randomness, so the same runs give the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tlsaudit.domain import stats

METHOD = "median of every request; jackknife over the run pairs, t interval"
MIN_PAIRS = 3    # with 2, Student's t has 1 degree of freedom: x 12.7, an interval of -99 % to +10,000 %
# Request times are kept to 3 significant digits (HdrHistogram), so two medians closer than ~0.2 % may be
# one bucket apart: no interval is narrower than that (150.40 vs 150.14 ms is not "HTTPS 0.2 % faster").
RESOLUTION = math.log(1.002)


@dataclass(frozen=True)
class Distribution:
    """One run's per-request values (any unit, > 0) as sorted distinct values and their counts."""

    values: tuple[float, ...]
    counts: tuple[int, ...]

    @property
    def n(self) -> int:
        return sum(self.counts)

    @classmethod
    def of(cls, samples) -> Distribution:
        values, counts = np.unique(np.asarray([s for s in samples if s is not None and s > 0], dtype=float),
                                   return_counts=True)
        return cls(tuple(values.tolist()), tuple(int(c) for c in counts))

    @classmethod
    def of_counts(cls, pairs) -> Distribution:
        """From (value, count) pairs, e.g. an HdrHistogram's recorded buckets."""
        merged: dict[float, int] = {}
        for value, count in pairs:
            if value > 0 and count > 0:
                merged[float(value)] = merged.get(float(value), 0) + int(count)
        ordered = sorted(merged.items())
        return cls(tuple(v for v, _ in ordered), tuple(c for _, c in ordered))

    def median(self) -> float | None:
        return pooled_median([self])


def pooled_median(runs: list[Distribution]) -> float | None:
    """The median of every value of `runs` together (the mean of the two middle ones for an even count,
    as numpy and the probe's spreads compute it)."""
    values = np.concatenate([np.asarray(r.values, dtype=float) for r in runs]) if runs else np.array([])
    if not values.size:
        return None
    counts = np.concatenate([np.asarray(r.counts, dtype=float) for r in runs])
    order = np.argsort(values, kind="stable")
    return float(median_of(values[order], counts[order]))


def median_of(values: np.ndarray, counts: np.ndarray) -> float:
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])
    lower, upper = np.searchsorted(cumulative, [(total + 1) // 2, total // 2 + 1], side="left")
    return (values[lower] + values[upper]) / 2


def median_change(pairs: list[tuple[Distribution, Distribution]]) -> dict:
    """(median(other) - median(base)) / median(base) over interleaved (base, other) run pairs, as
    stats.change (pct, low_pct, high_pct, verdict, n pairs) with both medians. See the module docstring."""
    pairs = [(b, o) for b, o in pairs if b.n and o.n]
    if not pairs:
        return {**stats.no_change(), "base_median": None, "other_median": None}
    base_median = pooled_median([b for b, _ in pairs])
    other_median = pooled_median([o for _, o in pairs])
    estimate = math.log(other_median / base_median)
    medians = {"base_median": base_median, "other_median": other_median}
    if len(pairs) < MIN_PAIRS:
        verdict = stats.SINGLE if len(pairs) == 1 else stats.FEW_RUNS
        return {**stats.change(math.exp(estimate), None, None, len(pairs), verdict), "verdict": verdict, **medians}
    half = max(RESOLUTION, stats.t_quantile((1 + stats.LEVEL) / 2, len(pairs) - 1) * jackknife_error(pairs))
    return {**stats.change(math.exp(estimate), math.exp(estimate - half), math.exp(estimate + half), len(pairs),
                           METHOD), **medians}


def smooth_log_change(pairs: list[tuple[Distribution, Distribution]]) -> float:
    return math.log(harrell_davis_median([o for _, o in pairs]) / harrell_davis_median([b for b, _ in pairs]))


def jackknife_error(pairs: list[tuple[Distribution, Distribution]]) -> float:
    """The delete-one-pair jackknife's standard error of the log change, from Harrell-Davis medians."""
    count = len(pairs)
    left_out = np.array([smooth_log_change(pairs[:i] + pairs[i + 1:]) for i in range(count)])
    return math.sqrt((count - 1) / count * float(((left_out - left_out.mean()) ** 2).sum()))


def harrell_davis_median(runs: list[Distribution]) -> float:
    """Harrell & Davis (1982): the mean of every value of `runs` weighted by how likely it is to be the
    median of a sample of that size, i.e. the Beta((n+1)/2, (n+1)/2) mass over its positions. Smooth in
    the values, so a jackknife of it is consistent; for many values it is the median itself."""
    values = np.concatenate([np.asarray(r.values, dtype=float) for r in runs])
    counts = np.concatenate([np.asarray(r.counts, dtype=float) for r in runs])
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    total = counts.sum()
    edges = np.concatenate([[0.0], np.cumsum(counts)]) / total
    weights = np.diff(symmetric_beta_cdf(edges, (total + 1) / 2))
    return float((weights * values).sum() / weights.sum())


def symmetric_beta_cdf(x: np.ndarray, a: float, points: int = 2001) -> np.ndarray:
    """The Beta(a, a) CDF (a >= 1) at `x` in [0, 1], integrated numerically (numpy has no incomplete
    beta) on a grid spanning 12 standard deviations each side of 1/2, where all but ~1e-30 of it lies;
    within 1e-5 of the exact CDF (scipy's, from a = 1 to 5e5)."""
    half_width = min(0.5, 12 * math.sqrt(1 / (4 * (2 * a + 1))))
    grid = np.linspace(0.5 - half_width, 0.5 + half_width, points)
    inner = np.clip(grid, 1e-300, None) * np.clip(1 - grid, 1e-300, None)
    density = np.exp((a - 1) * (np.log(inner) - math.log(0.25)))   # scaled to 1 at the centre
    mass = np.concatenate([[0.0], np.cumsum((density[1:] + density[:-1]) / 2)])
    return np.interp(x, grid, mass / mass[-1], left=0.0, right=1.0)
