"""Comparing measurements honestly: medians with 95 % intervals, signed changes, and when to say nothing.

The unit. Every interval here treats its values as independent repetitions of one measurement: the
repeats of a load-test cell or a handshake cell (each an ab-style run of hundreds of requests or
handshakes), or the page loads of a browser probe (each in a fresh browser context). Requests inside
one run are not independent (a closed loop, shared queues, drift), so they never serve as the unit.

The methods (see docs/decisions.md "Statistics: the repeat is the unit"):

- `median_interval`: the median of the repeats. With fewer than BOOTSTRAP_MIN_N values, a
  t interval on the logs (df = n - 1): few repeats of an average over hundreds of requests are close
  to log-normal, and no distribution-free method reaches 95 % from 3 values (the widest order-statistic
  interval, min..max of 3, covers 75 %). From BOOTSTRAP_MIN_N values on, a percentile bootstrap of the
  median (seeded, so a page shows the same interval on every load).
- `paired_change`: (other - base) / base, signed, from interleaved pairs (base_i, other_i): the mean
  log ratio with a t interval over the pairs, back-transformed. Pairing removes what drifted between
  pairs; the geometric mean of ratios cannot be dragged by one pair the way a mean of % can.
- `shift_change`: the same signed change from two independent samples: Hodges-Lehmann shift of the
  logs with its distribution-free Mann-Whitney interval (exact without ties below 50 per side).

A change whose interval contains 0 is "no significant difference": callers show those words, not the
number. Pure: no Django, no sockets, no numpy.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from statistics import NormalDist

LEVEL = 0.95
BOOTSTRAP_MIN_N = 20
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20_151          # fixed: the same values always give the same interval
MW_EXACT_MAX = 50                # exact Mann-Whitney distribution below this many values per side (as R)

# What a comparison concluded (`Change["verdict"]`).
HIGHER, LOWER, NO_DIFFERENCE = "higher", "lower", "no significant difference"
SINGLE, NO_DATA, TOO_SHORT = "single run, no interval", "no data", "too short to conclude"
FEW_RUNS = "too few runs for an interval"     # 2 pairs: t with 1 degree of freedom (x 12.7) says nothing
WIDE_PCT = 100     # an interval wider than this many points of % is said to be too wide to tell


# --- basics ----------------------------------------------------------------------------------

def median(values: list[float]) -> float | None:
    """The middle value (mean of the two middle ones for even n); None for no values."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return None
    middle = n // 2
    return float(ordered[middle]) if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (e.g. p = 0.975, df = 2 -> 4.303), by bisection on the exact CDF."""
    if df < 1:
        raise ValueError("t_quantile needs df >= 1")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


def t_cdf(t: float, df: int) -> float:
    x = df / (df + t * t)
    tail = 0.5 * regularized_beta(x, df / 2, 0.5)
    return 1 - tail if t > 0 else tail


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) by its continued fraction (Numerical Recipes' betacf), accurate to ~1e-12."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * beta_fraction(x, a, b) / a
    return 1 - front * beta_fraction(1 - x, b, a) / b


def beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


# --- one quantity: median and interval ---------------------------------------------------------

def estimate(value, low, high, n: int, method: str) -> dict:
    return {"median": value, "low": low, "high": high, "n": n, "method": method, "level": LEVEL}


def median_interval(values: list[float], level: float = LEVEL) -> dict:
    """{"median", "low", "high", "n", "method", "level"} of independent repeats (see the module docstring).
    One value: no interval ("single run"). The bounds are None whenever there is no interval."""
    values = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(values)
    if n == 0:
        return estimate(None, None, None, 0, NO_DATA)
    if n == 1:
        return estimate(values[0], None, None, 1, SINGLE)
    if n >= BOOTSTRAP_MIN_N:
        low, high = bootstrap_median_interval(values, level)
        return estimate(median(values), low, high, n, f"bootstrap of the median ({BOOTSTRAP_RESAMPLES} resamples)")
    low, high = t_interval(values, level)
    return estimate(median(values), low, high, n, "t interval on the logs" if min(values) > 0 else "t interval")


def t_interval(values: list[float], level: float = LEVEL) -> tuple[float, float]:
    """Mean ± t·SE, on the logs when every value is positive (rates, times), back-transformed."""
    logs = min(values) > 0
    xs = [math.log(v) for v in values] if logs else list(values)
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile((1 + level) / 2, n - 1) * sd / math.sqrt(n)
    if logs:
        return math.exp(mean - half), math.exp(mean + half)
    return mean - half, mean + half


def bootstrap_median_interval(values: list[float], level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES,
                              seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap of the median: resample with replacement, take each resample's median,
    return the (1 - level) / 2 and (1 + level) / 2 quantiles of those medians. Seeded: reproducible."""
    rng = random.Random(seed)
    n = len(values)
    middle, even = n // 2, n % 2 == 0
    medians = []
    for _ in range(resamples):
        sample = sorted(rng.choices(values, k=n))
        medians.append((sample[middle - 1] + sample[middle]) / 2 if even else sample[middle])
    medians.sort()
    low_index = int(math.floor(resamples * (1 - level) / 2))
    high_index = int(math.ceil(resamples * (1 + level) / 2)) - 1
    return medians[low_index], medians[min(high_index, resamples - 1)]


# --- two quantities: the signed relative change ------------------------------------------------

def change(estimate_ratio, low_ratio, high_ratio, n: int, method: str) -> dict:
    """A relative change (ratio - 1) as % with its interval and verdict: "higher" / "lower" when the
    interval excludes 0, "no significant difference" when it spans 0, "single run, no interval"."""
    result = {"pct": as_pct(estimate_ratio), "low_pct": as_pct(low_ratio), "high_pct": as_pct(high_ratio), "n": n,
              "method": method, "level": LEVEL}
    result["verdict"] = verdict(result)
    return result


def as_pct(ratio: float | None) -> float | None:
    return None if ratio is None else round((ratio - 1) * 100, 3)


def no_change(n: int = 0) -> dict:
    return change(None, None, None, n, NO_DATA)


def verdict(result: dict) -> str:
    if result["pct"] is None:
        return NO_DATA
    if result["low_pct"] is None or result["high_pct"] is None:
        return SINGLE
    if result["low_pct"] > 0:
        return HIGHER
    if result["high_pct"] < 0:
        return LOWER
    return NO_DIFFERENCE


def usable_pairs(pairs) -> list[tuple[float, float]]:
    """Pairs where both sides measured something (> 0): a side with zero requests has no ratio."""
    return [(float(a), float(b)) for a, b in pairs if a is not None and b is not None and a > 0 and b > 0
            and math.isfinite(a) and math.isfinite(b)]


def paired_change(pairs, level: float = LEVEL) -> dict:
    """(other - base) / base from interleaved (base, other) pairs: exp(mean log ratio) - 1, with a t
    interval over the pairs (df = pairs - 1). Negative when `other` is smaller (e.g. HTTPS faster)."""
    pairs = usable_pairs(pairs)
    if not pairs:
        return no_change()
    logs = [math.log(b / a) for a, b in pairs]
    n = len(logs)
    mean = sum(logs) / n
    if n == 1:
        return change(math.exp(mean), None, None, 1, SINGLE)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t_quantile((1 + level) / 2, n - 1) * sd / math.sqrt(n)
    return change(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, "paired t on log ratios")


def inconclusive(result: dict) -> dict:
    """The change, marked "too short to conclude": shown as those words, never drawn."""
    return {**result, "verdict": TOO_SHORT}


def pooled_paired_change(groups: list[list], level: float = LEVEL) -> dict:
    """One change over several comparisons (e.g. every concurrency level of a sweep), by repeat: for
    each repeat, the mean log ratio over its pairs; then the t interval over the repeats. The estimate
    is the geometric mean of the ratios minus 1: one level 350x apart cannot outweigh the rest as an
    arithmetic mean of % does. `groups[r]` holds repeat r's (base, other) pairs."""
    means = []
    for pairs in groups:
        usable = usable_pairs(pairs)
        if usable:
            means.append(sum(math.log(b / a) for a, b in usable) / len(usable))
    if not means:
        return no_change()
    return paired_change([(1.0, math.exp(m)) for m in means], level)


def negated(result: dict) -> dict:
    """The same comparison as a cost of the other sign: for rates, (base - other) / base is the cost
    when `result` is the change (other - base) / base. Keeps "faster = negative" for requests/s."""
    flipped = {**result, "pct": minus(result["pct"]), "low_pct": minus(result["high_pct"]),
               "high_pct": minus(result["low_pct"])}
    flipped["verdict"] = verdict(flipped)
    return flipped


def minus(pct: float | None) -> float | None:
    return None if pct is None else -pct + 0.0   # + 0.0: no "-0.0" on a page


def hodges_lehmann(base: list[float], other: list[float]) -> float:
    """The Hodges-Lehmann shift of `other` against `base`: the median of every difference other_j - base_i."""
    return median([y - x for x in base for y in other])


def mann_whitney_interval(base: list[float], other: list[float], level: float = LEVEL) -> tuple[float, float] | None:
    """The distribution-free interval of the shift (other - base) that goes with Hodges-Lehmann: the
    k-th smallest and k-th largest of the m x n differences, k from the Mann-Whitney U distribution
    (exact when there are no ties and both sides have fewer than MW_EXACT_MAX values, else the normal
    approximation with a continuity correction). None when the samples are too small for `level`
    (3 vs 3 reaches only 90 %)."""
    m, n = len(base), len(other)
    if not m or not n:
        return None
    differences = sorted(y - x for x in base for y in other)
    k = critical_count(m, n, level, ties=len(set(base) | set(other)) < m + n)
    if k < 1:
        return None
    return differences[k - 1], differences[m * n - k]


def critical_count(m: int, n: int, level: float, ties: bool = False) -> int:
    """How many differences to cut from each end: the largest c + 1 with P(U <= c) <= (1 - level) / 2."""
    alpha = (1 - level) / 2
    if ties or m >= MW_EXACT_MAX or n >= MW_EXACT_MAX:
        z = NormalDist().inv_cdf(1 - alpha)
        c = m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12) - 0.5
        return max(0, int(math.floor(c)) + 1) if c >= 0 else 0
    counts = u_distribution(m, n)
    total, cumulative, cut = sum(counts), 0, 0
    for u, count in enumerate(counts):
        cumulative += count
        if cumulative / total > alpha:
            break
        cut = u + 1
    return cut


def u_distribution(m: int, n: int) -> list[int]:
    """Number of arrangements giving U = 0 .. m n: the coefficients of the Gaussian binomial [m+n, m]_q,
    built as prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) with exact integers."""
    size = m * n + 1
    poly = [1] + [0] * (size - 1)
    for i in range(1, m + 1):
        step = n + i
        for j in range(size - 1, step - 1, -1):   # multiply by (1 - q^(n+i))
            poly[j] -= poly[j - step]
        for j in range(i, size):                  # divide by (1 - q^i): a running sum
            poly[j] += poly[j - i]
    return poly


def shift_change(base: list[float], other: list[float], level: float = LEVEL) -> dict:
    """(other - base) / base from two independent samples of positive values: the Hodges-Lehmann shift
    of the logs and its Mann-Whitney interval, back-transformed (a ratio of typical values)."""
    base = [float(v) for v in base if v is not None and v > 0]
    other = [float(v) for v in other if v is not None and v > 0]
    if not base or not other:
        return no_change()
    log_base, log_other = [math.log(v) for v in base], [math.log(v) for v in other]
    shift = hodges_lehmann(log_base, log_other)
    bounds = mann_whitney_interval(log_base, log_other, level)
    n = min(len(base), len(other))
    if bounds is None:
        return change(math.exp(shift), None, None, n, "Hodges-Lehmann (too few values for a 95 % interval)")
    return change(math.exp(shift), math.exp(bounds[0]), math.exp(bounds[1]), n,
                  "Hodges-Lehmann with the Mann-Whitney interval")


# --- words ----------------------------------------------------------------------------------------

def change_words(result: dict, side: str = "HTTPS", slower: str = "slower", faster: str = "faster") -> str:
    """The verdict in words for a page, a CSV cell or a terminal: "HTTPS slower", "HTTPS faster",
    "no significant difference", "single run, no interval", "too short to conclude", "no data"."""
    return {HIGHER: f"{side} {slower}", LOWER: f"{side} {faster}"}.get(result["verdict"], result["verdict"])


def change_text(result: dict, **words) -> str:
    """"-99.7 % [-99.8, -99.6] (HTTPS faster)"; "no significant difference (95 % interval -8.0 … +2.2 %)",
    not a number; only the words when there is nothing to show (too short, no data)."""
    if result["verdict"] in (TOO_SHORT, NO_DATA):
        return change_words(result, **words)
    if result["verdict"] == NO_DIFFERENCE:
        text = f"{NO_DIFFERENCE} (95 % interval {result['low_pct']:+.1f} … {result['high_pct']:+.1f} %)"
        if result["high_pct"] - result["low_pct"] > WIDE_PCT:
            text += ": the runs disagree, more repeats or longer runs would tell"
        return text
    if result["verdict"] == FEW_RUNS:
        return f"{result['pct']:+.1f} % ({FEW_RUNS}: 3 or more repeats give one)"
    number = f"{result['pct']:+.1f} %"
    if result["low_pct"] is not None:
        number += f" [{result['low_pct']:+.1f}, {result['high_pct']:+.1f}]"
    return f"{number} ({change_words(result, **words)})"


# --- nothing to conclude from ----------------------------------------------------------------------

CLOCK_RESOLUTION_S = 1e-6    # the engines time with perf_counter / CLOCK_MONOTONIC in µs


def too_short(wall_s: float | None, count: int | None) -> str | None:
    """Why nothing can be read from one run (None when something can): no request, handshake or page
    load completed, or it took less than the clock can tell. Short runs are not refused: how sure a
    comparison is comes from its interval (tlsaudit/domain/compare.py), not from a gate."""
    if not count:
        return "nothing completed"
    if wall_s is None or wall_s < CLOCK_RESOLUTION_S:
        return "shorter than the clock's resolution"
    return None
