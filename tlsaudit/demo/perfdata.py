"""Performance runs and browser probes for demo sites, in exactly the shapes the workers store.

Latencies are drawn from plausible distributions, then go through the real code paths: steps
come from `loadtests.plans`, agents' results are `LoadResult` dicts with HdrHistograms that
`workers.load.merge.merge_results` merges and `domain.abstats.ab_report` reports on, handshake
cells are summarised by the handshake engine's own `summarise`, probe summaries by
`domain.probe_stats`. The engines are imported inside functions (the web process never loads them).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from tlsaudit.domain.abstats import ab_report
from tlsaudit.loadtests import plans
from tlsaudit.loadtests.summaries import summary_for
from tlsaudit.probes.services import summarise

SWEEP_PARAMS = {"levels": [1, 20, 40], "requests": 500, "modes": ["new", "keepalive"], "path": "/", "repeats": 3}
LOAD_PARAMS = {"scheme": "https", "requests": 200, "concurrency": 10, "keepalive": False, "path": "/",
               "timeout_s": 10.0, "repeats": 3}
HANDSHAKE_PARAMS = {"versions": ["1.2", "1.3"], "agents_levels": [10, 25], "per_agent": 30, "resume": True,
                    "suites": [], "repeats": 3}
RTT_US = 20_000   # the demo site is 20 ms away: round trips, not CPU, make its times
HANDSHAKE_SUITES = {"1.2": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"], "1.3": ["TLS_AES_128_GCM_SHA256"]}
SERVER = "nginx/1.22.1"
PAGE_BYTES = 18_432
AGENTS = 2
EXTENSIONS = {"stylesheet": "css", "script": "js", "font": "woff2"}


def perf_run_fields(rng: random.Random, kind: str, host: str, ports: dict[str, int], ip: str,
                    started: datetime) -> dict:
    """The PerfRun columns of a finished run of `kind` (params, progress, results, summary, times)."""
    if kind == "handshakes":
        params, steps = HANDSHAKE_PARAMS, plans.handshake_steps(HANDSHAKE_PARAMS, HANDSHAKE_SUITES)
        results = [handshake_entry(rng, i, step, host, ports["https"], ip) for i, step in enumerate(steps)]
    else:
        params = SWEEP_PARAMS if kind == "sweep" else LOAD_PARAMS
        steps = (plans.sweep_steps(params, ports) if kind == "sweep" else plans.load_steps(params, ports))
        results = [load_entry(rng, i, step, host, ip) for i, step in enumerate(steps)]
    summary = summary_for(kind, results)
    duration = sum(entry_seconds(e) for e in results) + len(steps) * 0.4
    work = sum(step["work"] for step in steps)
    return {"kind": kind, "params": params, "status": "done", "host": host, "ip": ip,
            "progress": {"steps": [{**s, "status": "done"} for s in steps], "current": len(steps) - 1},
            "work_done": work, "work_total": work, "results": results, "summary": summary,
            "created_at": started - timedelta(seconds=2), "started_at": started,
            "finished_at": started + timedelta(seconds=duration),
            "deadline_at": started + timedelta(seconds=600)}


def entry_seconds(entry: dict) -> float:
    result = entry["result"]
    return result.get("time_taken_s") or result.get("wall_s") or 0.0


# --- ab-style load and sweeps -----------------------------------------------------------------

def load_entry(rng: random.Random, index: int, step: dict, host: str, ip: str) -> dict:
    """One stored step, as workers.load.steps.merged_entry writes it."""
    # Lazy: the load engine stays out of tlsaudit/ at module level (tests/test_layering.py).
    from workers.load import merge

    shares = plans.agent_shares(step, AGENTS)
    merged = merge.merge_results([agent_result(rng, step, share, host, ip) for share in shares])
    report = ab_report(merged)
    merged.pop("samples", None)
    return {"step": index, "label": step["label"], "scheme": step["scheme"], "level": step["level"],
            "mode": step["mode"], "repeat": step["repeat"], "warmup": step["warmup"], "result": merged,
            "report": report}


def agent_result(rng: random.Random, step: dict, share: dict, host: str, ip: str) -> dict:
    """One agent's LoadResult dict: per-request phase times (µs) in histograms and exact samples."""
    # Lazy: the load engine stays out of tlsaudit/ at module level (tests/test_layering.py).
    from workers.load import spec as engine

    https, keepalive = step["scheme"] == "https", step["mode"] == "keepalive"
    n, c = share["requests"], share["concurrency"]
    samples = {phase: [] for phase in engine.PHASES}
    queueing = 1 + step["level"] / 25  # more concurrency, longer waits
    for i in range(n):
        fresh = not keepalive or i < c
        connect = int(rng.gauss(RTT_US, RTT_US / 20)) if fresh else 0               # 1 round trip
        tls = int(RTT_US + rng.lognormvariate(7.9, 0.25)) if https and fresh else 0  # 1 RTT + ~2.7 ms
        waiting = int(RTT_US + rng.lognormvariate(6.4, 0.35) * queueing)           # 1 RTT + ~0.6 ms x load
        processing = int(rng.lognormvariate(4.6, 0.3))
        for phase, value in zip(engine.PHASES, (connect + tls, tls, waiting, processing,
                                                connect + tls + waiting + processing, connect)):
            if phase != "tcp" or fresh:  # TCP connect: once per new connection, as the engine records it
                samples[phase].append(max(value, 1))
    histograms = {phase: encoded_histogram(samples[phase]) for phase in engine.PHASES}
    total_s = sum(samples["total"]) / 1e6 / c
    counters = engine.LoadCounters(complete=n, keepalive_requests=n - c if keepalive else 0,
                                   connections_opened=c if keepalive else n, total_bytes=n * (PAGE_BYTES + 238),
                                   html_bytes=n * PAGE_BYTES)
    spec = engine.LoadSpec(scheme=step["scheme"], host=host, port=step["port"], path=step["path"], ip=ip,
                           requests=n, concurrency=c, keepalive=keepalive, timeout_s=10.0)
    return engine.LoadResult(spec=spec, started_at=1.7e9, time_taken_s=round(total_s, 6), counters=counters,
                             histograms=histograms, samples=samples, server_software=SERVER,
                             document_length=PAGE_BYTES, protocol="TLSv1.3" if https else "",
                             cipher="TLS_AES_256_GCM_SHA384" if https else "", status_codes={"200": n}).to_dict()


# --- handshake timing ---------------------------------------------------------------------------

def handshake_entry(rng: random.Random, index: int, step: dict, host: str, port: int, ip: str) -> dict:
    # Lazy: the load engine stays out of tlsaudit/ at module level (tests/test_layering.py).
    from workers.load import handshake

    shares = plans.agent_shares(step, AGENTS)
    results = [handshake_cell(rng, step, share["agents"], host, port, ip) for share in shares]
    return {"step": index, "label": step["label"],
            "cell": {k: step[k] for k in ("version", "suite", "agents", "per_agent", "resume", "repeat", "warmup")},
            "result": handshake.merge_handshake_results(results)}


def handshake_cell(rng: random.Random, step: dict, agents: int, host: str, port: int, ip: str) -> dict:
    """One agent's cell, as workers.load.handshake.collect returns it, before its summary (the merge
    summarises the merged cell; summarising each agent too would double the slow histogram walks)."""
    resumed = step["resume"]
    base = {"1.2": 7.75, "1.3": 7.55}[step["version"]] - (0.9 if resumed else 0)
    count = agents * step["per_agent"]
    contention = 1 + agents / 40
    round_trips = {"1.2": 2, "1.3": 1}[step["version"]] if not resumed else 1
    tls = [int(round_trips * RTT_US + rng.lognormvariate(base, 0.22) * contention) for _ in range(count)]
    tcp = [int(rng.gauss(150, 25)) for _ in range(count)]
    result = {"host": host, "port": port, "ip": ip, "version": step["version"], "requested_suite": step["suite"],
              "suite": step["suite"], "mode": "resumed" if resumed else "full",
              "resumption": "supported" if resumed else None, "resumption_note": None,
              "agents": agents, "per_agent": step["per_agent"], "failures": {}, "flagged": {},
              "histograms": {"tls": encoded_histogram(tls), "tcp": encoded_histogram([max(v, 1) for v in tcp])},
              "wall_s": round(sum(tls) / 1e6 / agents * 1.15, 6), "wall_started_at": 1.7e9, "cancelled": False,
              "method": "ctypes"}
    return result


def encoded_histogram(values: list[int]) -> str:
    """`values` (µs) in an HDR histogram, encoded as the engine stores it."""
    # Lazy: the load engine stays out of tlsaudit/ at module level (tests/test_layering.py).
    from workers.load import merge

    histogram = merge.new_histogram()
    merge.record_values(histogram, values)
    return merge.encode_histogram(histogram)


# --- browser probes -------------------------------------------------------------------------------

def probe_fields(rng: random.Random, host: str, ip: str, started: datetime, runs: int = 5) -> dict:
    """The Probe columns of a finished probe: the engine's JSON and the summary the service derives."""
    loads = [page_load(rng, host, variant, mode, run)
             for run in range(runs) for mode in ("cold", "warm") for variant in ("https", "http")]
    duration = round(sum(load["timings_ms"]["load"] for load in loads) / 1000 + 6.5, 2)
    result = {"spec": {"host": host, "https_port": 443, "http_port": 80, "path": "/", "ip": ip, "ca_pem": None,
                       "runs": runs, "timeout_s": 30.0, "variants": ["https", "http"]},
              "loads": loads, "browser": {"version": "HeadlessChrome/131.0.6778.139"},
              "duration_s": duration, "error": None}
    summary = summarise(result)
    result.update(summary)
    return {"status": "done", "params": {"path": "/", "runs": runs, "variants": ["https", "http"]},
            "loads_done": len(loads), "loads_total": len(loads), "host": host, "ip": ip, "duration_s": duration,
            "result": result, "summary": summary, "created_at": started - timedelta(seconds=1),
            "started_at": started, "finished_at": started + timedelta(seconds=duration)}


def page_load(rng: random.Random, host: str, variant: str, mode: str, run: int) -> dict:
    cold, https = mode == "cold", variant == "https"
    dns = round(rng.uniform(8, 30), 1) if cold else 0
    connect = round(rng.uniform(15, 40), 1) if cold else 0
    tls = round(rng.uniform(25, 60), 1) if cold and https else 0
    ttfb = round(rng.lognormvariate(4.3, 0.25), 1)
    download = round(rng.uniform(2, 12), 1)
    dom = round(dns + connect + tls + ttfb + download + rng.uniform(80, 160), 1)
    requests = 24
    cached = 0 if cold else 19
    url = f"{variant}://{host}/"
    return {"variant": variant, "mode": mode, "run": run, "ok": True, "error": "", "url": url, "final_url": url,
            "redirect_chain": [],
            "timings_ms": {"redirect": 0, "dns": dns, "connect": connect, "tls": tls, "ttfb": ttfb,
                           "download": download, "dom_interactive": dom, "dom_content_loaded": round(dom + 6, 1),
                           "load": round(dom + rng.uniform(120, 260), 1)},
            "no_connect_phase": False, "protocol": "h2" if https else "http/1.1",
            "tls": {"protocol": "TLS 1.3", "cipher": "AES_128_GCM"} if https else None,
            "requests": requests, "bytes": 412_000 if cold else 9_800, "from_cache": cached,
            "not_modified": 0 if cold else 1, "statuses": {"200": requests} if cold else {"200": requests - 1, "304": 1},
            "failed": 0, "mixed_content": [],
            "waterfall": waterfall(rng, url, requests, cold)}


def waterfall(rng: random.Random, url: str, requests: int, cold: bool) -> list[dict]:
    kinds = ["document"] + ["stylesheet"] * 3 + ["script"] * 8 + ["image"] * (requests - 14) + ["font"] * 2
    rows, start = [], 0.0
    for i, kind in enumerate(kinds):
        span = rng.uniform(5, 60) if cold else rng.uniform(0.5, 4)
        name = url if i == 0 else f"{url}static/{kind}-{i}.{EXTENSIONS.get(kind, 'webp')}"
        rows.append({"url": name, "type": kind, "status": 200, "start_ms": round(start, 1),
                     "end_ms": round(start + span, 1), "bytes": rng.randint(800, 60_000) if cold else 0,
                     "from_cache": not cold and i > 0, "protocol": "h2" if url.startswith("https") else "http/1.1"})
        start += rng.uniform(0.5, 8)
    return rows

