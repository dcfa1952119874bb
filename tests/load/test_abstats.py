"""tlsaudit.domain.abstats: ab's arithmetic and quirks (hand-computed tables from ab.c's
output_results), and a side-by-side with the real `ab` on the same nginx target."""

from __future__ import annotations

import math
import re
import subprocess
from collections import Counter

import pytest

from tlsaudit.domain import stats
from tlsaudit.domain.abstats import (
    PERCENTAGES,
    SortedCounts,
    ab_median,
    ab_percentile,
    ab_report,
    ab_sd,
    ab_text,
    exact_phase_stats,
    round_ms,
    run_figures,
    sweep_summary,
    value_runs,
)
from workers.load.merge import encode_histogram, new_histogram, record_values
from workers.load.spec import LoadCounters, LoadSpec


def result_with(connect, waiting, total, tls=(), scheme="http", time_taken=1.0, concurrency=2, samples=True,
                **counters) -> dict:
    """A result dict as the engine returns it, from per-request µs samples (processing = total - connect)."""
    phases = {"connect": list(connect), "waiting": list(waiting), "total": list(total), "tls": list(tls),
              "processing": [t - c for t, c in zip(total, connect)]}
    histograms = {}
    for phase, values in phases.items():
        histogram = new_histogram()
        record_values(histogram, values)
        histograms[phase] = encode_histogram(histogram)
    spec = LoadSpec(scheme=scheme, host="shop.example.test", port=443 if scheme == "https" else 80,
                    concurrency=concurrency)
    return {"spec": spec.to_dict(), "started_at": 0.0, "time_taken_s": time_taken,
            "counters": {**LoadCounters(complete=len(total), **counters).__dict__},
            "histograms": histograms, "samples": phases if samples else None, "server_software": "nginx",
            "document_length": 152, "protocol": "TLSv1.3" if scheme == "https" else "",
            "cipher": "TLS_AES_256_GCM_SHA384" if scheme == "https" else "", "status_codes": {"200": len(total)},
            "errors": {}, "cancelled": False, "agents": 1}


# --- the quirks, one by one --------------------------------------------------------------------------------

@pytest.mark.parametrize("values, expected", [
    ([7], 7),                         # n = 1: the only value
    ([1, 2, 3, 4], 3),                # even n: element n/2 (not the mean of 2 and 3)
    ([1, 2, 3, 4, 5], 3),             # odd n: (element 2 + element 3) / 2 = (3 + 4) / 2 -> 3 (integer)
    ([10, 20, 31], 25),               # odd n: (20 + 31) / 2 = 25, not the true middle 20
])
def test_the_median_averages_the_wrong_pair_for_odd_n(values, expected):
    assert ab_median(values) == expected


def test_sd_is_the_sample_sd_around_the_integer_mean():
    values = [1, 2]
    mean = sum(values) // len(values)        # ab: integer division -> 1, not 1.5
    assert ab_sd(values, mean) == math.sqrt(((1 - 1) ** 2 + (2 - 1) ** 2) / 1)
    assert ab_sd([5], 5) == 0.0


@pytest.mark.parametrize("percent, expected", [(50, 6), (66, 7), (75, 8), (80, 9), (90, 10), (99, 10), (100, 10)])
def test_percentages_index_without_interpolation(percent, expected):
    values = list(range(1, 11))               # n = 10: stats[10 * p / 100]
    assert ab_percentile(values, percent) == expected


@pytest.mark.parametrize("us, ms", [(0, 0), (499, 0), (500, 1), (1499, 1), (1500, 2), (2300, 2)])
def test_milliseconds_round_half_up(us, ms):
    assert round_ms(us) == ms


# --- a whole table, computed by hand -----------------------------------------------------------------------

CONNECT = [1000, 1200, 900, 3000, 1100]
WAITING = [800, 1300, 500, 5800, 1100]
TOTAL = [2000, 2600, 1500, 9000, 2300]


def test_the_connection_times_table_matches_a_hand_computation():
    report = ab_report(result_with(CONNECT, WAITING, TOTAL))
    table = report["connection_times"]["phases"]

    assert report["connection_times"]["source"] == "samples"
    connect = table["connect"]
    assert (connect["min"], connect["mean"], connect["median"], connect["max"]) == (900, 1440, 1150, 3000)
    assert connect["sd"] == pytest.approx(math.sqrt(3_092_000 / 4))
    assert (connect["min_ms"], connect["mean_ms"], connect["sd_ms"], connect["median_ms"], connect["max_ms"]) == (
        1, 1, 0.9, 1, 3)
    total = table["total"]
    assert (total["min"], total["mean"], total["median"], total["max"]) == (1500, 3480, 2450, 9000)
    assert total["sd"] == pytest.approx(math.sqrt(38_748_000 / 4))
    processing = table["processing"]  # sorted 600, 1000, 1200, 1400, 6000: median (1200 + 1400) / 2
    assert (processing["min"], processing["median"], processing["max"]) == (600, 1300, 6000)
    assert [row["ms"] for row in report["percentages"]] == [2, 3, 3, 9, 9, 9, 9, 9, 9]
    assert report["connection_times"]["warnings"] == []
    assert report["latency_ms"] == {"p50": 2.3, "p90": 9.0, "p99": 9.0, "max": 9.0, "mean": 3.48}


def test_the_derived_lines_follow_ab():
    report = ab_report(result_with(CONNECT, WAITING, TOTAL, time_taken=0.5, concurrency=2, total_bytes=10_240))

    assert report["requests_per_second"] == 10.0
    assert report["time_per_request_ms"] == 2 * 0.5 * 1000 / 5          # c x time / done, not measured
    assert report["time_per_request_all_ms"] == 100.0
    assert report["transfer_rate_kbps"] == 20.0


def test_the_sanity_lines_compare_rounded_milliseconds_like_ab():
    # mean 1466 -> 1 ms, median (quirk) (1400 + 1600) / 2 = 1500 -> 2 ms, sd 0.12 ms: ERROR.
    error = ab_report(result_with([0, 0, 0], [0, 0, 0], [1400, 1400, 1600]))
    # mean 1466 -> 1 ms, median (1000 + 2400) / 2 = 1700 -> 2 ms, sd 0.81 ms: WARNING.
    warning = ab_report(result_with([0, 0, 0], [0, 0, 0], [1000, 1000, 2400]))

    # Connect and waiting are all 0 (sd 0, no distance); processing = total - connect = total.
    assert error["connection_times"]["warnings"] == [
        f"ERROR: The median and mean for the {what} time are more than twice the standard\n"
        "       deviation apart. These results are NOT reliable." for what in ("processing", "total")]
    assert warning["connection_times"]["warnings"] == [
        f"WARNING: The median and mean for the {what} time are not within a normal deviation\n"
        "        These results are probably not that reliable." for what in ("processing", "total")]


def test_without_samples_the_table_comes_from_the_histograms_and_says_so():
    totals = [1000 + 37 * i for i in range(500)]
    exact = ab_report(result_with([100] * 500, [500] * 500, totals))
    from_histograms = ab_report(result_with([100] * 500, [500] * 500, totals, samples=False))

    assert from_histograms["connection_times"]["source"] == "histogram"
    for key in ("min", "median", "max", "mean"):
        got, want = from_histograms["connection_times"]["phases"]["total"][key], exact["connection_times"]["phases"][
            "total"][key]
        # 3 significant digits, and HdrHistogram's median is rank n/2 where ab takes element n/2.
        assert abs(got - want) <= want * 0.005, key
    assert "Connection Times (µs, from histogram)" in ab_text(from_histograms)


def test_the_tls_handshake_is_reported_only_for_https():
    https = ab_report(result_with(CONNECT, WAITING, TOTAL, tls=[700, 800, 900], scheme="https"))
    http = ab_report(result_with(CONNECT, WAITING, TOTAL))

    assert https["tls_handshake"]["count"] == 3 and https["tls_handshake"]["median"] == 850  # odd-n quirk
    assert http["tls_handshake"] is None
    assert "SSL/TLS Protocol:       TLSv1.3,TLS_AES_256_GCM_SHA384" in ab_text(https)


def test_failed_requests_print_the_breakdown_and_no_table_for_zero_done():
    result = result_with([], [], [], failed=3, failed_connect=2, failed_exceptions=1, timeouts=1)
    report = ab_report(result)
    text = ab_text(report)

    assert report["requests_per_second"] is None and report["percentages"] == []
    assert "   (Connect: 2, Receive: 0, Length: 0, Exceptions: 1)" in text
    assert "Connection Times (ms)" not in text


# --- HTTP vs HTTPS ------------------------------------------------------------------------------------------

def run(mode, level, scheme, repeat, wall_s, complete=500, p50_ms=1.0):
    report = {"wall_s": wall_s, "complete_requests": complete, "latency_ms": {"p50": p50_ms}}
    return {"mode": mode, "level": level, "scheme": scheme, "repeat": repeat, **run_figures(report)}


def sweep(walls: dict, mode="new", complete=500) -> list[dict]:
    """walls: {level: [(http_wall, https_wall) per repeat]}"""
    return [run(mode, level, scheme, r, pair[i], complete) for level, pairs in walls.items()
            for r, pair in enumerate(pairs) for i, scheme in enumerate(("http", "https"))]


def test_https_faster_gives_negative_overheads_for_time_and_requests_per_second():
    # HTTP behind a 50 ms link, HTTPS local: HTTPS finishes in ~1/350 of the time.
    summary = sweep_summary(sweep({1: [(350.0, 1.0), (340.0, 1.0), (360.0, 1.0)]}))["new"]
    row = summary["levels"][0]
    assert row["time_taken_overhead_pct"] == pytest.approx(-99.7, abs=0.05)
    assert row["requests_per_second_overhead_pct"] == pytest.approx(-34_900, rel=0.02)
    for change in (row["time_taken_overhead"], row["requests_per_second_overhead"]):
        assert change["high_pct"] < 0 and change["verdict"] == stats.LOWER
    assert summary["average"]["time_taken_overhead_pct"] == pytest.approx(row["time_taken_overhead_pct"])
    assert summary["average"]["requests_per_second_overhead"]["verdict"] == stats.LOWER


def test_https_slower_is_positive_and_the_average_is_a_signed_geometric_mean():
    summary = sweep_summary(sweep({1: [(1.0, 2.0), (1.1, 2.2), (1.0, 2.0)],
                                   20: [(2.0, 2.5), (2.0, 2.5), (2.2, 2.75)]}))["new"]
    first, second = summary["levels"]
    assert first["time_taken_overhead_pct"] == pytest.approx(100.0)
    assert first["requests_per_second_overhead_pct"] == pytest.approx(50.0)
    assert second["time_taken_overhead_pct"] == pytest.approx(25.0)
    # sqrt(2 x 1.25) - 1 = 58.1 %, not the mean of % (62.5): one far level cannot outweigh the others.
    assert summary["average"]["time_taken_overhead_pct"] == pytest.approx(58.11, abs=0.01)
    assert summary["average"]["levels_used"] == [1, 20]


def test_opposite_directions_average_to_their_signed_geometric_mean_not_an_unsigned_one():
    summary = sweep_summary(sweep({1: [(1.0, 2.0)] * 3, 20: [(2.0, 1.0)] * 3}))["new"]
    assert [row["time_taken_overhead_pct"] for row in summary["levels"]] == [100.0, -50.0]
    assert summary["average"]["time_taken_overhead_pct"] == pytest.approx(0.0)
    assert summary["average"]["time_taken_overhead"]["verdict"] == stats.NO_DIFFERENCE


def test_each_cell_has_its_median_and_interval_over_the_repeats():
    row = sweep_summary(sweep({1: [(2.0, 4.0), (2.2, 4.4), (2.4, 4.2)]}))["new"]["levels"][0]
    assert row["http"]["repeats"] == 3 and row["http"]["time_s"]["median"] == 2.2
    rps = row["https"]["requests_per_second"]
    assert rps["median"] == pytest.approx(500 / 4.2) and rps["low"] < rps["median"] < rps["high"]


def timed_run(level, scheme, repeat, request_ms: list[float], wall_s: float, mode="new") -> dict:
    """A run that kept every request's total time (as the engines' histograms do)."""
    from workers.load.engine import encode_histogram, new_histogram

    histogram = new_histogram()
    for ms in request_ms:
        histogram.record_value(int(ms * 1000))
    report = {"wall_s": wall_s, "complete_requests": len(request_ms),
              "latency_ms": {"p50": sorted(request_ms)[len(request_ms) // 2]},
              "total_histogram": encode_histogram(histogram)}
    return {"mode": mode, "level": level, "scheme": scheme, "repeat": repeat, **run_figures(report)}


def test_a_run_of_a_twentieth_of_a_second_concludes_from_its_requests():
    # 100 requests per run in 0.05 s over HTTP, HTTPS 40 % slower per request, 3 interleaved pairs: the
    # gate said "too short"; every request's time says HTTPS slower, +40 % with a narrow interval.
    rng = __import__("random").Random(4)
    runs = []
    for r in range(3):
        runs.append(timed_run(20, "http", r, [rng.gauss(10.0, 1.0) for _ in range(100)], 0.05))
        runs.append(timed_run(20, "https", r, [rng.gauss(14.0, 1.4) for _ in range(100)], 0.07))
    row = sweep_summary(runs)["new"]["levels"][0]
    time = row["time_taken_overhead"]
    assert time["verdict"] == stats.HIGHER and 35 < time["pct"] < 45 and time["high_pct"] - time["low_pct"] < 10
    assert time["base_median"] < time["other_median"]          # the sign agrees with the two medians
    assert row["http"]["too_short"] is None and row["https"]["median_ms"] == pytest.approx(14.0, rel=0.05)
    assert sweep_summary(runs)["new"]["average"]["levels_used"] == [20]


def test_a_level_where_nothing_completed_has_no_data_and_stays_out_of_the_average():
    runs = sweep({1: [(2.0, 4.0), (2.2, 4.4), (2.4, 4.2)], 20: [(0.5, 0.6)] * 3})
    for r in runs:
        if r["level"] == 20 and r["scheme"] == "https":
            r.update(run_figures({"wall_s": 30.0, "complete_requests": 0}))
    summary = sweep_summary(runs)["new"]
    dead = summary["levels"][1]
    assert dead["time_taken_overhead"]["verdict"] == stats.NO_DATA and dead["time_taken_overhead_pct"] is None
    assert dead["https"]["too_short"] == "3 of 3 runs: nothing completed"
    assert summary["average"]["levels_used"] == [1]


def test_a_single_run_has_an_estimate_and_no_interval_and_a_side_with_nothing_has_no_ratio():
    single = sweep_summary(sweep({1: [(1.0, 1.5)]}))["new"]["levels"][0]
    assert single["time_taken_overhead_pct"] == pytest.approx(50.0)
    assert single["time_taken_overhead"]["verdict"] == stats.SINGLE
    runs = sweep({1: [(2.0, 2.0)] * 3})
    for r in runs:
        if r["scheme"] == "https":
            r.update(run_figures({"wall_s": 2.0, "complete_requests": 0}))
    nothing = sweep_summary(runs)["new"]["levels"][0]
    assert nothing["requests_per_second_overhead_pct"] is None and nothing["https"]["too_short"]


def test_time_is_compared_per_request_when_a_run_stopped_at_its_time_limit():
    # HTTP behind a slow link stopped at 5 s after 1,000 of 1,500 requests; HTTPS did all 1,500 in 2 s.
    runs = [run("new", 10, "http", r, 5.0, complete=1000) for r in range(3)]
    runs += [run("new", 10, "https", r, 2.0 + r / 10, complete=1500) for r in range(3)]
    row = sweep_summary(runs)["new"]["levels"][0]
    # per request: 5 ms vs ~1.4 ms, i.e. about -73 %; the walls alone (5 s vs 2.1 s) would say -58 %
    assert row["time_taken_overhead_pct"] == pytest.approx(-72.0, abs=1.0)
    assert row["requests_per_second_overhead_pct"] == pytest.approx(-257, abs=5)
    assert row["time_taken_overhead"]["verdict"] == row["requests_per_second_overhead"]["verdict"] == stats.LOWER


def test_runs_stored_before_wall_times_use_abs_time_taken():
    figures = run_figures({"time_taken_s": 2.5, "complete_requests": 500, "latency_ms": {"p50": 3.0}})
    assert (figures["wall_s"], figures["requests_per_second"], figures["too_short"]) == (2.5, 200.0, None)


# --- next to the real ab ----------------------------------------------------------------------------------

AB_LABEL = re.compile(r"^([A-Z][A-Za-z/\- ()]+?):\s")


def labels(text: str) -> list[str]:
    return [m.group(1) for line in text.splitlines() if (m := AB_LABEL.match(line))]


def ab_numbers(out: str) -> dict:
    def number(label):
        match = re.search(rf"^{re.escape(label)}:\s+(\d+)", out, re.M)
        return int(match.group(1)) if match else None
    return {k: number(k) for k in ("Complete requests", "Failed requests", "Document Length", "HTML transferred",
                                   "Concurrency Level")}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_our_report_has_abs_lines_and_counts_for_the_same_target(tls_lab, scheme):
    from workers.load.client import run_load

    name = "load_no_resumption"
    port, path = (tls_lab.port(name), "/") if scheme == "https" else (tls_lab.http_port(name), "/health")
    ab_out = subprocess.run(["ab", "-n", "200", "-c", "4", f"{scheme}://127.0.0.1:{port}{path}"],
                            capture_output=True, text=True, timeout=60).stdout
    ours = ab_text(ab_report(run_load(LoadSpec(scheme=scheme, host="127.0.0.1", port=port, path=path, requests=200,
                                                concurrency=4)).to_dict()))

    # ab's lines minus its banner, the temp key (not reported) and run-dependent WARNING/ERROR lines.
    skipped = ("This is", "Copyright", "Licensed", "Benchmarking", "Server Temp Key", "WARNING", "ERROR")
    ab_labels = list(dict.fromkeys(label for label in labels(ab_out) if not label.startswith(skipped)))
    ours_in_ab = [label for label in labels(ours) if label in ab_labels]
    assert list(dict.fromkeys(ours_in_ab)) == ab_labels, "same lines, same order (then our µs table)"
    assert ab_numbers(ours) == ab_numbers(ab_out)
    for section in ("Connection Times (ms)", "Percentage of the requests served within a certain time (ms)"):
        assert section in ab_out and section in ours
    ab_percent_rows = re.findall(r"^\s+(\d+)%", ab_out, re.M)
    assert re.findall(r"^\s+(\d+)%", ours, re.M) == ab_percent_rows == ["50", "66", "75", "80", "90", "95", "98",
                                                                         "99", "100"]


def test_a_run_is_only_refused_when_nothing_completed():
    slow = run_figures({"wall_s": 5.0, "complete_requests": 42, "requests_planned": 500, "latency_ms": {"p50": 119}})
    assert slow["too_short"] is None and slow["requests_per_second"] == pytest.approx(8.4)
    assert run_figures({"wall_s": 5.0, "complete_requests": 0})["too_short"] == "nothing completed"


@pytest.mark.parametrize("values", [[5], [3, 3], [1, 2], [0, 0, 0, 9], [-4, -4, 2, 2, 2, 7, 1_000_000],
                                    [n * n % 977 for n in range(10_001)]])
def test_phase_stats_over_runs_of_equal_values_equal_ab_arithmetic_on_every_sample(values):
    """Sum and sd are taken per distinct value: the same integers as ab's per-sample sums, so the same sd."""
    ordered = sorted(values)
    mean = sum(ordered) // len(ordered)
    counted = SortedCounts(reversed(values))
    assert [counted[i] for i in range(len(ordered))] == ordered and counted[-1] == ordered[-1]
    assert [ab_percentile(counted, p) for p in PERCENTAGES] == [ab_percentile(ordered, p) for p in PERCENTAGES]
    got = exact_phase_stats(counted)
    assert got == {"count": len(ordered), "min": ordered[0], "mean": mean, "sd": ab_sd(ordered, mean),
                   "median": ab_median(ordered), "max": ordered[-1]}
    assert list(value_runs(ordered)) == sorted(Counter(ordered).items())
    with pytest.raises(IndexError):
        counted[len(ordered)]
