"""Merging load results from several processes or agent hosts into one, exactly.

Counters add up, HdrHistograms (same range and precision everywhere, see spec.py) add up
bucket by bucket, exact samples are concatenated while the total stays small enough.
"""

from __future__ import annotations

from collections import Counter

from hdrh.histogram import HdrHistogram

from tlsaudit.domain.abstats import value_runs
from workers.load.spec import (
    HISTOGRAM_DIGITS,
    HISTOGRAM_RANGE_US,
    MAX_EXACT_SAMPLES,
    PHASES,
    LoadCounters,
    LoadResult,
    LoadSpec,
)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(HISTOGRAM_RANGE_US[0], HISTOGRAM_RANGE_US[1], HISTOGRAM_DIGITS)


def encode_histogram(histogram: HdrHistogram) -> str:
    return histogram.encode().decode("ascii")


def record_values(histogram: HdrHistogram, values: list[int]) -> None:
    """Bulk-record µs values (clamped to the range), as record_value(value, count) per distinct value would.

    hdrh's record_value costs ~2 µs in Python and a run has thousands of distinct values per phase
    (~9 ms at the end of a 20,000-request run); this is its index arithmetic inlined (`_clz(v | mask)`
    is 64 - bit_length), into the same counts array, ~0.3 µs per distinct value."""
    if values:
        record_counts(histogram, Counter(values).items(), len(values), min(values), max(values))


def record_sorted_values(histogram: HdrHistogram, ordered) -> None:
    """record_values for an ascending list: its runs of equal values found by bisection, so the cost
    follows the distinct values (a few thousand) rather than the samples (up to MAX_EXACT_SAMPLES)."""
    if ordered:
        record_counts(histogram, value_runs(ordered), len(ordered), ordered[0], ordered[-1])


def record_counts(histogram: HdrHistogram, counts_by_value, total: int, low: int, high: int) -> None:
    highest = HISTOGRAM_RANGE_US[1]
    if low < 0 or high > highest:
        clamped = Counter()
        for value, count in counts_by_value:
            clamped[min(max(value, 0), highest)] += count
        counts_by_value = clamped.items()
        low, high = min(max(low, 0), highest), min(max(high, 0), highest)
    counts = histogram.counts
    unit = histogram.unit_magnitude
    half_magnitude = histogram.sub_bucket_half_count_magnitude
    mask, half = histogram.sub_bucket_mask, histogram.sub_bucket_half_count
    first_bucket_bits = unit + half_magnitude + 1
    for value, count in counts_by_value:
        bucket = (value | mask).bit_length() - first_bucket_bits
        counts[((bucket + 1) << half_magnitude) + (value >> (bucket + unit)) - half] += count
    histogram.total_count += total
    histogram.min_value = min(histogram.min_value, low)
    histogram.max_value = max(histogram.max_value, high)


def merge_results(results: list[dict]) -> dict:
    """One result dict from several (`LoadResult.to_dict()` form), e.g. processes or agent hosts.

    1. Counters, status codes and error classes are summed.
    2. Histograms are decoded and added per phase, then re-encoded.
    3. Exact samples are concatenated only if every part kept them and the total stays
       within MAX_EXACT_SAMPLES; otherwise the merged result has samples=None.
    4. Time taken spans the earliest start to the latest end (epoch clocks; on one host
       they are the same clock); so does the end-to-end wall time, when every part has one.
    """
    if not results:
        raise ValueError("merge_results needs at least one result")
    first = results[0]
    starts = [r["started_at"] for r in results]
    ends = [r["started_at"] + r["time_taken_s"] for r in results]
    merged = dict(first)
    merged["spec"] = merge_specs([r["spec"] for r in results])
    merged["started_at"] = min(starts)
    merged["time_taken_s"] = max(ends) - min(starts)
    merged["wall_started_at"], merged["wall_s"] = merge_walls(results)
    merged["counters"] = sum_dicts([r["counters"] for r in results])
    merged["histograms"] = merge_histograms([r.get("histograms") or {} for r in results])
    merged["samples"] = merge_samples([r.get("samples") for r in results], merged["counters"]["complete"])
    merged["status_codes"] = sum_dicts([r.get("status_codes") or {} for r in results])
    merged["errors"] = sum_dicts([r.get("errors") or {} for r in results])
    for key in ("server_software", "protocol", "cipher"):
        merged[key] = next((r[key] for r in results if r.get(key)), "")
    merged["document_length"] = next((r["document_length"] for r in results if r.get("document_length") is not None),
                                     None)
    merged["cancelled"] = any(r.get("cancelled") for r in results)
    merged["stalled"] = any(r.get("stalled") for r in results)
    merged["agents"] = sum(r.get("agents", 1) for r in results)
    merged["processes"] = sum(r.get("processes", 1) for r in results)
    merged["notes"] = unique([note for r in results for note in r.get("notes") or []])
    return merged


def merge_walls(results: list[dict]) -> tuple[float | None, float | None]:
    """The span of the parts' end-to-end runs (agents that started late lengthen the cell: honest)."""
    if any(r.get("wall_s") is None or r.get("wall_started_at") is None for r in results):
        return None, None
    start = min(r["wall_started_at"] for r in results)
    return start, round(max(r["wall_started_at"] + r["wall_s"] for r in results) - start, 6)


def merge_specs(specs: list[dict]) -> dict:
    """The whole run's spec: each part ran its share of n and c."""
    spec = dict(specs[0])
    spec["requests"] = sum(s["requests"] for s in specs)
    spec["concurrency"] = sum(s["concurrency"] for s in specs)
    spec["processes"] = sum(s.get("processes", 1) for s in specs)
    return spec


def sum_dicts(parts: list[dict]) -> dict:
    total: Counter = Counter()
    for part in parts:
        total.update(part)
    return {key: total[key] for key in sorted(total)}


def merge_histograms(parts: list[dict[str, str]]) -> dict[str, str]:
    merged = {}
    for phase in PHASES:
        histogram = new_histogram()
        for part in parts:
            if part.get(phase):
                histogram.decode_and_add(part[phase])
        merged[phase] = encode_histogram(histogram)
    return merged


def merge_samples(parts: list[dict | None], complete: int) -> dict[str, list[int]] | None:
    if any(part is None for part in parts) or complete > MAX_EXACT_SAMPLES:
        return None
    return {phase: [v for part in parts for v in part.get(phase, [])] for phase in PHASES}


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def result_from_dict(data: dict) -> LoadResult:
    """The dataclass back from its wire form (`LoadResult.to_dict()` or `merge_results`)."""
    fields = {key: data[key] for key in LoadResult.__dataclass_fields__ if key in data}
    fields["spec"] = LoadSpec.from_dict(data["spec"])
    fields["counters"] = LoadCounters(**data["counters"])
    return LoadResult(**fields)
