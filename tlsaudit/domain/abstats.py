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

from hdrh.histogram import HdrHistogram

PERCENTAGES = (50, 66, 75, 80, 90, 95, 98, 99, 100)
TABLE_PHASES = ("connect", "processing", "waiting", "total")
LATENCY_PERCENTILES = (50, 90, 99)
SANE_NAMES = {"connect": "the initial connection time", "processing": "the processing time",
              "waiting": "the waiting time", "total": "the total time"}


# ---------------------------------------------------------------------------------------------
# ab's arithmetic on exact samples


def round_ms(us: int | float) -> int:
    """ab's ap_round_ms: whole milliseconds, halves up."""
    return int((us + 500) // 1000)


def ab_mean(values: list[int]) -> int:
    return sum(values) // len(values)


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


def exact_phase_stats(values: list[int]) -> dict:
    ordered = sorted(values)
    mean = ab_mean(ordered)
    return {"count": len(ordered), "min": ordered[0], "mean": mean, "sd": ab_sd(ordered, mean),
            "median": ab_median(ordered), "max": ordered[-1]}


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
        self.sorted = sorted(samples) if self.exact and samples is not None else None
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
        "status_codes": dict(result.get("status_codes") or {}),
        "errors": dict(result.get("errors") or {}),
        "cancelled": bool(result.get("cancelled")),
        "agents": result.get("agents", 1),
        "processes": result.get("processes", 1),
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
    }


# ---------------------------------------------------------------------------------------------
# HTTP vs HTTPS


def overhead(http: dict, https: dict) -> dict:
    """The seeds' overhead: |HTTPS - HTTP| / HTTP x 100, for time taken and for requests per second.

    `http` and `https` are ab_report() dicts (or anything with time_taken_s and requests_per_second).
    """
    return {
        "time_taken_pct": percent_difference(http.get("time_taken_s"), https.get("time_taken_s")),
        "requests_per_second_pct": percent_difference(http.get("requests_per_second"),
                                                      https.get("requests_per_second")),
        "http": {"time_taken_s": http.get("time_taken_s"), "requests_per_second": http.get("requests_per_second")},
        "https": {"time_taken_s": https.get("time_taken_s"),
                  "requests_per_second": https.get("requests_per_second")},
    }


def percent_difference(base: float | None, other: float | None) -> float | None:
    if not base or other is None:
        return None
    return abs(other - base) / base * 100


def sweep_summary(levels: list[dict]) -> dict:
    """Rows of the seed's Tables V-VI and their averages.

    Each level is {"concurrency": c, "http": report, "https": report}; a row carries both
    sides' time taken and requests/s and the two overhead percentages; `average` is the
    arithmetic mean of every column over the levels (None where a level had no value).
    """
    rows = []
    for level in levels:
        cost = overhead(level["http"], level["https"])
        rows.append({
            "concurrency": level["concurrency"],
            "http_time_taken_s": cost["http"]["time_taken_s"], "https_time_taken_s": cost["https"]["time_taken_s"],
            "time_taken_overhead_pct": cost["time_taken_pct"],
            "http_requests_per_second": cost["http"]["requests_per_second"],
            "https_requests_per_second": cost["https"]["requests_per_second"],
            "requests_per_second_overhead_pct": cost["requests_per_second_pct"],
        })
    columns = [k for k in rows[0] if k != "concurrency"] if rows else []
    return {"levels": rows, "average": {column: mean_of([row[column] for row in rows]) for column in columns}}


def mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


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
    if report["processes"] > 1:
        lines.append(f"Processes:              {report['processes']} (n and c split evenly, results merged)")
    if report["timeouts"]:
        lines.append(f"Timeouts:               {report['timeouts']} (counted in Exceptions)")
    if report["cancelled"]:
        lines.append("Cancelled:              yes (partial results)")
    lines += [f"Note:                   {note}" for note in report["notes"]]
    return lines
