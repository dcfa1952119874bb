"""Shape a probe for its page: charts (each with the table of its exact numbers), the requests
and bytes table, the increase % row, flagged samples and errors.

A chart is a plain dict {id, title, type, x_title, y_title, labels, datasets: [{label, data}],
stacked, table: {header, rows}}; the page draws them from one json_script (static/js/browser.js),
prints the tables under them, and the CSV view serves the same tables.
"""

from __future__ import annotations

from collections import Counter

from tlsaudit.domain import stats
from tlsaudit.domain.round_trips import rtt_note, with_round_trips
from tlsaudit.probes.services import increase_of, increase_pct_of

# The four columns of the seed's comparison, in its order.
COLUMNS = (("http", "cold"), ("https", "cold"), ("http", "warm"), ("https", "warm"))
NETWORK_PHASES = (("redirect", "Redirect"), ("dns", "DNS"), ("connect", "TCP connect"), ("tls", "TLS handshake"),
                  ("ttfb", "Request → first byte"), ("download", "Download"))
PAGE_METRICS = (("requests", "requests"), ("bytes", "bytes"), ("from_cache", "from cache"),
                ("not_modified", "304s"), ("failed", "failed"))
INCREASE_METRICS = ("requests", "bytes", "dns", "connect", "tls", "ttfb", "download", "dom_content_loaded", "load")
ERROR_HELP = {  # keyed by the engine's codes (workers/browser/errors.py) and the task's
    "timeout": "The page did not finish loading in time: a request that never ends (a stalled script, image or "
               "long poll) keeps the load event from firing.",
    "certificate": "Chromium did not trust the certificate. If the site uses an internal CA, add it to the "
                   "organization's settings (custom CA); otherwise fix the chain, the dates or the name on it.",
    "tls_handshake_failed": "Chromium and the server found no TLS version or cipher suite in common: run an audit "
                            "(Security tab) to see what the server offers.",
    "refused": "Nothing accepted the connection on that port: check the site's ports and firewall.",
    "connection_failed": "The connection broke before the page arrived: check the server's error log.",
    "redirect_loop": "The page redirects in a loop (often HTTP → HTTPS → HTTP): browsers give up after 20 redirects.",
    "dns": "The host name does not resolve: check its DNS records, or pin the site to an IP address.",
    "private_target": "The site resolves to a private or loopback address, which probes may not reach.",
    "invalid_target": "The site's address or the probe's path cannot be loaded: edit the site.",
    "browser": "The worker could not run Chromium: this is our problem, not the site's.",
    "custom_ca": "The organization's custom CA cannot be loaded as it is (see the message): an owner or admin "
                 "can fix it under the organization's settings.",
    "time_limit": "The probe as a whole ran out of time: ask for fewer repetitions, or make the page load faster.",
    "probe_crashed": "The probe stopped unexpectedly: this is our problem, not the site's.",
}


def column_label(variant: str, mode: str) -> str:
    return f"{variant.upper()} {mode}"


def present_probe(probe) -> dict:
    """Everything the probe's page shows; charts only once it is done."""
    context = {"error_help": ERROR_HELP.get(probe.error_code, ""), "charts": [], "chart_data": [],
               "page_table": None, "increase": None, "flagged": [], "load_errors": [], "facts": {},
               "round_trips": None}
    if probe.status != "done" or not probe.result:
        return context
    charts = charts_for(probe)
    loads = probe.result.get("loads") or []
    context.update(charts=charts, chart_data=[{k: v for k, v in c.items() if k != "table"} for c in charts],
                   page_table=page_table(probe), increase=increase_table(probe),
                   flagged=[load for load in loads if load.get("no_connect_phase")],
                   load_errors=[load for load in loads if not load.get("ok", True)], facts=page_facts(loads),
                   round_trips=round_trips(probe))
    return context


RTT_PHASES = (("connect", "TCP connect"), ("tls", "TLS handshake"), ("ttfb", "Request → first byte"))


def round_trips(probe) -> dict | None:
    """The path's RTT (the probe's own TCP connects) and the network phases' medians as RTT multiples.
    Chromium's connect phase reads up to ~0.2 RTT short on cold loads (it opens the socket before the
    request's timing origin), which the note says; None for probes made before the RTT was measured."""
    measured = (probe.result or {}).get("rtt")
    if measured is None:
        return None
    rtt, summary = measured.get("rtt_ms"), summary_of(probe)
    rows = [[column_label(variant, mode), *(with_round_trips(median(summary, variant, mode, key), rtt)
                                            for key, _ in RTT_PHASES)]
            for variant, mode in columns_present(probe)]
    note = rtt_note(rtt) + (" Chromium opens a cold load's socket a few ms before its timing starts, so its"
                            " TCP connect can read under 1 RTT." if rtt is not None else f" ({measured.get('error')})")
    return {"rtt_ms": rtt, "note": note, "header": ["variant", *(f"{label} (median)" for _, label in RTT_PHASES)],
            "rows": rows}


def csv_tables(probe) -> dict[str, tuple[list, list]]:
    if probe.status != "done" or not probe.result:
        return {}
    tables = {c["id"]: (c["table"]["header"], c["table"]["rows"]) for c in charts_for(probe)}
    for table in (page_table(probe), increase_table(probe), loads_table(probe)):
        tables[table["id"]] = (table["header"], table["rows"])
    return tables


# --- reading the summary ------------------------------------------------------------------

def summary_of(probe) -> dict:
    """Per "variant_mode" key, per metric: {"median", "min", "max", "p25", "p75"}."""
    return (probe.summary or {}).get("summary") or (probe.result or {}).get("summary") or {}


def median(summary: dict, variant: str, mode: str, metric: str):
    stats = (summary.get(f"{variant}_{mode}") or {}).get(metric)
    if stats is None:
        stats = ((summary.get(f"{variant}_{mode}") or {}).get("timings_ms") or {}).get(metric)
    if isinstance(stats, dict):
        stats = stats.get("median")
    return round(stats, 2) if isinstance(stats, float) else stats


def columns_present(probe) -> list[tuple[str, str]]:
    summary = summary_of(probe)
    return [(v, m) for v, m in COLUMNS if f"{v}_{m}" in summary]


# --- charts -------------------------------------------------------------------------------

def charts_for(probe) -> list[dict]:
    charts = [phases_chart(probe)]
    change = change_chart(probe)
    if change:
        charts.append(change)
    waterfall = waterfall_chart(probe)
    if waterfall:
        charts.append(waterfall)
    return charts


def phases_chart(probe) -> dict:
    """Medians of each phase stacked: the network phases, then DOM work up to DOMContentLoaded,
    then up to the load event (both as the remainder, so a bar is as tall as the load time)."""
    summary, columns = summary_of(probe), columns_present(probe)
    rows = []
    for variant, mode in columns:
        network = [median(summary, variant, mode, key) for key, _ in NETWORK_PHASES]
        dcl = median(summary, variant, mode, "dom_content_loaded")
        load = median(summary, variant, mode, "load")
        elapsed = sum(v for v in network if v)
        dom = round(max(0.0, dcl - elapsed), 2) if dcl is not None else None
        to_load = round(max(0.0, load - max(dcl or 0, elapsed)), 2) if load is not None else None
        rows.append([column_label(variant, mode), *network, dom, to_load, dcl, load])
    names = [label for _, label in NETWORK_PHASES] + ["DOM (to DOMContentLoaded)", "To the load event"]
    datasets = [{"label": name, "data": [row[i + 1] for row in rows]} for i, name in enumerate(names)]
    return chart("phases", "Page load phases, median of the runs (ms)", "bar", "variant", "ms",
                 [row[0] for row in rows], datasets,
                 ["variant", *(f"{n} ms" for n in names), "DOMContentLoaded ms", "load ms"], rows, stacked=True)


CHANGE_METRICS = ("connect", "tls", "ttfb", "dom_content_loaded", "load")


def change_words(change: dict) -> str:
    if change["verdict"] == stats.SINGLE:
        return "one run: no interval (drift between runs cannot be told from one)"
    return stats.change_words(change)


def change_chart(probe) -> dict | None:
    """HTTPS against HTTP per timing metric, cold and warm: the change of the medians of the loads, runs
    paired, with its 95 % interval (tlsaudit.domain.compare; negative: HTTPS faster), beside the two
    medians it compares."""
    increase, summary = increase_of(probe), summary_of(probe)
    modes = [mode for mode in ("cold", "warm") if increase.get(mode)]
    if not modes:
        return None
    labels = [m for m in CHANGE_METRICS if any(m in increase[mode] for mode in modes)]
    datasets, rows = [], []
    for mode in modes:
        changes = [increase[mode].get(metric) for metric in labels]
        datasets.append({"label": f"{mode} loads", "data": [pct(c["pct"]) if c else None for c in changes],
                         "intervals": [[pct(c["low_pct"]), pct(c["high_pct"])] if c and c["low_pct"] is not None
                                       else None for c in changes]})
        for metric, change in zip(labels, changes):
            if change:
                rows.append([mode, metric.replace("_", " "), compared(change, "base_median", summary, "http", mode,
                                                                      metric),
                             compared(change, "other_median", summary, "https", mode, metric), pct(change["pct"]),
                             pct(change["low_pct"]),
                             pct(change["high_pct"]), change_words(change), change["n"]])
    return chart("change", "HTTPS vs HTTP per phase, with 95 % intervals over the loads (negative: HTTPS faster)",
                 "bar", "phase", "HTTPS vs HTTP %", [m.replace("_", " ") for m in labels], datasets,
                 ["loads", "metric", "HTTP median ms", "HTTPS median ms", "HTTPS vs HTTP %", "95 % low", "95 % high",
                  "verdict", "runs paired"], rows)


def compared(change: dict, key: str, summary: dict, variant: str, mode: str, metric: str):
    """The median a change compared (probes stored before it kept them: the variant's median)."""
    value = change.get(key)
    return round(value, 2) if value is not None else median(summary, variant, mode, metric)


def latest_https_cold(loads: list[dict]) -> dict | None:
    candidates = [load for load in loads if load.get("variant") == "https" and load.get("mode") == "cold"
                  and load.get("ok", True) and load.get("waterfall")]
    return candidates[-1] if candidates else None


def waterfall_chart(probe) -> dict | None:
    """Each request of the latest HTTPS cold load as a floating bar from its start to its end."""
    load = latest_https_cold((probe.result or {}).get("loads") or [])
    if load is None:
        return None
    entries = sorted(load["waterfall"], key=lambda e: (e.get("start_ms") or 0))
    labels = [short_url(e.get("url", "")) for e in entries]
    data = [[round(e.get("start_ms") or 0, 2), round(e.get("end_ms") or e.get("start_ms") or 0, 2)] for e in entries]
    rows = [[e.get("url"), e.get("type"), e.get("status"), span[0], span[1], round(span[1] - span[0], 2),
             e.get("bytes"), bool(e.get("from_cache")), e.get("protocol")] for e, span in zip(entries, data)]
    title = f"Requests of the latest HTTPS cold load (run {load.get('run', 0) + 1})"
    return {**chart("waterfall", title, "waterfall", "ms since navigation start", "request", labels,
                 [{"label": "request", "data": data}],
                 ["url", "type", "status", "start ms", "end ms", "duration ms", "bytes", "from cache", "protocol"],
                 rows), "height": 60 + 22 * len(rows)}


def short_url(url: str) -> str:
    tail = url.split("://", 1)[-1]
    path = tail[tail.find("/"):] if "/" in tail else "/"
    return path if len(path) <= 48 else path[:22] + "…" + path[-22:]


# --- tables -------------------------------------------------------------------------------

def page_table(probe) -> dict:
    """Requests, bytes, cache hits, 304s and failures per variant x mode (medians), and the protocol."""
    summary, loads = summary_of(probe), (probe.result or {}).get("loads") or []
    rows = []
    for variant, mode in columns_present(probe):
        protocols = Counter(load.get("protocol") for load in loads
                            if load.get("variant") == variant and load.get("mode") == mode and load.get("protocol"))
        rows.append([column_label(variant, mode), *(median(summary, variant, mode, key) for key, _ in PAGE_METRICS),
                     median(summary, variant, mode, "load"), ", ".join(p for p, _ in protocols.most_common())])
    return {"id": "requests", "title": "Requests and bytes (median of the runs)",
            "header": ["variant", *(label for _, label in PAGE_METRICS), "load ms", "protocol"], "rows": rows}


def increase_table(probe) -> dict:
    """HTTPS over HTTP per metric, cold and warm: the seed's Table VII."""
    increase = increase_pct_of(probe)
    rows = [[mode, *(pct(increase.get(mode, {}).get(metric)) for metric in INCREASE_METRICS)]
            for mode in ("cold", "warm") if increase.get(mode)]
    return {"id": "increase", "title": "Increase % of HTTPS over HTTP",
            "header": ["loads", *(f"{m.replace('_', ' ')} %" for m in INCREASE_METRICS)], "rows": rows}


def pct(value):
    return round(value, 1) if isinstance(value, (int, float)) else None


def loads_table(probe) -> dict:
    """Every load, as it ran: the raw samples behind the medians."""
    rows = []
    for load in (probe.result or {}).get("loads") or []:
        timings = load.get("timings_ms") or {}
        rows.append([load.get("variant"), load.get("mode"), (load.get("run") or 0) + 1, load.get("ok"),
                     load.get("error") or "", load.get("protocol"), load.get("requests"), load.get("bytes"),
                     load.get("from_cache"), load.get("not_modified"), load.get("failed"),
                     *(timings.get(k) for k in ("dns", "connect", "tls", "ttfb", "download", "dom_content_loaded",
                                                 "load")),
                     bool(load.get("no_connect_phase"))])
    return {"id": "loads", "title": "Every load",
            "header": ["variant", "mode", "run", "ok", "error", "protocol", "requests", "bytes", "from cache",
                       "304s", "failed", "dns ms", "connect ms", "tls ms", "ttfb ms", "download ms",
                       "DOMContentLoaded ms", "load ms", "no connect phase"], "rows": rows}


def page_facts(loads: list[dict]) -> dict:
    """What the HTTPS document was served with, where http:// redirected to, mixed content."""
    https = next((load for load in loads if load.get("variant") == "https" and load.get("ok", True)), None)
    http = next((load for load in loads if load.get("variant") == "http" and load.get("ok", True)), None)
    mixed = sorted({url for load in loads for url in load.get("mixed_content") or []})
    chain = (http or {}).get("redirect_chain") or []
    # The chain starts with the URL asked for: one entry is a page served where it was asked, not a redirect.
    return {"tls": (https or {}).get("tls"), "protocol": (https or {}).get("protocol"),
            "http_redirects": chain if len(chain) > 1 else [], "mixed_content": mixed}


def chart(chart_id, title, kind, x_title, y_title, labels, datasets, header, rows, stacked=False) -> dict:
    return {"id": chart_id, "title": title, "type": kind, "x_title": x_title, "y_title": y_title,
            "labels": [str(label) for label in labels], "datasets": datasets, "stacked": stacked, "warnings": [],
            "table": {"header": header, "rows": rows}}
