"""Summaries of browser-probe loads: spread per variant x mode, increase % HTTPS over HTTP.

Input: the `loads` of workers.browser's result (plain dicts, see workers/browser/spec.py). Medians
and quartiles use linear interpolation between order statistics (numpy's default, "type 7").
Cold HTTPS samples flagged `no_connect_phase` (Chromium reported the new connection without its
TCP/TLS phases) are left out of the `connect` and `tls` statistics only.

One definition of "HTTPS vs HTTP", as everywhere in the product (tlsaudit.domain.compare): the
median of the HTTPS loads against the median of the HTTP loads, (HTTPS - HTTP) / HTTP, positive when
HTTPS is slower. `increase` gives it per timing metric with its 95 % interval, the loads of run r of
both variants paired (they ran back to back), so drift between runs widens the interval; one run gives
no interval. `increase_pct`, the seed's Table VII, is the same figure rounded, plus the counts
(requests, bytes) as the change of their medians. Pure: no Django, no sockets.
"""

from __future__ import annotations

from tlsaudit.domain import compare

COUNT_METRICS = ("requests", "bytes", "from_cache", "not_modified")
TIMING_METRICS = ("redirect", "dns", "connect", "tls", "ttfb", "download", "dom_interactive",
                  "dom_content_loaded", "load")
METRICS = COUNT_METRICS + TIMING_METRICS
CONNECT_PHASES = ("connect", "tls")
VARIANTS = ("https", "http")
MODES = ("cold", "warm")
# A probe is sized by time: rounds (HTTPS and HTTP, cold and warm) run while the next fits its
# seconds, never fewer than MIN_ROUNDS (an interval needs them); SETUP_S is what comes on top, at
# 150 ms RTT: Chromium's start, the RTT connects and the warm-up loads.
MIN_ROUNDS = compare.MIN_PAIRS
SETUP_S = 10
STATS_VERSION = 3   # 3: Harrell-Davis jackknife; 2: one definition, compare.median_change (1: Hodges-Lehmann)


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (q in 0..1) of a non-empty sorted list."""
    position = (len(sorted_values) - 1) * q
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def spread(values: list[float]) -> dict | None:
    """median, min, max, p25, p75 (and n) of the values; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return {"median": rnd(quantile(ordered, 0.5)), "min": rnd(ordered[0]), "max": rnd(ordered[-1]),
            "p25": rnd(quantile(ordered, 0.25)), "p75": rnd(quantile(ordered, 0.75)), "n": len(ordered)}


def rnd(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 2)


def metric_values(loads: list[dict], metric: str) -> list[float]:
    if metric in COUNT_METRICS:
        return [load[metric] for load in loads if load.get(metric) is not None]
    usable = [load for load in loads if not (metric in CONNECT_PHASES and load.get("no_connect_phase"))]
    return [load["timings_ms"][metric] for load in usable if load.get("timings_ms", {}).get(metric) is not None]


def summarize(loads: list[dict]) -> dict:
    """{"https_cold": {metric: spread, "samples": n, "no_connect_phase": n, "protocol": most common}, ...}."""
    summary = {}
    for variant in VARIANTS:
        for mode in MODES:
            group = [load for load in loads if load.get("variant") == variant and load.get("mode") == mode
                     and load.get("ok", True)]
            if not group:
                continue
            cell = {metric: spread(metric_values(group, metric)) for metric in METRICS}
            cell["samples"] = len(group)
            cell["no_connect_phase"] = sum(1 for load in group if load.get("no_connect_phase"))
            cell["protocol"] = most_common([load.get("protocol", "") for load in group])
            summary[f"{variant}_{mode}"] = cell
    return summary


def most_common(values: list[str]) -> str:
    values = [v for v in values if v]
    return max(sorted(set(values)), key=values.count) if values else ""


def percent_increase(base: float | None, value: float | None) -> float | None:
    """(value - base) / base x 100, one decimal; None when either is missing or base is 0."""
    if base is None or value is None or base == 0:
        return None
    return round((value - base) / base * 100.0, 1)


def increase_pct(summary: dict, changes: dict) -> dict:
    """{"cold": {metric: % HTTPS over HTTP}, "warm": {...}}: the timing metrics' `increase` rounded, the
    counts' change of their medians from `summarize`."""
    result = {}
    for mode in MODES:
        https, http = summary.get(f"https_{mode}"), summary.get(f"http_{mode}")
        row = {}
        if https and http:
            for metric in COUNT_METRICS:
                row[metric] = percent_increase(median(http, metric), median(https, metric))
            for metric in TIMING_METRICS:
                change = (changes.get(mode) or {}).get(metric)
                row[metric] = None if change is None or change["pct"] is None else round(change["pct"], 1)
        result[mode] = row
    return result


def increase(loads: list[dict]) -> dict:
    """{"cold": {metric: compare.median_change of HTTPS against HTTP}, "warm": {...}} for the timing
    metrics both variants measured (> 0), the loads of each run paired."""
    ok = [load for load in loads if load.get("ok", True) and not load.get("warmup")]
    result = {}
    for mode in MODES:
        sides = {v: [load for load in ok if load.get("variant") == v and load.get("mode") == mode] for v in VARIANTS}
        row = {}
        if sides["https"] and sides["http"]:
            for metric in TIMING_METRICS:
                pairs = run_pairs(sides["http"], sides["https"], metric)
                if pairs:
                    row[metric] = compare.median_change(pairs)
        result[mode] = row
    return result


def run_pairs(http: list[dict], https: list[dict], metric: str) -> list:
    """(HTTP, HTTPS) values of `metric` per run both variants measured (> 0), as distributions."""
    runs = sorted({load.get("run", 0) for load in http} & {load.get("run", 0) for load in https})
    pairs = [(compare.Distribution.of(metric_values([x for x in http if x.get("run", 0) == r], metric)),
              compare.Distribution.of(metric_values([x for x in https if x.get("run", 0) == r], metric)))
             for r in runs]
    return [(a, b) for a, b in pairs if a.n and b.n]


def median(cell: dict | None, metric: str) -> float | None:
    stats = (cell or {}).get(metric)
    return stats["median"] if stats else None


def medians(cell: dict | None) -> dict:
    """The CLI's shape for one variant x mode: counts, protocol and timings_ms as medians."""
    cell = cell or {}
    return {**{m: median(cell, m) for m in COUNT_METRICS}, "protocol": cell.get("protocol", ""),
            "samples": cell.get("samples", 0), "timings_ms": {m: median(cell, m) for m in TIMING_METRICS}}
