"""ApacheBench's statistics, computed exactly the way `ab` computes them, plus what ab cannot show.

Input: a load result dict (`workers.load.spec.LoadResult.to_dict()`, or a merge of several).
Per-request phases are µs integers; with exact samples the Connection Times and the
percentage table are ab's own arithmetic (httpd 2.4 `support/ab.c`, output_results):

- mean = integer sum / n (C integer division), sd = sample sd (n - 1) around that integer mean;
- median: the middle element, but for odd n > 1 the average of elements n/2 and n/2 + 1
  (ab's off-by-one), integer division;
- percentage p < 100 = sorted_total[n * p / 100] (no interpolation), 100 % = the longest;
- everything shown in whole ms rounded as (µs + 500) / 1000, sd as µs / 1000 with 1 decimal;
- WARNING / ERROR lines when |mean - median| (both in whole ms) exceeds sd or 2 sd.

Without samples (big runs) the same fields come from the merged HdrHistograms (3 significant
digits): `connection_times.source` says which. Pure: no Django, no sockets.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from itertools import accumulate

from hdrh.histogram import HdrHistogram

from tlsaudit.domain import compare, stats
from tlsaudit.domain.compare import Distribution

PERCENTAGES = (50, 66, 75, 80, 90, 95, 98, 99, 100)
TABLE_PHASES = ("connect", "processing", "waiting", "total")
LATENCY_PERCENTILES = (50, 90, 99)
# LoadResult.engine -> what the text report calls it.
ENGINE_NAMES = {"c": "C loop (one epoll loop per core used)", "python": "Python loop"}
SANE_NAMES = {"connect": "the initial connection time", "processing": "the processing time",
              "waiting": "the waiting time", "total": "the total time"}


# ---------------------------------------------------------------------------------------------
# ab's arithmetic on exact samples


def round_ms(us: int | float) -> int:
    """ab's ap_round_ms: whole milliseconds, halves up."""
    return int((us + 500) // 1000)


def ab_sd(values: list[int], mean: int) -> float:
    """Sample standard deviation (n - 1) around ab's integer mean; 0 for a single value."""
    if len(values) < 2:
        return 0.0
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def ab_median(sorted_values: list[int]) -> int:
    """ab's median: for odd n > 1 it averages elements n/2 and n/2 + 1 (not the true middle)."""
    n = len(sorted_values)
    if n > 1 and n % 2:
        return (sorted_values[n // 2] + sorted_values[n // 2 + 1]) // 2
    return sorted_values[n // 2]


def ab_percentile(sorted_values: list[int], percent: int) -> int:
    """ab's percentage table: stats[n * p / 100], the longest request for 100 %."""
    if percent >= 100:
        return sorted_values[-1]
    return sorted_values[len(sorted_values) * percent // 100]


def exact_phase_stats(ordered: SortedCounts) -> dict:
    """ab's fields of one phase from its samples in ascending order. Sum and sd go over the runs of
    equal values (a few thousand, not up to MAX_EXACT_SAMPLES samples) with the same integers as
    ab's integer mean and ab_sd on every sample, so the same figures."""
    n = len(ordered)
    mean = sum(value * count for value, count in ordered.runs) // n
    squares = sum((value - mean) ** 2 * count for value, count in ordered.runs)
    sd = math.sqrt(squares / (n - 1)) if n > 1 else 0.0
    return {"count": n, "min": ordered[0], "mean": mean, "sd": sd, "median": ab_median(ordered), "max": ordered[-1]}


class SortedCounts:
    """A phase's samples in ascending order, held as runs of equal values (value, count): indexed like
    the sorted list (ab_median, ab_percentile). Counting is ~3x cheaper than sorting a list of
    int objects, and a run's samples repeat a few thousand values at most (µs of a loop's phases)."""

    def __init__(self, values):
        counts = Counter(values)
        # Two flat lists, no (value, count) tuples: thousands of live tuples would set off GC passes
        # over the caller's heap, which holds the run's samples (up to a million list items).
        self.values = sorted(counts)
        self.counts = [counts[value] for value in self.values]
        self.ends = list(accumulate(self.counts))  # index past each run

    @property
    def runs(self):
        return zip(self.values, self.counts)

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getitem__(self, index: int) -> int:
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self.values[bisect_right(self.ends, index)]


def value_runs(ordered: list[int]):
    """(value, count) for each distinct value of an ascending list, in order."""
    start, n = 0, len(ordered)
    while start < n:
        value = ordered[start]
        end = bisect_right(ordered, value, start)
        yield value, end - start
        start = end


def histogram_phase_stats(histogram: HdrHistogram) -> dict:
    """The same fields from a histogram: values are bucket-equivalent (3 significant digits),
    sd is HdrHistogram's population sd."""
    return {"count": histogram.get_total_count(), "min": histogram.get_min_value(),
            "mean": int(histogram.get_mean_value()), "sd": histogram.get_stddev(),
            "median": histogram.get_value_at_percentile(50), "max": histogram.get_max_value()}


def with_ms(stats: dict) -> dict:
    """Add ab's display values (whole ms, sd with one decimal) next to the µs values."""
    shown = {f"{k}_ms": round_ms(stats[k]) for k in ("min", "mean", "median", "max")}
    return {**stats, **shown, "sd_ms": round(stats["sd"] / 1000, 1)}


def sanity_line(phase: str, stats: dict) -> str | None:
    """ab's SANE() check, done on the displayed (ms) values as ab does."""
    distance = abs(stats["mean_ms"] - stats["median_ms"])
    sd_ms = stats["sd"] / 1000
    what = SANE_NAMES[phase]
    if distance > 2 * sd_ms:
        return (f"ERROR: The median and mean for {what} are more than twice the standard\n"
                f"       deviation apart. These results are NOT reliable.")
    if distance > sd_ms:
        return (f"WARNING: The median and mean for {what} are not within a normal deviation\n"
                f"        These results are probably not that reliable.")
    return None


# ---------------------------------------------------------------------------------------------
# Reading a result dict


def decode_histogram(encoded: str | None) -> HdrHistogram | None:
    if not encoded:
        return None
    return HdrHistogram.decode(encoded.encode("ascii") if isinstance(encoded, str) else encoded)


class PhaseSource:
    """Stats and percentiles of one phase, from exact samples when present, else the histogram."""

    def __init__(self, result: dict, phase: str):
        samples = (result.get("samples") or {}).get(phase)
        self.exact = result.get("samples") is not None
        self.sorted = SortedCounts(samples) if self.exact and samples is not None else None
        self.histogram = None if self.exact else decode_histogram((result.get("histograms") or {}).get(phase))

    @property
    def count(self) -> int:
        if self.sorted is not None:
            return len(self.sorted)
        return self.histogram.get_total_count() if self.histogram is not None else 0

    def stats(self) -> dict | None:
        if not self.count:
            return None
        if self.sorted is not None:
            return with_ms(exact_phase_stats(self.sorted))
        return with_ms(histogram_phase_stats(self.histogram))

    def percentile(self, percent: int) -> int:
        if self.sorted is not None:
            return ab_percentile(self.sorted, percent)
        return self.histogram.get_value_at_percentile(percent)


# ---------------------------------------------------------------------------------------------
# The report


def ab_report(result: dict) -> dict:
    """Everything `ab` prints for this run, as data, plus TLS handshake stats, µs values,
    the negotiated protocol/cipher and latency percentiles (see the module docstring)."""
    spec, counters = result["spec"], result["counters"]
    time_taken = result["time_taken_s"]
    done = counters["complete"]
    report = {
        "server_software": result.get("server_software") or "",
        "server_hostname": spec["host"],
        "server_port": spec["port"],
        "scheme": spec["scheme"],
        "protocol": result.get("protocol") or "",
        "cipher": result.get("cipher") or "",
        "tls_server_name": spec["host"] if spec["scheme"] == "https" else None,
        "document_path": spec.get("path") or "/",
        "document_length": result.get("document_length"),
        "concurrency_level": spec["concurrency"],
        "requests_planned": spec.get("requests"),
        "keepalive": bool(spec.get("keepalive")),
        "time_taken_s": time_taken,
        "complete_requests": done,
        "failed_requests": counters["failed"],
        "failed_breakdown": {"connect": counters["failed_connect"], "receive": counters["failed_receive"],
                             "length": counters["failed_length"], "exceptions": counters["failed_exceptions"]},
        "timeouts": counters["timeouts"],
        "write_errors": counters["write_errors"],
        "non_2xx_responses": counters["non_2xx"],
        "keepalive_requests": counters["keepalive_requests"] if spec.get("keepalive") else None,
        "connections_opened": counters["connections_opened"],
        "total_transferred": counters["total_bytes"],
        "html_transferred": counters["html_bytes"],
        **throughput(done, time_taken, spec["concurrency"], counters["total_bytes"]),
        **end_to_end(done, result.get("wall_s")),
        "status_codes": dict(result.get("status_codes") or {}),
        "errors": dict(result.get("errors") or {}),
        "cancelled": bool(result.get("cancelled")),
        "agents": result.get("agents", 1),
        "processes": result.get("processes", 1),
        "engine": result.get("engine", "python"),
        "notes": list(result.get("notes") or []),
    }
    report.update(connection_times(result))
    return report


def throughput(done: int, time_taken: float, concurrency: int, total_bytes: int) -> dict:
    """ab's derived lines; None where ab prints nothing (no time or nothing done)."""
    if not (time_taken and done):
        return {"requests_per_second": None, "time_per_request_ms": None,
                "time_per_request_all_ms": None, "transfer_rate_kbps": None}
    return {
        "requests_per_second": done / time_taken,
        "time_per_request_ms": concurrency * time_taken * 1000 / done,   # Little's law, not measured
        "time_per_request_all_ms": time_taken * 1000 / done,
        "transfer_rate_kbps": total_bytes / 1024 / time_taken,
    }


def end_to_end(done: int, wall_s: float | None) -> dict:
    """The honest rate: requests over the run's whole wall time, set-up included (resolving, TLS
    contexts, processes, agents starting). ab's own line divides by its time taken only."""
    return {"wall_s": wall_s, "requests_per_second_end_to_end": done / wall_s if wall_s and done else None}


def connection_times(result: dict) -> dict:
    sources = {phase: PhaseSource(result, phase) for phase in TABLE_PHASES + ("tls",)}
    table = {phase: sources[phase].stats() for phase in TABLE_PHASES}
    total = sources["total"]
    warnings = [line for phase in TABLE_PHASES if table[phase]
                for line in [sanity_line(phase, table[phase])] if line]
    percentages = []
    if total.count > 1:  # ab prints the table only for more than one request
        percentages = [{"percent": p, "us": total.percentile(p), "ms": round_ms(total.percentile(p))}
                       for p in PERCENTAGES]
    latency = None
    if total.count:
        latency = {f"p{p}": total.percentile(p) / 1000 for p in LATENCY_PERCENTILES}
        latency.update(max=table["total"]["max"] / 1000, mean=table["total"]["mean"] / 1000)
    return {
        "connection_times": {"source": "samples" if total.sorted is not None else "histogram",
                             "phases": table, "warnings": warnings},
        "percentages": percentages,
        "tls_handshake": sources["tls"].stats() if result["spec"]["scheme"] == "https" else None,
        "latency_ms": latency,
        # Every request's total time (µs, 3 significant digits): what HTTPS vs HTTP compares.
        "total_histogram": (result.get("histograms") or {}).get("total"),
    }


# ---------------------------------------------------------------------------------------------
# HTTP vs HTTPS, over repeats


def run_figures(report: dict) -> dict:
    """What a comparison reads of one ab-style run: its end-to-end wall time (set-up included; ab's
    time taken for runs stored before wall times were kept), requests completed, requests/s over that
    wall time, the median latency, every request's total time (`total_histogram`), and why nothing can
    be read from it (None when something can: at least one request completed)."""
    wall = report.get("wall_s") or report.get("time_taken_s")
    done = report.get("complete_requests") or 0
    p50_ms = (report.get("latency_ms") or {}).get("p50")
    per_request = wall / done if wall and done else None
    return {"wall_s": wall, "complete": done, "requests_per_second": done / wall if wall and done else None,
            "time_per_request_s": per_request, "p50_ms": p50_ms, "too_short": stats.too_short(wall, done),
            "total_histogram": report.get("total_histogram"),
            # What the average over levels compares: the run's median request, or for runs stored
            # without their requests' times, its time per completed request.
            "request_s": p50_ms / 1000 if report.get("total_histogram") and p50_ms else per_request}


def total_distribution(run: dict) -> Distribution:
    """Every request's total time of a run (run_figures), in µs; empty for runs stored without it."""
    histogram = decode_histogram(run.get("total_histogram"))
    if histogram is None:
        return Distribution.of([])
    return Distribution.of_counts((item.value_iterated_to, item.count_at_value_iterated_to)
                                  for item in histogram.get_recorded_iterator())


def cell_summary(runs: list[dict]) -> dict:
    """The repeats of one cell (scheme x level x mode): median and 95 % interval of requests/s, wall
    time and median latency over the repeats, the median of every request's time, and why nothing can
    be read from a repeat (none completed a request)."""
    empty = [run for run in runs if run["too_short"]]
    latency = compare.pooled_median([total_distribution(run) for run in runs])
    return {"repeats": len(runs),
            "requests_per_second": stats.median_interval([run["requests_per_second"] for run in runs]),
            "time_s": stats.median_interval([run["wall_s"] for run in runs]),
            "p50_ms": stats.median_interval([run["p50_ms"] for run in runs]),
            "median_ms": None if latency is None else latency / 1000,
            "too_short": f"{len(empty)} of {len(runs)} runs: {empty[0]['too_short']}" if empty else None}


def overhead(http_runs: dict[int, dict], https_runs: dict[int, dict]) -> dict:
    """TLS overhead at one level from the repeats paired by repeat number (interleaved runs).

    Time: the change in the median of every request's total time, (HTTPS - HTTP) / HTTP, with the
    interval of compare.median_change (drift between pairs widens it). Runs stored before each run
    kept its requests' times fall back to the time per completed request of each pair.
    Requests/s: (HTTP - HTTPS) / HTTP of the end-to-end rates, paired by repeat (stats.paired_change).
    Both are positive when HTTPS is slower, negative when it is faster."""
    repeats = sorted(set(http_runs) & set(https_runs))
    pairs = [(total_distribution(http_runs[r]), total_distribution(https_runs[r])) for r in repeats]
    if all(base.n and other.n for base, other in pairs) and pairs:
        time = compare.median_change(pairs)
    else:
        time = stats.paired_change([(http_runs[r]["request_s"], https_runs[r]["request_s"]) for r in repeats])
    rate = stats.negated(stats.paired_change([(http_runs[r]["requests_per_second"],
                                               https_runs[r]["requests_per_second"]) for r in repeats]))
    return {"time_taken": time, "requests_per_second": rate}


def sweep_summary(runs: list[dict]) -> dict:
    """Per mode, one row per concurrency level and the average row (stats.pooled_paired_change).

    `runs`: {"mode", "level", "scheme", "repeat", **run_figures(report)} for every measured run
    (warm-ups left out). A row: concurrency, both cells (cell_summary), the overhead changes and
    their signed point estimates (`*_pct`, None when too short or missing). The average uses the
    levels that concluded, by repeat.
    """
    summary = {}
    for mode in ("new", "keepalive"):
        of_mode = [run for run in runs if run["mode"] == mode]
        levels = sorted({run["level"] for run in of_mode})
        rows = [level_row(level, [run for run in of_mode if run["level"] == level]) for level in levels]
        rows = [row for row in rows if row is not None]
        if rows:
            summary[mode] = {"levels": rows, "average": average_row(rows)}
    return summary


def level_row(level: int, runs: list[dict]) -> dict | None:
    sides = {scheme: {run["repeat"]: run for run in runs if run["scheme"] == scheme} for scheme in ("http", "https")}
    if not sides["http"] or not sides["https"]:
        return None
    cost = overhead(sides["http"], sides["https"])
    return {"concurrency": level,
            "http": cell_summary(list(sides["http"].values())), "https": cell_summary(list(sides["https"].values())),
            "time_taken_overhead": cost["time_taken"], "requests_per_second_overhead": cost["requests_per_second"],
            "time_taken_overhead_pct": shown_pct(cost["time_taken"]),
            "requests_per_second_overhead_pct": shown_pct(cost["requests_per_second"]),
            "pairs": {scheme: sides[scheme] for scheme in sides}}


def shown_pct(change: dict) -> float | None:
    """The signed point estimate, or None when there is nothing to show (too short, no data)."""
    return None if change["verdict"] in (stats.TOO_SHORT, stats.NO_DATA) else change["pct"]


def average_row(rows: list[dict]) -> dict:
    """Over every level with requests on both sides: per repeat, the geometric mean of the levels' ratios
    of median request time (and of requests/s), then Student's t over the repeats."""
    usable = [row for row in rows if row["time_taken_overhead"]["verdict"] != stats.NO_DATA]
    time = stats.pooled_paired_change(groups_by_repeat(usable, "request_s"))
    rate = stats.negated(stats.pooled_paired_change(groups_by_repeat(usable, "requests_per_second")))
    return {"levels_used": [row["concurrency"] for row in usable],
            "time_taken_overhead": time, "requests_per_second_overhead": rate,
            "time_taken_overhead_pct": shown_pct(time), "requests_per_second_overhead_pct": shown_pct(rate)}


def groups_by_repeat(rows: list[dict], key: str) -> list[list[tuple]]:
    """Per repeat, the (HTTP, HTTPS) pairs of `key` of every row that ran that repeat on both sides."""
    repeats = sorted({r for row in rows for r in row["pairs"]["http"] if r in row["pairs"]["https"]})
    return [[(row["pairs"]["http"][r][key], row["pairs"]["https"][r][key]) for row in rows
             if r in row["pairs"]["http"] and r in row["pairs"]["https"]] for r in repeats]


def without_pairs(summary: dict) -> dict:
    """The summary as stored and served: the per-repeat pairs are in the results already."""
    return {mode: {"levels": [{k: v for k, v in row.items() if k != "pairs"} for row in part["levels"]],
                   "average": part["average"]} for mode, part in summary.items()}


# ---------------------------------------------------------------------------------------------
# ab-like text


def ab_text(report: dict) -> str:
    """The report laid out with ab's line labels, then the lines ab cannot print (µs, TLS)."""
    lines = [f"Server Software:        {report['server_software']}",
             f"Server Hostname:        {report['server_hostname']}",
             f"Server Port:            {report['server_port']}"]
    if report["scheme"] == "https":
        lines.append(f"SSL/TLS Protocol:       {report['protocol']},{report['cipher']}")
        lines.append(f"TLS Server Name:        {report['tls_server_name']}")
    length = report["document_length"]
    lines += ["", f"Document Path:          {report['document_path']}",
              f"Document Length:        {length if length is not None else 0} bytes", "",
              f"Concurrency Level:      {report['concurrency_level']}",
              f"Time taken for tests:   {report['time_taken_s']:.3f} seconds",
              f"Complete requests:      {report['complete_requests']}",
              f"Failed requests:        {report['failed_requests']}"]
    if report["failed_requests"]:
        b = report["failed_breakdown"]
        lines.append(f"   (Connect: {b['connect']}, Receive: {b['receive']}, Length: {b['length']}, "
                     f"Exceptions: {b['exceptions']})")
    if report["write_errors"]:
        lines.append(f"Write errors:           {report['write_errors']}")
    if report["non_2xx_responses"]:
        lines.append(f"Non-2xx responses:      {report['non_2xx_responses']}")
    if report["keepalive_requests"] is not None:
        lines.append(f"Keep-Alive requests:    {report['keepalive_requests']}")
    lines += [f"Total transferred:      {report['total_transferred']} bytes",
              f"HTML transferred:       {report['html_transferred']} bytes"]
    if report["requests_per_second"] is not None:
        lines += [f"Requests per second:    {report['requests_per_second']:.2f} [#/sec] (mean)",
                  f"Time per request:       {report['time_per_request_ms']:.3f} [ms] (mean)",
                  f"Time per request:       {report['time_per_request_all_ms']:.3f} [ms] "
                  f"(mean, across all concurrent requests)",
                  f"Transfer rate:          {report['transfer_rate_kbps']:.2f} [Kbytes/sec] received"]
    if report.get("requests_per_second_end_to_end") is not None:
        lines.append(f"End to end:             {report['requests_per_second_end_to_end']:.2f} [#/sec] over "
                     f"{report['wall_s']:.3f} seconds (set-up included)")
    lines += connection_times_text(report) + percentage_text(report) + extra_text(report)
    return "\n".join(lines) + "\n"


def connection_times_text(report: dict) -> list[str]:
    table = report["connection_times"]["phases"]
    if not table["total"]:
        return []
    labels = {"connect": "Connect:    ", "processing": "Processing: ", "waiting": "Waiting:    ",
              "total": "Total:      "}
    lines = ["", "Connection Times (ms)", "              min  mean[+/-sd] median   max"]
    for phase in TABLE_PHASES:
        s = table[phase]
        lines.append(f"{labels[phase]}{s['min_ms']:5d} {s['mean_ms']:4d} {s['sd'] / 1000:5.1f} "
                     f"{s['median_ms']:6d} {s['max_ms']:7d}")
    return lines + report["connection_times"]["warnings"]


def percentage_text(report: dict) -> list[str]:
    if not report["percentages"]:
        return []
    lines = ["", "Percentage of the requests served within a certain time (ms)"]
    for row in report["percentages"]:
        if row["percent"] >= 100:
            lines.append(f" 100%  {row['ms']:5d} (longest request)")
        else:
            lines.append(f"  {row['percent']}%  {row['ms']:5d}")
    return lines


def extra_text(report: dict) -> list[str]:
    """What ab cannot print: µs resolution, the TLS handshake alone, how the numbers were obtained."""
    lines = ["", f"Connection Times (µs, from {report['connection_times']['source']})",
             "              min      mean[+/-sd]      median        max"]
    for phase in TABLE_PHASES:
        s = report["connection_times"]["phases"][phase]
        if s:
            lines.append(f"{phase.capitalize() + ':':12}{s['min']:7d} {s['mean']:9d} {s['sd']:8.1f} "
                         f"{s['median']:9d} {s['max']:10d}")
    tls = report["tls_handshake"]
    if tls:
        lines.append(f"TLS handshake:{tls['min']:5d} {tls['mean']:9d} {tls['sd']:8.1f} {tls['median']:9d} "
                     f"{tls['max']:10d}   ({tls['count']} full handshakes)")
    if report["latency_ms"]:
        lat = report["latency_ms"]
        lines.append(f"Latency (ms):           p50 {lat['p50']:.3f}  p90 {lat['p90']:.3f}  p99 {lat['p99']:.3f}  "
                     f"max {lat['max']:.3f}  mean {lat['mean']:.3f}")
    lines.append(f"Connections opened:     {report['connections_opened']}")
    if report["processes"] > 1 and report["engine"] == "c":
        lines.append(f"Parallel loops:         {report['processes']} threads (n and c split evenly, results merged)")
    elif report["processes"] > 1:
        lines.append(f"Processes:              {report['processes']} (n and c split evenly, results merged)")
    lines.append(f"Load engine:            {ENGINE_NAMES.get(report['engine'], report['engine'])}")
    if report["timeouts"]:
        lines.append(f"Timeouts:               {report['timeouts']} (counted in Exceptions)")
    if report["cancelled"]:
        lines.append("Cancelled:              yes (partial results)")
    lines += [f"Note:                   {note}" for note in report["notes"]]
    return lines
