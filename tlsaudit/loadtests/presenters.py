"""Shape a run for its page: progress lines, and charts, each with the table of its exact numbers.

A chart is a plain dict {id, title, type, x_title, y_title, labels, datasets: [{label, data,
intervals?}], warnings, table: {header, rows}}; the page draws them from one json_script
(static/js/perf.js: `intervals` are [low, high] pairs drawn as error bars), prints the warnings and
the tables under them, the CSV view serves the same tables and the PDF report prints them.

Every comparison reads the run's summary (summaries.summary_of: medians over the repeats with 95 %
intervals, signed overheads: negative when HTTPS, TLS 1.3 or resumption is faster). A figure that is
too short to conclude is not drawn (its point is null) and says so in its chart's warnings and row.
"""

from __future__ import annotations

from tlsaudit.domain import stats
from tlsaudit.domain.abstats import PhaseSource, ab_text, run_figures
from tlsaudit.domain.handshake_stats import suite_family
from tlsaudit.domain.round_trips import combined_rtt_ms, estimate_rtt_from_histogram, rtt_note, with_round_trips
from tlsaudit.loadtests.summaries import summary_of

PERCENTAGES = ("50", "66", "75", "80", "90", "95", "98", "99", "100")
MODE_TITLES = {"new": "new connection per request", "keepalive": "keep-alive"}
SCHEMES = ("http", "https")


def present_run(run) -> dict:
    steps = run.progress.get("steps", [])
    charts = charts_for(run)
    return {"steps": [{"label": s["label"], "status": s["status"]} for s in steps], "round_trips": round_trips(run),
            "steps_done": sum(1 for s in steps if s["status"] == "done"), "charts": charts,
            "chart_data": [{k: v for k, v in c.items() if k != "table"} for c in charts],
            "too_short": [w for c in charts for w in c["warnings"]], "design": run_design(run),
            "reports": [{**report_rows(e), "slug": f"report-{i + 1}"} for i, e in enumerate(reported(run))]}


def run_design(run) -> str:
    """How the figures were obtained, in one line for the page."""
    repeats = (run.params or {}).get("repeats")
    if not repeats:
        return "Single run per cell (stored before repeats): figures have no interval."
    sides = {"sweep": "HTTP and HTTPS back to back, order alternating", "handshakes": "TLS versions interleaved, "
             "order alternating", "load": "one cell"}[run.kind]
    return (f"{repeats} repeat{'s' if repeats > 1 else ''} per cell after a discarded warm-up ({sides}); "
            "medians with 95 % intervals over the repeats; rates are end to end, set-up included.")


def reported(run) -> list[dict]:
    """The ab-style runs shown as reports: every measured step (warm-ups are only in the step list)."""
    return [e for e in run.results if "report" in e and not e.get("warmup")]


def charts_for(run) -> list[dict]:
    if not run.results:
        return []
    summary = summary_of(run)
    if run.kind == "handshakes":
        return handshake_charts(summary)
    charts = []
    for mode in ("new", "keepalive"):
        entries = [e for e in reported(run) if e.get("mode") == mode]
        if entries:
            charts += load_charts(run, summary, mode, entries)
    return charts


def csv_tables(run) -> dict[str, tuple[list, list]]:
    tables = {c["id"]: (c["table"]["header"], c["table"]["rows"]) for c in charts_for(run)}
    for index, entry in enumerate(reported(run)):
        tables[f"report-{index + 1}"] = (["field", "value"], report_rows(entry)["rows"])
    return tables


# --- intervals and verdicts ------------------------------------------------------------------------

def figure(estimate: dict | None, digits: int = 3) -> tuple:
    """(median, low, high) of a stats estimate, rounded."""
    estimate = estimate or {}
    return tuple(rounded(estimate.get(k), digits) for k in ("median", "low", "high"))


def interval(estimate: dict | None, digits: int = 3) -> list | None:
    median, low, high = figure(estimate, digits)
    return [low, high] if low is not None and high is not None else None


def change_cells(change: dict | None, **words) -> list:
    """[pct, low, high, verdict] of a signed change: the numbers stay empty when too short to conclude."""
    change = change or stats.no_change()
    shown = change["verdict"] not in (stats.TOO_SHORT, stats.NO_DATA)
    numbers = [rounded(change[k], 1) if shown else None for k in ("pct", "low_pct", "high_pct")]
    return [*numbers, stats.change_words(change, **words)]


def drawn(change: dict | None):
    """The bar of a change (None when too short: never drawn as a result)."""
    change = change or stats.no_change()
    return None if change["verdict"] in (stats.TOO_SHORT, stats.NO_DATA) else rounded(change["pct"], 1)


def drawn_interval(change: dict | None):
    change = change or stats.no_change()
    if drawn(change) is None or change["low_pct"] is None:
        return None
    return [rounded(change["low_pct"], 1), rounded(change["high_pct"], 1)]


def cell_value(cell: dict, key: str, digits: int = 3):
    """The median of a cell's figure, or None when the cell is too short to conclude."""
    return None if cell.get("too_short") else figure(cell.get(key), digits)[0]


def cell_interval(cell: dict, key: str, digits: int = 3):
    return None if cell.get("too_short") else interval(cell.get(key), digits)


# --- load and sweep --------------------------------------------------------------------------

def load_charts(run, summary: dict, mode: str, entries: list[dict]) -> list[dict]:
    suffix = "" if run.kind == "load" else f" ({MODE_TITLES[mode]})"
    typical = median_repeats(entries)
    charts = [percentile_chart(f"latency-{mode}", f"Latency percentiles, median repeat{suffix}", typical),
              breakdown_chart(f"times-{mode}", f"Connection times, mean, median repeat{suffix}", typical)]
    if run.kind == "load":
        cell = summary.get("cell")
        return ([rate_chart(f"rate-{mode}", f"Requests per second, end to end{suffix}", cell, entries[0])]
                if cell else []) + charts
    part = summary.get(mode) or {"levels": [], "average": {}}
    levels = part["levels"]
    return [
        by_level_chart(f"rps-{mode}", f"Requests per second vs concurrency{suffix}", "requests/s", levels,
                       "requests_per_second", 1),
        by_level_chart(f"time-{mode}", f"Time taken vs concurrency, end to end{suffix}", "seconds", levels, "time_s"),
        overhead_chart(f"overhead-{mode}", f"TLS overhead per level{suffix}", part),
        *charts,
    ]


def compared_medians_ms(change: dict, http: dict, https: dict) -> list:
    """The two medians a time overhead compares (ms): every request's, or each cell's for runs stored
    before requests' times were kept."""
    if change.get("base_median") is not None:
        return [rounded(change["base_median"] / 1000, 3), rounded(change["other_median"] / 1000, 3)]
    return [rounded(http.get("median_ms"), 3), rounded(https.get("median_ms"), 3)]


def median_repeats(entries: list[dict]) -> list[dict]:
    """Per cell (scheme, level), the repeat with the median end-to-end rate: one typical run each."""
    cells: dict[tuple, list[dict]] = {}
    for entry in entries:
        cells.setdefault((entry["level"], entry["scheme"]), []).append(entry)
    chosen = []
    for key in sorted(cells):
        runs = sorted(cells[key], key=lambda e: run_figures(e["report"])["requests_per_second"] or 0)
        chosen.append(runs[(len(runs) - 1) // 2])
    return chosen


def cell_warnings(prefix: str, cell: dict) -> list[str]:
    """Why a cell has runs with nothing to compare (no request completed)."""
    return [f"{prefix}: {cell['too_short']}."] if cell.get("too_short") else []


def rate_chart(chart_id, title, cell: dict, entry: dict) -> dict:
    label = f"{entry['scheme'].upper()} c={entry['level']}"
    rate = figure(cell["requests_per_second"], 1)
    row = [label, cell["repeats"], *rate, stats.TOO_SHORT if cell.get("too_short") else "", cell.get("too_short") or ""]
    return chart(chart_id, title, "bar", "run", "requests/s", [label],
                 [dataset("requests/s", [cell_value(cell, "requests_per_second", 1)],
                          [cell_interval(cell, "requests_per_second", 1)])],
                 ["run", "repeats", "requests/s (median)", "95 % low", "95 % high", "verdict", "note"], [row],
                 warnings=cell_warnings(label, cell))


def by_level_chart(chart_id, title, unit, levels: list[dict], key: str, digits: int = 3) -> dict:
    """HTTP and HTTPS per level: the median over the repeats, its 95 % interval as error bars."""
    labels = [row["concurrency"] for row in levels]
    datasets, warnings, rows = [], [], []
    for scheme in SCHEMES:
        cells = [row[scheme] for row in levels]
        datasets.append(dataset(scheme.upper(), [cell_value(c, key, digits) for c in cells],
                                [cell_interval(c, key, digits) for c in cells]))
    for row in levels:
        http, https = row["http"], row["https"]
        notes = "; ".join(f"{s.upper()} {row[s]['too_short']}" for s in SCHEMES if row[s].get("too_short"))
        rows.append([row["concurrency"], http["repeats"], *figure(http[key], digits), *figure(https[key], digits),
                     notes])
        for scheme in SCHEMES:
            warnings += cell_warnings(f"{scheme.upper()} c={row['concurrency']}", row[scheme])
    header = ["concurrency", "repeats", f"HTTP {unit} (median)", "HTTP 95 % low", "HTTP 95 % high",
              f"HTTPS {unit} (median)", "HTTPS 95 % low", "HTTPS 95 % high", "note"]
    return chart(chart_id, title, "line", "concurrency", unit, labels, datasets, header, rows,
                 warnings=unique(warnings))


def overhead_chart(chart_id, title, part: dict) -> dict:
    """The seeds' Tables V-VI, signed: the median request's time (HTTPS - HTTP) / HTTP beside the two
    medians it compares, and requests/s (HTTP - HTTPS) / HTTP beside the two rates; negative when HTTPS
    is faster, each with its 95 % interval and verdict, then the average row."""
    rows, time_bars, rate_bars, time_errors, rate_errors, labels = [], [], [], [], [], []
    for row in part["levels"]:
        http, https = row["http"], row["https"]
        time, rate = row["time_taken_overhead"], row["requests_per_second_overhead"]
        note = "; ".join(f"{s.upper()} {row[s]['too_short']}" for s in SCHEMES if row[s].get("too_short"))
        rows.append([row["concurrency"], http["repeats"], *compared_medians_ms(time, http, https),
                     *change_cells(time), figure(http["requests_per_second"], 1)[0],
                     figure(https["requests_per_second"], 1)[0], *change_cells(rate), note])
        labels.append(row["concurrency"])
        time_bars.append(drawn(time))
        rate_bars.append(drawn(rate))
        time_errors.append(drawn_interval(time))
        rate_errors.append(drawn_interval(rate))
    average = part.get("average") or {}
    if rows and average:
        used = ", ".join(str(c) for c in average["levels_used"]) or "none"
        time, rate = average["time_taken_overhead"], average["requests_per_second_overhead"]
        rows.append(["average", "", None, None, *change_cells(time), None, None, *change_cells(rate),
                     f"geometric mean of the levels' ratios of median times, by repeat (c = {used})"])
        labels.append("average")
        time_bars.append(drawn(time))
        rate_bars.append(drawn(rate))
        time_errors.append(drawn_interval(time))
        rate_errors.append(drawn_interval(rate))
    warnings = [f"c={row['concurrency']}: {stats.NO_DATA} ("
                f"{'; '.join(row[s]['too_short'] for s in SCHEMES if row[s].get('too_short'))})."
                for row in part["levels"] if row["time_taken_overhead"]["verdict"] == stats.NO_DATA]
    header = ["concurrency", "repeats", "HTTP median request ms", "HTTPS median request ms",
              "request time overhead %", "time 95 % low", "time 95 % high", "time verdict", "HTTP requests/s",
              "HTTPS requests/s",
              "requests/s overhead %", "requests/s 95 % low", "requests/s 95 % high", "requests/s verdict", "note"]
    return chart(chart_id, title, "bar", "concurrency", "overhead % (negative: HTTPS faster)", labels,
                 [dataset("Request time overhead %", time_bars, time_errors),
                  dataset("Requests/s overhead %", rate_bars, rate_errors)], header, rows, warnings=warnings)


def rounded(value, digits: int = 3):
    return round(value, digits) if isinstance(value, float) else value


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def percentile_chart(chart_id, title, entries) -> dict:
    labels = [f"{p} %" for p in PERCENTAGES]
    datasets, rows = [], [[p] for p in labels]
    for entry in entries:
        values = [percentage(entry["report"], p) for p in PERCENTAGES]
        datasets.append(dataset(short_label(entry), values))
        for row, value in zip(rows, values):
            row.append(value)
    return chart(chart_id, title, "line", "requests served within", "ms", labels, datasets,
                 ["percentile", *(f"{short_label(e)} ms" for e in entries)], rows)


def breakdown_chart(chart_id, title, entries) -> dict:
    phases = ("connect", "waiting", "processing")
    labels = [short_label(e) for e in entries]
    rows = [[label, *(phase_mean(e["report"], p) for p in phases), phase_mean(e["report"], "total")]
            for label, e in zip(labels, entries)]
    return chart(chart_id, title, "bar", "run", "ms", labels,
                 [dataset(p.capitalize(), [r[i + 1] for r in rows]) for i, p in enumerate(phases)],
                 ["run", "connect ms", "waiting ms", "processing ms", "total ms"], rows, stacked=False)


def short_label(entry: dict) -> str:
    return f"{entry['scheme'].upper()} c={entry['level']}"


def percentage(report: dict, p: str):
    """ab's "served within" value (whole ms) for `p` %."""
    return next((row["ms"] for row in report.get("percentages") or [] if str(row["percent"]) == p), None)


def phase_mean(report: dict, phase: str):
    phases = (report.get("connection_times") or {}).get("phases") or {}
    stats_ = phases.get(phase) or {}
    return round(stats_["mean"] / 1000, 3) if stats_.get("mean") is not None else None


def report_rows(entry: dict) -> dict:
    """One stored ab-style run: ab's own layout for reading, flat rows for the CSV."""
    report = dict(entry.get("report") or {})
    return {"label": entry["label"], "text": ab_text(report), "rows": flatten(report)}


def flatten(value, prefix: str = "") -> list[list]:
    if isinstance(value, dict):
        return [row for key, inner in value.items() for row in flatten(inner, f"{prefix}.{key}" if prefix else key)]
    if isinstance(value, list):
        if all(isinstance(item, dict) and "percent" in item for item in value):
            return [[f"{prefix}.{item['percent']}%_ms", item["ms"]] for item in value]
        return [[prefix, "; ".join(str(item) for item in value)]] if value else []
    return [[prefix, rounded(value)]]


# --- round trips ---------------------------------------------------------------------------

LOAD_RTT_PHASES = (("tcp", "TCP connect"), ("tls", "TLS handshake"), ("connect", "Connect (TCP + TLS)"),
                   ("waiting", "Request → first byte"), ("total", "Total"))


def round_trips(run) -> dict | None:
    """The run's RTT (from its TCP connects) and each phase's median with its RTT multiple, or None
    before there are results. Cells: "153.2 ms (≈ 3.1 RTT)"; no multiples under 10 ms of RTT."""
    if not run.results:
        return None
    if run.kind == "handshakes":
        cells = [e["result"] for e in run.results if (e.get("result") or {}).get("count")]
        rtt = combined_rtt_ms(estimate_rtt_from_histogram((c.get("histograms") or {}).get("tcp")) for c in cells)
        rows = [[f"TLS {c['version']} {c.get('suite') or c.get('requested_suite') or 'default'} "
                 f"{c.get('mode', 'full')}, {c.get('agents')} agents",
                 cell_with_rtt(c.get("tcp_p50_ms"), rtt), cell_with_rtt(c.get("p50_ms"), rtt)] for c in cells]
        header = ["cell", "TCP connect (median)", "TLS handshake (median)"]
    else:
        entries = [e for e in run.results if "report" in e and "result" in e]
        rtt = combined_rtt_ms(estimate_rtt_from_histogram((e["result"].get("histograms") or {}).get("tcp"))
                              for e in entries)
        rows = [[f"{short_label(e)} {MODE_TITLES.get(e.get('mode'), '')}".strip(),
                 *(cell_with_rtt(load_phase_median_ms(e, phase), rtt) for phase, _ in LOAD_RTT_PHASES)]
                for e in entries]
        header = ["run", *(f"{label} (median)" for _, label in LOAD_RTT_PHASES)]
    return {"rtt_ms": rtt, "note": rtt_note(rtt), "header": header, "rows": rows}


def cell_with_rtt(value_ms, rtt_ms) -> str:
    return with_round_trips(value_ms, rtt_ms)


def load_phase_median_ms(entry: dict, phase: str):
    """A phase's median (ms) of the stored result: its exact samples, else its histogram."""
    source = PhaseSource(entry["result"], phase)
    return round(source.percentile(50) / 1000, 3) if source.count else None


# --- handshakes ------------------------------------------------------------------------------

def handshake_charts(summary: dict) -> list[dict]:
    charts = [suite_chart(summary.get("cells") or [])]
    if summary.get("resumption"):
        charts.append(resumption_chart(summary["resumption"]))
    charts.append(versions_chart(summary.get("versions") or []))
    return charts


def suite_chart(cells: list[dict]) -> dict:
    """Median full-handshake time per suite family and agents level, one bar per version, with the
    95 % interval over the repeats as error bars; the table has every cell and its end-to-end rate."""
    full = [c for c in cells if c["mode"] == "full" and c["count"]]
    labels = sorted({suite_key(c) for c in full})
    datasets = []
    for version in ("1.2", "1.3"):
        by_key = {suite_key(c): c for c in full if c["version"] == version}
        if by_key:
            datasets.append(dataset(f"TLS {version}", [cell_value(by_key[k], "p50_ms") if k in by_key else None
                                                       for k in labels],
                                    [cell_interval(by_key[k], "p50_ms") if k in by_key else None for k in labels]))
    rows = [[c["version"], c["suite"], c["agents"], c["mode"], c["repeats"], c["count"], *figure(c["p50_ms"]),
             rounded(c["mean_ms"]), *figure(c["handshakes_per_s"], 1), c["failures"], c["too_short"] or ""]
            for c in sorted(cells, key=lambda c: (c["agents"] or 0, c["mode"], c["version"] or "", str(c["suite"])))]
    warnings = [f"TLS {c['version']} {c['suite'] or 'default'} ({c['agents']} agents): {c['too_short']}."
                for c in cells if c["too_short"]]
    return chart("handshakes", "Full handshake time per suite, TLS 1.2 vs 1.3 (median over the repeats, 95 % "
                 "interval)", "bar", "suite family (agents)", "ms", labels, datasets,
                 ["TLS", "suite", "agents", "mode", "repeats", "handshakes", "median ms", "95 % low ms",
                  "95 % high ms", "mean ms", "handshakes/s (end to end)", "handshakes/s 95 % low",
                  "handshakes/s 95 % high", "failures", "note"], rows, warnings=warnings)


def suite_key(cell: dict) -> str:
    family = suite_family(cell.get("suite")) or (cell.get("suite") or "default")
    return f"{family} ({cell.get('agents')} agents)"


def resumption_chart(rows_in: list[dict]) -> dict:
    labels = [f"TLS {r['version']} {r.get('suite') or 'default'}" for r in rows_in]
    rows = [[label, r.get("resumption"), r.get("full_p50_ms"), r.get("resumed_p50_ms"),
             *change_cells(r["resumed_vs_full"], side="resumed"), r.get("too_short") or ""]
            for label, r in zip(labels, rows_in)]
    return chart("resumption", "Full vs resumed handshakes (median time)", "bar", "version and suite", "ms", labels,
                 [dataset("Full", [r[2] for r in rows]), dataset("Resumed", [r[3] for r in rows])],
                 ["cell", "resumption", "full median ms", "resumed median ms", "resumed vs full %", "95 % low",
                  "95 % high", "verdict", "note"], rows)


def versions_chart(rows_in: list[dict]) -> dict:
    """(TLS 1.3 - TLS 1.2) / TLS 1.2 per family and agents: negative when TLS 1.3 is faster."""
    labels = [f"{r['family']} ({r['agents']} agents)" for r in rows_in]
    rows = [[r["family"], r["agents"], r["tls12_p50_ms"], r["tls13_p50_ms"],
             *change_cells(r["tls13_vs_tls12"], side="TLS 1.3"), r.get("too_short") or ""] for r in rows_in]
    warnings = [f"{label}: {stats.NO_DATA} ({r['too_short']})."
                for label, r in zip(labels, rows_in) if r["tls13_vs_tls12"]["verdict"] == stats.NO_DATA]
    return chart("versions", "TLS 1.3 vs TLS 1.2: change in median handshake time (negative: TLS 1.3 faster)", "bar",
                 "suite family (agents)", "TLS 1.3 vs 1.2 %", labels,
                 [dataset("TLS 1.3 vs 1.2 %", [drawn(r["tls13_vs_tls12"]) for r in rows_in],
                          [drawn_interval(r["tls13_vs_tls12"]) for r in rows_in])],
                 ["suite family", "agents", "TLS 1.2 median ms", "TLS 1.3 median ms", "TLS 1.3 vs 1.2 %",
                  "95 % low", "95 % high", "verdict", "note"], rows, warnings=warnings)


# --- helpers ---------------------------------------------------------------------------------

def dataset(label: str, data: list, intervals: list | None = None) -> dict:
    out = {"label": label, "data": data}
    if intervals is not None:
        out["intervals"] = intervals
    return out


def chart(chart_id, title, kind, x_title, y_title, labels, datasets, header, rows, stacked=False,
          warnings=None) -> dict:
    return {"id": chart_id, "title": title, "type": kind, "x_title": x_title, "y_title": y_title,
            "labels": [str(label) for label in labels], "datasets": datasets, "stacked": stacked,
            "warnings": warnings or [], "table": {"header": header, "rows": rows}}
