"""Summaries of handshake-timing results (issue #4 "Handshake matrix"). Pure: no Django, no sockets.

Inputs are the plain dicts of workers.load.handshake (histograms are encoded HdrHistograms in µs).
SD is the sample standard deviation (n - 1), as ab and the seed's tables use; it is computed from
the histogram buckets, so it stays exact under merges (values within 0.1 %, the histogram's 3 digits).
"""

from __future__ import annotations

import math
import re

from hdrh.histogram import HdrHistogram

PERCENTILES = (50, 95, 99)
FAMILIES = (("AES-128-GCM", re.compile(r"AES_?128_GCM")), ("AES-256-GCM", re.compile(r"AES_?256_GCM")),
            ("CHACHA20-POLY1305", re.compile(r"CHACHA20")))


def decode(encoded: str | bytes) -> HdrHistogram:
    return HdrHistogram.decode(encoded.encode("ascii") if isinstance(encoded, str) else encoded)


def histogram_summary(encoded: str | bytes) -> dict:
    """count, mean_ms, sd_ms (sample), p50/p95/p99_ms, min_ms, max_ms of an encoded µs histogram (None when empty)."""
    h = decode(encoded)
    count = h.get_total_count()
    if not count:
        return {"count": 0, "mean_ms": None, "sd_ms": None, "min_ms": None, "max_ms": None,
                **{f"p{p}_ms": None for p in PERCENTILES}}
    mean_us, sd_us = mean_and_sd(h)
    return {
        "count": count, "mean_ms": ms(mean_us), "sd_ms": ms(sd_us),
        "min_ms": ms(h.get_min_value()), "max_ms": ms(h.get_max_value()),
        **{f"p{p}_ms": ms(h.get_value_at_percentile(p)) for p in PERCENTILES},
    }


def mean_and_sd(h: HdrHistogram) -> tuple[float, float]:
    """Mean and sample SD (n - 1) in µs over the recorded buckets (hdrh's own get_stddev divides by n)."""
    count = h.get_total_count()
    buckets = [(item.value_iterated_to, item.count_at_value_iterated_to) for item in h.get_recorded_iterator()]
    mean = sum(v * c for v, c in buckets) / count
    if count < 2:
        return mean, 0.0
    variance = sum(c * (v - mean) ** 2 for v, c in buckets) / (count - 1)
    return mean, math.sqrt(variance)


def ms(us: float) -> float:
    return round(us / 1000.0, 3)


def suite_family(suite: str | None) -> str | None:
    """"AES-128-GCM" / "AES-256-GCM" / "CHACHA20-POLY1305" for IANA or OpenSSL names; None otherwise."""
    for family, pattern in FAMILIES:
        if suite and pattern.search(suite.upper().replace("-", "_")):
            return family
    return None


def faster_pct(slow_ms: float | None, fast_ms: float | None) -> float | None:
    """How much less time `fast` takes than `slow`, in % of `slow`: (slow - fast) / slow x 100."""
    if not slow_ms or fast_ms is None:
        return None
    return round((slow_ms - fast_ms) / slow_ms * 100.0, 1)


def compare_versions(cells: list[dict]) -> list[dict]:
    """TLS 1.2 vs 1.3 mean full-handshake time per (suite family, agents), plus one "all" row per agents level.

    Means of several cells in one group (e.g. ECDHE-RSA and ECDHE-ECDSA on TLS 1.2) are weighted by count.
    Row: family, agents, tls12_mean_ms, tls13_mean_ms, tls13_faster_pct ((1.2 - 1.3) / 1.2 x 100).
    """
    groups: dict[tuple[str, int], dict[str, list[tuple[int, float]]]] = {}
    for cell in cells:
        if cell.get("mode", "full") != "full" or not cell.get("count") or cell.get("mean_ms") is None:
            continue
        family = suite_family(cell.get("suite") or cell.get("requested_suite"))
        for key in ((family, cell["agents"]), ("all", cell["agents"])):
            if key[0] is not None:
                groups.setdefault(key, {}).setdefault(cell["version"], []).append((cell["count"], cell["mean_ms"]))
    rows = []
    for (family, agents), by_version in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        tls12, tls13 = weighted_mean(by_version.get("1.2")), weighted_mean(by_version.get("1.3"))
        rows.append({"family": family, "agents": agents, "tls12_mean_ms": tls12, "tls13_mean_ms": tls13,
                     "tls13_faster_pct": faster_pct(tls12, tls13)})
    return rows


def weighted_mean(pairs: list[tuple[int, float]] | None) -> float | None:
    if not pairs:
        return None
    total = sum(n for n, _ in pairs)
    return round(sum(n * m for n, m in pairs) / total, 3)


def compare_resumption(cells: list[dict]) -> list[dict]:
    """Full vs resumed mean per version (resumed cells next to the full cell of the same suite and agents)."""
    rows = []
    for resumed in (c for c in cells if c.get("mode") == "resumed"):
        full = next((c for c in cells if c.get("mode", "full") == "full" and c.get("version") == resumed["version"]
                     and c.get("requested_suite") == resumed.get("requested_suite")
                     and c.get("agents") == resumed.get("agents")), None)
        full_ms = full.get("mean_ms") if full else None
        resumed_ms = resumed.get("mean_ms") if resumed.get("count") else None
        rows.append({"version": resumed["version"], "suite": resumed.get("requested_suite"),
                     "agents": resumed.get("agents"), "resumption": resumed.get("resumption"),
                     "full_mean_ms": full_ms, "resumed_mean_ms": resumed_ms,
                     "resumed_faster_pct": faster_pct(full_ms, resumed_ms)})
    return rows
