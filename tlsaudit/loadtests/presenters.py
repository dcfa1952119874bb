"""Shape a run for its page: progress lines, and charts, each with the table of its exact numbers.

A chart is a plain dict {id, title, type, x_title, y_title, labels, datasets: [{label, data,
errors?}], table: {header, rows}}; the page draws them from one json_script (static/js/perf.js),
prints the tables under them, and the CSV view serves the same tables.
"""

from __future__ import annotations

PERCENTAGES = ("50", "66", "75", "80", "90", "95", "98", "99", "100")
MODE_TITLES = {"new": "new connection per request", "keepalive": "keep-alive"}
SCHEMES = ("http", "https")


def present_run(run) -> dict:
    steps = run.progress.get("steps", [])
    charts = charts_for(run)
    return {"steps": [{"label": s["label"], "status": s["status"]} for s in steps], "round_trips": round_trips(run),
            "steps_done": sum(1 for s in steps if s["status"] == "done"), "charts": charts,
            "chart_data": [{k: v for k, v in c.items() if k != "table"} for c in charts],
            "reports": [{**report_rows(e), "slug": f"report-{i + 1}"}
                        for i, e in enumerate(e for e in run.results if "report" in e)]}


def charts_for(run) -> list[dict]:
    if not run.results:
        return []
    if run.kind == "handshakes":
        return handshake_charts(run)
    charts = []
    for mode in ("new", "keepalive"):
        entries = [e for e in run.results if e.get("mode") == mode]
        if entries:
            charts += load_charts(run, mode, entries)
    return charts


def csv_tables(run) -> dict[str, tuple[list, list]]:
    tables = {c["id"]: (c["table"]["header"], c["table"]["rows"]) for c in charts_for(run)}
    for index, entry in enumerate(e for e in run.results if "report" in e):
        tables[f"report-{index + 1}"] = (["field", "value"], report_rows(entry)["rows"])
    return tables


# --- load and sweep --------------------------------------------------------------------------

def load_charts(run, mode: str, entries: list[dict]) -> list[dict]:
    suffix = "" if run.kind == "load" else f" ({MODE_TITLES[mode]})"
    charts = [percentile_chart(f"latency-{mode}", f"Latency percentiles{suffix}", entries),
              breakdown_chart(f"times-{mode}", f"Connection times, mean{suffix}", entries)]
    if run.kind == "sweep":
        levels = sorted({e["level"] for e in entries})
        charts = [
            by_level_chart(f"rps-{mode}", f"Requests per second vs concurrency{suffix}", "requests/s", levels,
                           entries, rps),
            by_level_chart(f"time-{mode}", f"Time taken vs concurrency{suffix}", "seconds", levels, entries,
                           time_taken),
            overhead_chart(f"overhead-{mode}", f"TLS overhead per level{suffix}", run.summary.get(mode) or {}),
            *charts,
        ]
    return charts


def rps(report: dict):
    return rounded(report.get("requests_per_second"), 1)


def time_taken(report: dict):
    return rounded(report.get("time_taken_s"))


def by_level_chart(chart_id, title, unit, levels, entries, value) -> dict:
    series = {s: {e["level"]: value(e["report"]) for e in entries if e["scheme"] == s} for s in SCHEMES}
    rows = [[level, series["http"].get(level), series["https"].get(level)] for level in levels]
    return chart(chart_id, title, "line", "concurrency", unit, levels,
                 [dataset("HTTP", [r[1] for r in rows]), dataset("HTTPS", [r[2] for r in rows])],
                 ["concurrency", f"HTTP {unit}", f"HTTPS {unit}"], rows)


def overhead_chart(chart_id, title, summary: dict) -> dict:
    """The seed's Tables V-VI: both sides and the overhead % per level, then the averages."""
    columns = ("http_time_taken_s", "https_time_taken_s", "time_taken_overhead_pct", "http_requests_per_second",
               "https_requests_per_second", "requests_per_second_overhead_pct")
    rows = [[lv["concurrency"], *(rounded(lv.get(c)) for c in columns)] for lv in summary.get("levels", [])]
    if rows:
        rows.append(["average", *(rounded((summary.get("average") or {}).get(c)) for c in columns)])
    return chart(chart_id, title, "bar", "concurrency", "overhead %", [r[0] for r in rows],
                 [dataset("Time taken overhead %", [r[3] for r in rows]),
                  dataset("Requests/s overhead %", [r[6] for r in rows])],
                 ["concurrency", "HTTP time taken s", "HTTPS time taken s", "time taken overhead %",
                  "HTTP requests/s", "HTTPS requests/s", "requests/s overhead %"], rows)


def rounded(value, digits: int = 3):
    return round(value, digits) if isinstance(value, float) else value


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
    stats = phases.get(phase) or {}
    return round(stats["mean"] / 1000, 3) if stats.get("mean") is not None else None


def report_rows(entry: dict) -> dict:
    """One stored ab-style run: ab's own layout for reading, flat rows for the CSV."""
    from tlsaudit.domain.abstats import ab_text

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
    from tlsaudit.domain.round_trips import combined_rtt_ms, estimate_rtt_from_histogram, rtt_note

    if not run.results:
        return None
    if run.kind == "handshakes":
        cells = [e["result"] for e in run.results if (e.get("result") or {}).get("count")]
        rtt = combined_rtt_ms(estimate_rtt_from_histogram((c.get("histograms") or {}).get("tcp")) for c in cells)
        rows = [[f"TLS {c['version']} {suite_label(c)} {c.get('mode', 'full')}, {c.get('agents')} agents",
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
    from tlsaudit.domain.round_trips import with_round_trips

    return with_round_trips(value_ms, rtt_ms)


def load_phase_median_ms(entry: dict, phase: str):
    """A phase's median (ms) of the stored result: its exact samples, else its histogram."""
    from tlsaudit.domain.abstats import PhaseSource

    source = PhaseSource(entry["result"], phase)
    return round(source.percentile(50) / 1000, 3) if source.count else None


# --- handshakes ------------------------------------------------------------------------------

def handshake_charts(run) -> list[dict]:
    cells = [e["result"] for e in run.results]
    full = [c for c in cells if c.get("mode", "full") == "full" and c.get("count")]
    charts = [suite_chart(full)]
    resumed = run.summary.get("resumption") or []
    if resumed:
        charts.append(resumption_chart(resumed))
    charts.append(versions_table(run.summary.get("versions") or []))
    return charts


def suite_label(cell: dict) -> str:
    return f"{cell.get('suite') or cell.get('requested_suite') or 'default'} ({cell.get('agents')} agents)"


def suite_chart(cells: list[dict]) -> dict:
    """Mean full-handshake time per suite and agents level, one bar per version, SD as error bars."""
    labels = sorted({suite_key(c) for c in cells})
    datasets, rows = [], []
    for version in ("1.2", "1.3"):
        by_key = {suite_key(c): c for c in cells if c.get("version") == version}
        if not by_key:
            continue
        datasets.append(dataset(f"TLS {version}", [by_key[k]["mean_ms"] if k in by_key else None for k in labels],
                                errors=[by_key[k]["sd_ms"] if k in by_key else None for k in labels]))
    for c in sorted(cells, key=lambda c: (c.get("agents", 0), c.get("version", ""), str(c.get("suite")))):
        rows.append([c.get("version"), c.get("suite") or c.get("requested_suite"), c.get("agents"), c.get("count"),
                     c.get("mean_ms"), c.get("sd_ms"), c.get("p50_ms"), c.get("p95_ms"), c.get("p99_ms"),
                     c.get("handshakes_per_s"), sum((c.get("failures") or {}).values())])
    return chart("handshakes", "Full handshake time per suite, TLS 1.2 vs 1.3 (mean ± SD)", "bar",
                 "suite family (agents)", "ms", labels, datasets,
                 ["TLS", "suite", "agents", "count", "mean ms", "SD ms", "p50 ms", "p95 ms", "p99 ms",
                  "handshakes/s", "failures"], rows)


def suite_key(cell: dict) -> str:
    from tlsaudit.domain.handshake_stats import suite_family

    family = suite_family(cell.get("suite") or cell.get("requested_suite")) or (cell.get("suite") or "default")
    return f"{family} ({cell.get('agents')} agents)"


def resumption_chart(rows_in: list[dict]) -> dict:
    labels = [f"TLS {r['version']} {r.get('suite') or 'default'}" for r in rows_in]
    rows = [[label, r.get("resumption"), r.get("full_mean_ms"), r.get("resumed_mean_ms"), r.get("resumed_faster_pct")]
            for label, r in zip(labels, rows_in)]
    return chart("resumption", "Full vs resumed handshakes (mean)", "bar", "version and suite", "ms", labels,
                 [dataset("Full", [r[2] for r in rows]), dataset("Resumed", [r[3] for r in rows])],
                 ["cell", "resumption", "full mean ms", "resumed mean ms", "resumed faster %"], rows)


def versions_table(rows_in: list[dict]) -> dict:
    labels = [f"{r['family']} ({r['agents']} agents)" for r in rows_in]
    rows = [[r["family"], r["agents"], r["tls12_mean_ms"], r["tls13_mean_ms"], r["tls13_faster_pct"]]
            for r in rows_in]
    return chart("versions", "TLS 1.3 vs TLS 1.2: how much faster (%)", "bar", "suite family (agents)",
                 "TLS 1.3 faster %", labels, [dataset("TLS 1.3 faster %", [r[4] for r in rows])],
                 ["suite family", "agents", "TLS 1.2 mean ms", "TLS 1.3 mean ms", "TLS 1.3 faster %"], rows)


# --- helpers ---------------------------------------------------------------------------------

def dataset(label: str, data: list, errors: list | None = None) -> dict:
    out = {"label": label, "data": data}
    if errors is not None:
        out["errors"] = errors
    return out


def chart(chart_id, title, kind, x_title, y_title, labels, datasets, header, rows, stacked=False) -> dict:
    return {"id": chart_id, "title": title, "type": kind, "x_title": x_title, "y_title": y_title,
            "labels": [str(label) for label in labels], "datasets": datasets, "stacked": stacked,
            "table": {"header": header, "rows": rows}}
