"""Summaries of handshake-timing results (the handshake matrix). Pure: no Django, no sockets.

Inputs are the plain dicts of workers.load.handshake (histograms are encoded HdrHistograms in µs).
SD is the sample standard deviation (n - 1), as ab and the seed's tables use; it is computed from
the histogram buckets, so it stays exact under merges (values within 0.1 %, the histogram's 3 digits).

Comparisons (TLS 1.3 vs 1.2, resumed vs full) compare every handshake: the median of all the
handshakes of one side against the other's, rounds paired, with tlsaudit.domain.compare's interval
(drift between rounds widens it). The change is signed like every overhead in the product:
(TLS 1.3 - TLS 1.2) / TLS 1.2, negative when TLS 1.3 is faster, and the two medians shown beside it
are the ones it compares. Cells stored before repeats count as repeat 0; cells stored without their
histogram fall back to the rounds' median handshake times (stats.paired_change).
"""

from __future__ import annotations

import math
import re

from hdrh.histogram import HdrHistogram

from tlsaudit.domain import compare, stats

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
    # The non-empty counters directly (the recorded iterator's per-bucket Python took ~40 ms a histogram).
    buckets = [(h.get_highest_equivalent_value(h.get_value_from_index(i)), c) for i, c in enumerate(h.counts) if c]
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


# --- cells over their repeats ----------------------------------------------------------------------

def is_full(cell: dict) -> bool:
    return cell.get("mode", "full") == "full"


def measured(cell: dict) -> bool:
    return bool(cell.get("count")) and cell.get("p50_ms") is not None and not cell.get("warmup")


def repeat_of(cell: dict) -> int:
    return int(cell.get("repeat") or 0)


def cell_key(cell: dict) -> tuple:
    return (cell.get("version"), cell.get("requested_suite") or cell.get("suite"), cell.get("agents"),
            cell.get("mode", "full"))


def run_too_short(cell: dict) -> str | None:
    return stats.too_short(cell.get("wall_s"), cell.get("count"))


def cell_rows(cells: list[dict]) -> list[dict]:
    """One row per cell (version, suite, agents, mode) over its repeats: handshakes in all, the median
    [95 % interval] of its repeats' median handshake time and of their end-to-end rates, and why nothing
    can be read from a repeat (none completed). Warm-ups and skipped cells are left out."""
    groups: dict[tuple, list[dict]] = {}
    for cell in cells:
        if not cell.get("warmup") and not cell.get("skipped"):
            groups.setdefault(cell_key(cell), []).append(cell)
    rows = []
    for (version, suite, agents, mode), repeats in groups.items():
        timed = [c for c in repeats if measured(c)]
        reasons = [reason for c in timed if (reason := run_too_short(c))]
        rows.append({"version": version, "suite": suite, "agents": agents, "mode": mode, "repeats": len(repeats),
                     "count": sum(c.get("count") or 0 for c in repeats),
                     "failures": sum(sum((c.get("failures") or {}).values()) for c in repeats),
                     "p50_ms": stats.median_interval([c["p50_ms"] for c in timed]),
                     "mean_ms": stats.median([c["mean_ms"] for c in timed if c.get("mean_ms") is not None]),
                     "handshakes_per_s": stats.median_interval([c["count"] / c["wall_s"] for c in timed
                                                                if c.get("wall_s")]),
                     "too_short": f"{len(reasons)} of {len(timed)} runs: {reasons[0]}" if reasons else None})
    return rows


def by_round(cells: list[dict]) -> dict[int, float]:
    """Round -> the median of the p50s of the given cells measured in that round."""
    rounds: dict[int, list[float]] = {}
    for cell in cells:
        if measured(cell):
            rounds.setdefault(repeat_of(cell), []).append(cell["p50_ms"])
    return {r: stats.median(values) for r, values in rounds.items()}


def paired_rounds(base: list[dict], other: list[dict]) -> tuple[dict, list]:
    """The change of `other` against `base` over the rounds both ran (compare.median_change of every
    handshake of each round's cells), and why a run had nothing to compare."""
    rounds = sorted({repeat_of(c) for c in base if measured(c)} & {repeat_of(c) for c in other if measured(c)})
    reasons = [reason for c in base + other if (reason := run_too_short(c))]
    if all(c.get("histograms") for c in base + other if measured(c)):
        pairs = [(round_distribution(base, r), round_distribution(other, r)) for r in rounds]
        return compare.median_change(pairs), reasons
    base_rounds, other_rounds = by_round(base), by_round(other)
    result = stats.paired_change([(base_rounds[r], other_rounds[r]) for r in rounds])
    return {**result, "base_median": None, "other_median": None}, reasons


def round_distribution(cells: list[dict], round_: int) -> compare.Distribution:
    """Every handshake (µs) of the measured cells of one round."""
    buckets = []
    for cell in cells:
        if measured(cell) and repeat_of(cell) == round_:
            h = decode(cell["histograms"]["tls"])
            buckets += [(h.get_highest_equivalent_value(h.get_value_from_index(i)), c)
                        for i, c in enumerate(h.counts) if c]
    return compare.Distribution.of_counts(buckets)


def side_median_ms(result: dict, key: str, cells: list[dict]) -> float | None:
    """The median the comparison used (µs -> ms), or the rounds' median p50 for old cells."""
    if result.get(key) is not None:
        return ms(result[key])
    return median_of_rounds(cells)


def compare_versions(cells: list[dict]) -> list[dict]:
    """TLS 1.3 vs TLS 1.2 per (suite family, agents), plus one "all" row per agents level.

    Row: family, agents, tls12_p50_ms / tls13_p50_ms (the median of every handshake of each side),
    tls13_vs_tls12 (stats change: (1.3 - 1.2) / 1.2 of those medians, negative = TLS 1.3 faster, 95 %
    interval with rounds as the unit of drift), tls13_vs_tls12_pct (its signed estimate, None when
    nothing can be shown) and too_short (why a run had nothing to compare).
    """
    groups: dict[tuple[str, int], dict[str, list[dict]]] = {}
    for cell in cells:
        if not is_full(cell) or not measured(cell):
            continue
        family = suite_family(cell.get("suite") or cell.get("requested_suite"))
        for key in ((family, cell["agents"]), ("all", cell["agents"])):
            if key[0] is not None:
                groups.setdefault(key, {}).setdefault(cell["version"], []).append(cell)
    rows = []
    for (family, agents), by_version in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        tls12, tls13 = by_version.get("1.2", []), by_version.get("1.3", [])
        result, reasons = paired_rounds(tls12, tls13)
        rows.append({"family": family, "agents": agents,
                     "tls12_p50_ms": side_median_ms(result, "base_median", tls12),
                     "tls13_p50_ms": side_median_ms(result, "other_median", tls13),
                     "tls13_vs_tls12": result, "tls13_vs_tls12_pct": shown(result),
                     "too_short": reasons[0] if reasons else None})
    return rows


def median_of_rounds(cells: list[dict]) -> float | None:
    value = stats.median(list(by_round(cells).values()))
    return round(value, 3) if value is not None else None


def shown(result: dict) -> float | None:
    return None if result["verdict"] in (stats.TOO_SHORT, stats.NO_DATA) else result["pct"]


def compare_resumption(cells: list[dict]) -> list[dict]:
    """Resumed vs full per resumed cell (version, suite, agents), paired by round: resumed_vs_full is
    (resumed - full) / full, negative when resuming is faster; resumption says whether the server did."""
    groups: dict[tuple, list[dict]] = {}
    for cell in cells:
        if cell.get("mode") == "resumed" and not cell.get("warmup"):
            groups.setdefault(cell_key(cell), []).append(cell)
    rows = []
    for (version, suite, agents, _), resumed in groups.items():
        full = [c for c in cells if is_full(c) and c.get("version") == version and c.get("agents") == agents
                and (c.get("requested_suite") or c.get("suite")) == suite]
        result, reasons = paired_rounds(full, resumed)
        verdicts = {c.get("resumption") for c in resumed}
        rows.append({"version": version, "suite": suite, "agents": agents,
                     "resumption": next((v for v in ("supported", "unsupported", "unknown") if v in verdicts), None),
                     "full_p50_ms": side_median_ms(result, "base_median", full),
                     "resumed_p50_ms": side_median_ms(result, "other_median", resumed),
                     "resumed_vs_full": result, "resumed_vs_full_pct": shown(result),
                     "too_short": reasons[0] if reasons else None})
    return rows
