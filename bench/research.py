"""The research, reproduced (issue #15, item 7): the studies' designs on loopback and at 50 ms RTT, our
CLI beside ab and h2load on the same links, every comparison with our statistics.

    .venv/bin/python bench/research.py [--quick] [--json OUT] [--repeats 3] [--rtt 50] [--parts sweep,handshakes]

1. The sweep (the ab studies): HTTP vs HTTPS at concurrency 1/20/40/60/80/100, a new connection per
   request as the studies ran ab, on loopback (0 ms) and behind the latency lab (tests/support/wan.py)
   at 50 ms RTT; full mode adds keep-alive (`-k`) at 50 ms. Per level, both tools on the same URLs
   (nginx lab `load_no_resumption`, /health; HTTPS negotiates TLS 1.3, every handshake full):
   - ours: `manage.py overhead localhost --ip HOST --levels C -n N -t T --repeats R --json` as a user
     runs it (its warm-up, R rounds with HTTP/HTTPS back to back and the order alternating, medians,
     95 % intervals, signed overhead from every request's time);
   - ab: `ab -q -t T -n N -c C URL`, the same design done here: a discarded warm-up pair, R rounds with
     the order alternating, summarised by the same domain functions (tlsaudit.domain.abstats).
   The tools' order alternates by level. N per level keeps every run near or above the 1 s / 100
   request floor: at 50 ms N = max(100, 20 C) (quick: 10 C; keep-alive 40 C), so a connection makes 20
   (10, 40) requests in turn; on loopback HTTP does 20-40k requests/s and HTTPS 1k, so N = 50,000 with every run
   stopped after T = 2 s (`-t`, both tools): the overhead compares time per completed request.
2. The handshakes (the agents studies): TLS 1.2 vs 1.3 full handshakes with 10/25/50 agents at 50 ms RTT:
   `manage.py handshakes localhost:PORT --ip HOST --versions 1.2,1.3 --suites <AES-128-GCM of each>
   --agents A --per-agent K --repeats R --json` (versions interleaved, paired by round), and
   `h2load --h1 -c A -n A*K -H 'Connection: close'` (one request per connection, so one full handshake
   per request): h2load 1.52 cannot pin a TLS version and resumes TLS 1.2 sessions when the server lets it, so
   its TLS 1.2 runs go to `load_tls12_no_resumption` (TLS 1.2 only, no cache, no tickets; the access log
   is checked: every handshake full) and its TLS 1.3 runs to `load_no_resumption`. Warm-up pair
   discarded, R rounds with the versions alternating, paired by round (tlsaudit.domain.stats.paired_change).
   h2load reports "time for connect" (TCP + TLS, one sample per client), so ours is also shown as its
   TCP p50 + TLS p50.

Round trips: the RTT is measured (TCP connects, tlsaudit.domain.round_trips) and every 50 ms time is
also shown as a multiple of it. Figures: the signed overheads and TLS 1.3 advantages with their 95 %
intervals in the notes (the figure's value is the estimate); the tables are the script's notes.
Nothing is pinned: the machine is shared, and the load average is recorded with each figure and table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.handshake_vs_h2load import parse_h2load  # noqa: E402
from tlsaudit.domain import stats  # noqa: E402
from tlsaudit.domain.abstats import run_figures, sweep_summary  # noqa: E402
from tlsaudit.domain.round_trips import estimate_rtt_ms, round_trips  # noqa: E402

BENCH = {"title": "The research reproduced: HTTP vs HTTPS sweep, TLS 1.2 vs 1.3 handshakes", "order": 55,
         "quick_timeout_s": 420, "full_timeout_s": 5400}
SERVER, SERVER_TLS12 = "load_no_resumption", "load_tls12_no_resumption"
PATH = "/health"
SCHEMES = ("http", "https")
VERSIONS = ("1.2", "1.3")
SUITES = {"1.2": "ECDHE-RSA-AES128-GCM-SHA256", "1.3": "TLS_AES_128_GCM_SHA256"}   # the same cipher, both versions
# per_level: requests per connection at 50 ms, n = max(100, per_level x c). A new connection per request
# costs 2 RTT over HTTP (3-4 over HTTPS), a keep-alive request 1: 20 (quick 10) and 40 make an HTTP run
# last 2 s (quick 1 s, the floor: it cannot run faster than its round trips).
FULL = {"levels": (1, 20, 40, 60, 80, 100), "lan_levels": (1, 20, 40, 60, 80, 100), "keepalive": True,
        "per_level": 20, "keepalive_per_level": 40, "agents": (10, 25, 50), "per_agent": 20}
QUICK = {"levels": (20, 100), "lan_levels": (20,), "keepalive": False, "per_level": 10, "agents": (10, 50),
         "per_agent": 10}
LAN_REQUESTS, LAN_TIME_LIMIT_S = 50_000, 2      # loopback: every run stops after 2 s (ab -t takes whole seconds)
WAN_TIME_LIMIT_S = 60                          # at 50 ms only a safety net: N is sized to finish well before
WARMUP_REQUESTS, WARMUP_CONCURRENCY = 50, 10    # as the CLI's warm-up (tlsaudit/loadtests/plans.py)
WARMUP_PER_AGENT, WARMUP_AGENTS = 5, 2          # as the handshake matrix's warm-up
RTT_SAMPLES = 20
CLI_ENV = {**os.environ, "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1", "PYTHONWARNINGS": "ignore",
           "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}   # neither command touches the database
NAGLE_NOTE = (
    "ab and TLS 1.3 (Nagle): ab does not set TCP_NODELAY. After a TLS 1.3 handshake the client's Finished "
    "is the last thing it sent and the server sends nothing back (no tickets here), so when ab writes its "
    "request right after, Nagle's algorithm holds the small segment until the Finished is acknowledged: "
    "one more round trip. ab's 'Waiting' is 2 RTT instead of 1 and a new HTTPS request costs 4 RTT instead "
    "of 3 (with TLS 1.2 the server's Finished acknowledges the client's flight, so ab does not stall and "
    "also needs 4: 1 TCP + 2 TLS + 1). Our engine and h2load set TCP_NODELAY. So at 50 ms ab's HTTPS "
    "overhead is about +100 % where ours is about +50 %, and ab shows no TLS 1.3 gain on a new connection: "
    "the stall is ab's, not TLS's. On loopback an RTT is ~0.05 ms, so the stall is invisible there.")


# --- parsing the tools' output (pure) --------------------------------------------------------------

AB_FIELDS = {"time_taken_s": r"Time taken for tests:\s+([\d.]+) seconds",
             "complete": r"Complete requests:\s+(\d+)", "failed": r"Failed requests:\s+(\d+)"}
AB_OPTIONAL = {"non_2xx": r"Non-2xx responses:\s+(\d+)", "keepalive_requests": r"Keep-Alive requests:\s+(\d+)"}
AB_PHASES = ("connect", "processing", "waiting", "total")


def parse_ab(output: str) -> dict:
    """ab's counts, time taken, protocol and the medians (ms) of its Connection Times; ValueError if
    ab printed no report."""
    values = {}
    for key, pattern in AB_FIELDS.items():
        match = re.search(pattern, output)
        if not match:
            raise ValueError(f"ab printed no {key.replace('_', ' ')}:\n{output[-1500:]}")
        values[key] = float(match.group(1)) if key == "time_taken_s" else int(match.group(1))
    for key, pattern in AB_OPTIONAL.items():
        match = re.search(pattern, output)
        values[key] = int(match.group(1)) if match else 0
    protocol = re.search(r"SSL/TLS Protocol:\s+([^,\s]+),([^,\s]+)", output)
    values["protocol"], values["cipher"] = protocol.groups() if protocol else (None, None)
    values["median_ms"] = {}
    for phase in AB_PHASES:
        row = re.search(rf"^{phase.capitalize()}:\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)", output, re.M)
        values["median_ms"][phase] = int(row.group(4)) if row else None
    return values


H2LOAD_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_h2load_connect(output: str) -> dict:
    """h2load's "time for connect" row (min, max, mean, sd) in ms, its protocol and cipher, plus
    parse_h2load's counts and wall time."""
    result = parse_h2load(output)
    row = re.search(r"time for connect:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)"
                    r"\s+([\d.]+)(us|ms|s)", output)
    if not row:
        raise ValueError(f"h2load printed no 'time for connect':\n{output[-1500:]}")
    numbers = [float(row.group(i)) * H2LOAD_UNITS[row.group(i + 1)] for i in (1, 3, 5, 7)]
    result["connect_ms"] = dict(zip(("min", "max", "mean", "sd"), numbers))
    protocol, cipher = (re.search(rf"^{label}: (\S+)", output, re.M) for label in ("TLS Protocol", "Cipher"))
    result["protocol"] = protocol.group(1) if protocol else None
    result["cipher"] = cipher.group(1) if cipher else None
    return result


def ab_run_report(parsed: dict, planned: int, wall_s: float) -> dict:
    """One ab run as the fields tlsaudit.domain.abstats.run_figures reads: the process's wall time
    (end to end, like ours), requests done and planned, the median total time as the p50."""
    return {"wall_s": wall_s, "time_taken_s": parsed["time_taken_s"], "complete_requests": parsed["complete"],
            "failed_requests": parsed["failed"], "requests_planned": planned, "cancelled": False,
            "latency_ms": {"p50": parsed["median_ms"]["total"]}}


def ours_run_report(run: dict, planned: int) -> dict:
    """One run of `manage.py overhead --json` ("runs") as the fields run_figures reads."""
    return {"wall_s": run["wall_s"], "time_taken_s": run["time_taken_s"], "complete_requests": run["complete"],
            "failed_requests": run["failed"], "requests_planned": planned, "cancelled": False,
            "latency_ms": run["latency_ms"]}


def summarise_runs(runs: list[dict], mode: str) -> dict:
    """A tool's runs of every level ({"level", "scheme", "repeat", "report"}), summarised exactly as the
    CLI and the dashboard summarise theirs (tlsaudit.domain.abstats.sweep_summary): {"levels", "average"}."""
    figures = [{"mode": mode, "level": r["level"], "scheme": r["scheme"], "repeat": r["repeat"],
                **run_figures(r["report"])} for r in runs]
    return sweep_summary(figures)[mode]


def h2load_cell(runs: list[dict]) -> dict:
    """One (version, agents) cell of h2load over its repeats: median [95 %] of the runs' mean connect
    time and of their rates (handshakes over h2load's own wall time), and why a run has nothing to compare."""
    short = [reason for r in runs if (reason := stats.too_short(r["wall_s"], r["count"]))]
    return {"connect_ms": stats.median_interval([r["connect_ms"]["mean"] for r in runs]),
            "per_s": stats.median_interval([r["count"] / r["wall_s"] for r in runs if r["wall_s"]]),
            "too_short": f"{len(short)} of {len(runs)} runs: {short[0]}" if short else None}


def paired_versions(by_round: dict[str, dict[int, float]], too_short: bool) -> dict:
    """(TLS 1.3 - TLS 1.2) / TLS 1.2 over the rounds both versions ran; negative = TLS 1.3 faster."""
    rounds = sorted(set(by_round["1.2"]) & set(by_round["1.3"]))
    result = stats.paired_change([(by_round["1.2"][r], by_round["1.3"][r]) for r in rounds])
    return stats.inconclusive(result) if too_short and rounds else result


def ours_connect_rounds(cells: list[dict], agents: int) -> dict[str, dict[int, float]]:
    """Per version and round: TCP p50 + TLS p50 of our handshakes CLI's cells at `agents` (what h2load's
    "time for connect" holds: a TCP connect and a TLS handshake)."""
    rounds: dict[str, dict[int, float]] = {v: {} for v in VERSIONS}
    for cell in cells:
        if cell.get("warmup") or cell.get("agents") != agents or not cell.get("count"):
            continue
        if cell.get("tcp_p50_ms") is not None and cell.get("p50_ms") is not None and cell.get("mode", "full") == "full":
            rounds[cell["version"]][int(cell.get("repeat") or 0)] = cell["tcp_p50_ms"] + cell["p50_ms"]
    return rounds


# --- rendering (pure) ------------------------------------------------------------------------------

def number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def estimate_text(estimate: dict, digits: int) -> str:
    """"12.3 [11.9, 12.8]": the median and its 95 % interval (just the median for a single run)."""
    if estimate["median"] is None:
        return "–"
    if estimate["low"] is None:
        return number(estimate["median"], digits)
    low, high = number(estimate["low"], digits), number(estimate["high"], digits)
    return f"{number(estimate['median'], digits)} [{low}, {high}]"


def cell_text(cell: dict, key: str, digits: int) -> str:
    return cell["too_short"] if cell.get("too_short") else estimate_text(cell[key], digits)


def with_rtt(ms: float | None, rtt_ms: float | None, whole_ms: bool = False) -> str:
    """"101 ms (2.0 RTT)", "0.62 ms": the RTT multiple only when the RTT is large enough to mean anything;
    `whole_ms` for ab's figures, which it prints in whole milliseconds."""
    if ms is None:
        return "–"
    multiple = round_trips(ms, rtt_ms)
    digits = 0 if whole_ms or abs(ms) >= 100 else 2 if abs(ms) < 10 else 1
    return f"{number(ms, digits)} ms" + ("" if multiple is None else f" ({multiple:.1f} RTT)")


def markdown_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]


SWEEP_HEADER = ("c", "n", "tool", "HTTP time s", "HTTPS time s", "HTTP req/s", "HTTPS req/s",
                "per request (p50) HTTP → HTTPS", "time overhead", "req/s overhead")


def sweep_rows(levels: list[dict], rtt_ms: float | None) -> list[tuple[str, ...]]:
    """One row per (level, tool): `levels` items are {"level", "n", "tool", "row": a sweep_summary level row}."""
    rows = []
    for item in levels:
        row = item["row"]
        http_p50, https_p50 = row["http"]["p50_ms"]["median"], row["https"]["p50_ms"]["median"]
        rows.append((str(item["level"]), f"{item['n']:,}", item["tool"], cell_text(row["http"], "time_s", 2),
                     cell_text(row["https"], "time_s", 2), cell_text(row["http"], "requests_per_second", 0),
                     cell_text(row["https"], "requests_per_second", 0),
                     " → ".join(with_rtt(p50, rtt_ms, whole_ms=item["tool"] == "ab") for p50 in (http_p50, https_p50)),
                     stats.change_text(row["time_taken_overhead"]),
                     stats.change_text(row["requests_per_second_overhead"])))
    return rows


def average_rows(averages: dict[str, dict]) -> list[tuple[str, ...]]:
    return [("avg", "", tool, "", "", "", "", "", stats.change_text(a["time_taken_overhead"]),
             stats.change_text(a["requests_per_second_overhead"])) for tool, a in averages.items()]


def sweep_table(title: str, levels: list[dict], averages: dict[str, dict], rtt_ms: float | None) -> str:
    lines = [title, "", *markdown_table(SWEEP_HEADER, sweep_rows(levels, rtt_ms) + average_rows(averages))]
    return "\n".join(lines)


HANDSHAKE_HEADER = ("agents", "tool: what is timed", "TLS 1.2", "TLS 1.3", "TLS 1.3 vs 1.2", "TLS 1.2 hs/s",
                    "TLS 1.3 hs/s")


def handshake_rows(levels: list[dict], rtt_ms: float | None) -> list[tuple[str, ...]]:
    """`levels` items: {"agents", "tool", "what", "cells": {version: {"ms": estimate, "per_s": estimate,
    "too_short"}}, "change": a stats change}."""
    rows = []
    for item in levels:
        cells = item["cells"]
        rows.append((str(item["agents"]), f"{item['tool']}: {item['what']}",
                     *(time_text(cells[v], rtt_ms) for v in VERSIONS),
                     stats.change_text(item["change"], side="TLS 1.3"),
                     *(("–" if cells[v]["per_s"] is None else cell_text(cells[v], "per_s", 0)) for v in VERSIONS)))
    return rows


def time_text(cell: dict, rtt_ms: float | None) -> str:
    if cell.get("too_short"):
        return cell["too_short"]
    estimate = cell["ms"]
    text = estimate_text(estimate, 1)
    multiple = round_trips(estimate["median"], rtt_ms)
    return text + ("" if multiple is None else f" ms ({multiple:.1f} RTT)")


def handshake_table(title: str, levels: list[dict], rtt_ms: float | None) -> str:
    return "\n".join([title, "", *markdown_table(HANDSHAKE_HEADER, handshake_rows(levels, rtt_ms))])


# --- running the tools -------------------------------------------------------------------------------

def load_now() -> float:
    return round(os.getloadavg()[0], 2)


def measure_rtt_ms(host: str, port: int, samples: int = RTT_SAMPLES) -> float | None:
    """The link's RTT as the product estimates it: the 10th percentile of sequential TCP connects."""
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        socket.create_connection((host, port), timeout=10).close()
        times.append((time.perf_counter() - started) * 1000)
    return estimate_rtt_ms(times)


def manage(*args: str, timeout_s: float) -> dict:
    """A CLI command as a user runs it, with --json; its JSON (a failure ends the benchmark: it did not run)."""
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args, "--json"], cwd=ROOT, env=CLI_ENV,
                          capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-1500:]}\n"
                         f"{done.stderr[-1500:]}")
    return json.loads(done.stdout)


def run_ab(url: str, n: int, c: int, keepalive: bool, time_limit_s: int) -> dict:
    # -r: a receive error counts as a failed request (shown) instead of ending ab's run
    command = ["ab", "-q", "-r", "-t", str(time_limit_s), "-n", str(n), "-c", str(c), *(["-k"] if keepalive else []),
               url]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=time_limit_s + 300)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-800:]}{done.stderr[-800:]}")
    parsed = parse_ab(done.stdout)
    if parsed["failed"] or parsed["non_2xx"]:
        print(f"  !! ab {url}: {parsed['failed']} failed, {parsed['non_2xx']} non-2xx", flush=True)
    return {**parsed, "report": ab_run_report(parsed, n, wall)}


def ab_level(urls: dict[str, str], n: int, c: int, keepalive: bool, repeats: int, time_limit_s: int) -> list[dict]:
    """The CLI's design with ab: a warm-up pair (discarded), then `repeats` rounds, HTTP and HTTPS back
    to back, HTTP first in even rounds and HTTPS first in odd ones."""
    warm_c = min(c, WARMUP_CONCURRENCY)
    for scheme in SCHEMES:
        run_ab(urls[scheme], max(warm_c, min(n, WARMUP_REQUESTS)), warm_c, keepalive, time_limit_s)
    runs = []
    for repeat in range(repeats):
        for scheme in SCHEMES if repeat % 2 == 0 else tuple(reversed(SCHEMES)):
            runs.append({"scheme": scheme, "repeat": repeat, **run_ab(urls[scheme], n, c, keepalive, time_limit_s)})
    return runs


def ours_level(host: str, ports: dict[str, int], n: int, c: int, keepalive: bool, repeats: int,
               time_limit_s: float) -> dict:
    args = ["overhead", "localhost", "--ip", host, "--http-port", str(ports["http"]), "--https-port",
            str(ports["https"]), "--path", PATH, "--levels", str(c), "-n", str(n), "-t", f"{time_limit_s:g}",
            "--repeats", str(repeats), *(["-k"] if keepalive else [])]
    return manage(*args, timeout_s=repeats * 2 * (time_limit_s + 60) + 300)


def sweep(network: dict, mode: str, levels: tuple[int, ...], requests, repeats: int) -> dict:
    """Every level with both tools (their order alternating by level), then each tool's runs summarised
    by the same domain functions; ours' summary must agree with what its CLI printed."""
    keepalive = mode == "keepalive"
    host, ports, limit = network["host"], network["ports"], network["time_limit_s"]
    urls = {scheme: f"{scheme}://{host}:{ports[scheme]}{PATH}" for scheme in SCHEMES}
    runs: dict[str, list[dict]] = {"ours": [], "ab": []}
    printed, loads = {}, {}
    for index, c in enumerate(levels):
        n = requests(c)
        for tool in ("ours", "ab") if index % 2 == 0 else ("ab", "ours"):
            if tool == "ours":
                report = ours_level(host, ports, n, c, keepalive, repeats, limit)
                warn_failures("ours", [r for r in report["runs"] if r["failed"] or r["non_2xx"]], urls)
                printed[c] = report["levels"][0]
                runs["ours"] += [{"level": c, "scheme": r["scheme"], "repeat": r["repeat"],
                                  "report": ours_run_report(r, n)} for r in report["runs"]]
            else:
                runs["ab"] += [{**run, "level": c} for run in ab_level(urls, n, c, keepalive, repeats, limit)]
        loads[c] = load_now()
    summaries = {tool: summarise_runs(tool_runs, mode) for tool, tool_runs in runs.items()}
    check_agrees(summaries["ours"], printed)
    items = [{"level": c, "n": requests(c), "tool": tool, "row": row, "load": loads[c]}
             for c in levels for tool in ("ours", "ab") for row in summaries[tool]["levels"] if row["concurrency"] == c]
    for item in items:
        print(f"  {network['name']} {mode} c={item['level']} {item['tool']}: time overhead "
              f"{stats.change_text(item['row']['time_taken_overhead'])}; load {item['load']}", flush=True)
    failed = {tool: sum(r["report"]["failed_requests"] for r in tool_runs) for tool, tool_runs in runs.items()}
    return {"items": items, "averages": {tool: summaries[tool]["average"] for tool in runs}, "ab_runs": runs["ab"],
            "failed": failed}


def warn_failures(tool: str, runs: list[dict], urls: dict[str, str]) -> None:
    for run in runs:
        print(f"  !! {tool} {urls[run['scheme']]}: {run['failed']} failed, {run['non_2xx']} non-2xx", flush=True)


def check_agrees(summary: dict, printed: dict[int, dict]) -> None:
    """The CLI's own overhead per level and the one recomputed here from its runs must be the same."""
    for row in summary["levels"]:
        for key in ("time_taken_overhead", "requests_per_second_overhead"):
            mine, cli = row[key], printed[row["concurrency"]][key]
            if mine["verdict"] != cli["verdict"] or (mine["pct"] is not None and abs(mine["pct"] - cli["pct"]) > 1e-6):
                raise SystemExit(f"c={row['concurrency']} {key}: the CLI printed {cli}, its runs give {mine}")


def ab_phase_medians(runs: list[dict]) -> dict[tuple[int, str], dict[str, float | None]]:
    """Per (level, scheme), the median over ab's repeats of each Connection Times median (ms)."""
    cells = sorted({(r["level"], r["scheme"]) for r in runs})
    return {(level, scheme): {phase: stats.median([r["median_ms"][phase] for r in runs
                                                   if (r["level"], r["scheme"]) == (level, scheme)
                                                   and r["median_ms"][phase] is not None]) for phase in AB_PHASES}
            for level, scheme in cells}


def h2load_run(url: str, agents: int, per_agent: int, version: str) -> dict:
    suite_option = "--tls13-ciphers" if version == "1.3" else "--ciphers"
    command = ["h2load", "--h1", "-n", str(agents * per_agent), "-c", str(agents), "-H", "Connection: close",
               f"{suite_option}={SUITES[version]}", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    result = parse_h2load_connect(done.stdout)
    expected = f"TLSv{version}"
    if result["failed"] or result["protocol"] != expected or result["cipher"] != SUITES[version]:
        raise SystemExit(f"{' '.join(command)}: {result['failed']} failed, negotiated {result['protocol']} "
                         f"{result['cipher']}, expected {expected} {SUITES[version]}:\n{done.stdout[-1500:]}")
    return result


def h2load_level(urls: dict[str, str], agents: int, per_agent: int, repeats: int) -> dict:
    for version in VERSIONS:   # warm-up pair, discarded
        h2load_run(urls[version], min(agents, WARMUP_AGENTS), WARMUP_PER_AGENT, version)
    runs: dict[str, dict[int, dict]] = {v: {} for v in VERSIONS}
    for repeat in range(repeats):
        for version in VERSIONS if repeat % 2 == 0 else tuple(reversed(VERSIONS)):
            runs[version][repeat] = h2load_run(urls[version], agents, per_agent, version)
    cells = {v: h2load_cell(list(runs[v].values())) for v in VERSIONS}
    connect = {v: {r: run["connect_ms"]["mean"] for r, run in runs[v].items()} for v in VERSIONS}
    short = any(cells[v]["too_short"] for v in VERSIONS)
    return {"agents": agents, "tool": "h2load", "what": "time for connect (TCP + TLS, mean of clients)",
            "cells": {v: {"ms": cells[v]["connect_ms"], "per_s": cells[v]["per_s"], "too_short": cells[v]["too_short"]}
                      for v in VERSIONS},
            "change": paired_versions(connect, short)}


def ours_handshake_level(host: str, port: int, agents: int, per_agent: int, repeats: int) -> list[dict]:
    report = manage("handshakes", f"localhost:{port}", "--ip", host, "--versions", ",".join(VERSIONS),
                    "--suites", ",".join(SUITES[v] for v in VERSIONS), "--agents", str(agents),
                    "--per-agent", str(per_agent), "--repeats", str(repeats), timeout_s=1800)
    summary = {row["version"]: row for row in report["summary"] if row["agents"] == agents and row["mode"] == "full"}
    if set(summary) != set(VERSIONS):
        raise SystemExit(f"handshakes at {agents} agents measured {sorted(summary)}, not both versions: {report}")
    failures = sum(row["failures"] for row in summary.values())
    if failures:
        print(f"  !! ours {agents} agents: {failures} failed handshakes", flush=True)
    [versus] = [row for row in report["tls13_vs_tls12"] if row["family"] == "all" and row["agents"] == agents]
    handshake = {"agents": agents, "tool": "ours", "what": "TLS handshake (p50)",
                 "cells": {v: {"ms": summary[v]["p50_ms"], "per_s": summary[v]["handshakes_per_s"],
                               "too_short": summary[v]["too_short"]} for v in VERSIONS},
                 "change": versus["tls13_vs_tls12"]}
    rounds = ours_connect_rounds(report["cells"], agents)
    connect = {"agents": agents, "tool": "ours", "what": "TCP p50 + TLS p50",
               "cells": {v: {"ms": stats.median_interval(list(rounds[v].values())), "per_s": None,
                             "too_short": summary[v]["too_short"]} for v in VERSIONS},
               "change": paired_versions(rounds, any(summary[v]["too_short"] for v in VERSIONS))}
    return [handshake, connect]


def handshakes(lab, link, agents_levels: tuple[int, ...], per_agent: int, repeats: int) -> list[dict]:
    urls = {"1.2": f"https://{link.host}:{lab.port(SERVER_TLS12)}/", "1.3": f"https://{link.host}:{lab.port(SERVER)}/"}
    before = len(read_log(lab, SERVER_TLS12))
    levels = []
    for index, agents in enumerate(agents_levels):
        for tool in ("ours", "h2load") if index % 2 == 0 else ("h2load", "ours"):
            if tool == "ours":
                found = ours_handshake_level(link.host, lab.port(SERVER), agents, per_agent, repeats)
            else:
                found = [h2load_level(urls, agents, per_agent, repeats)]
            for item in found:
                item["load"] = load_now()
                print(f"  {agents} agents {tool} ({item['what']}): TLS 1.3 vs 1.2 "
                      f"{stats.change_text(item['change'], side='TLS 1.3')}; load {load_now()}", flush=True)
            levels += found
    check_full_handshakes(lab, before)
    return levels


def read_log(lab, name: str) -> list[dict]:
    return lab.read_access_log(name) if lab.access_log(name).exists() else []


def check_full_handshakes(lab, before: int) -> None:
    """h2load's TLS 1.2 server logged every handshake as full ('.'), none resumed ('r')."""
    rows = read_log(lab, SERVER_TLS12)[before:]
    resumed = sum(1 for row in rows if row["ssl_session_reused"] != ".")
    if not rows or resumed:
        raise SystemExit(f"{SERVER_TLS12}: {resumed} of {len(rows)} TLS 1.2 handshakes were not full")


# --- the run ------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--repeats", type=int, default=3, help="rounds per cell after the warm-up (default 3)")
    parser.add_argument("--rtt", type=float, default=50.0, help="the emulated link's RTT in ms (default 50)")
    parser.add_argument("--parts", default="sweep,handshakes", help="what to run (default %(default)s)")
    args = parser.parse_args()
    args.parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if args.repeats < 2 or not args.parts or args.parts - {"sweep", "handshakes"}:
        parser.error("--repeats must be at least 2 (an interval needs two); --parts: sweep and/or handshakes")
    return args


def record_sweep(recorder: Recorder, network: dict, mode: str, result: dict, repeats: int) -> None:
    label = f"{network['name']}, {'keep-alive' if mode == 'keepalive' else 'new connection'}"
    for item in result["items"]:
        change = item["row"]["time_taken_overhead"]
        recorder.figure(f"sweep {label}, c={item['level']}: HTTPS time overhead, {item['tool']}",
                        stats_value(change), "%", load=item["load"], note=change_note(change, item, repeats))
    for tool, average in result["averages"].items():
        change = average["time_taken_overhead"]
        goal, met = "", None
        if tool == "ours" and network["rtt_ms"] and mode == "new":   # the studies: tens of %, not thousands
            goal, met = "> 0 and < +100 % (tens of %)", change["verdict"] == stats.HIGHER and change["pct"] < 100
        recorder.figure(f"sweep {label}, average over levels: HTTPS time overhead, {tool}", stats_value(change), "%",
                        goal=goal, met=met, note=f"95 % interval {interval(change)}; {change['verdict']}; geometric "
                                                 f"mean of the levels by repeat")


def stats_value(change: dict) -> float | None:
    return None if change["verdict"] in (stats.TOO_SHORT, stats.NO_DATA) else change["pct"]


def interval(change: dict) -> str:
    if change["low_pct"] is None:
        return "none"
    return f"[{change['low_pct']:+.1f}, {change['high_pct']:+.1f}] %"


def change_note(change: dict, item: dict, repeats: int) -> str:
    row = item["row"]
    rates = "; ".join(f"{s.upper()} {estimate_text(row[s]['requests_per_second'], 0)} req/s" for s in SCHEMES)
    return f"95 % interval {interval(change)}; {change['verdict']}; {rates}; n={item['n']:,}, {repeats} repeats"


def record_handshakes(recorder: Recorder, levels: list[dict], rtt_ms: float | None) -> None:
    for item in levels:
        change = item["change"]
        ours_tls = item["tool"] == "ours" and item["what"].startswith("TLS")
        recorder.figure(f"handshakes {item['agents']} agents: TLS 1.3 vs 1.2, {item['tool']}: {item['what']}",
                        stats_value(change), "%", load=item["load"],
                        goal="interval below 0 (TLS 1.3 faster)" if ours_tls else "",
                        met=change["verdict"] == stats.LOWER if ours_tls else None,
                        note=f"95 % interval {interval(change)}; {change['verdict']}; medians " + ", ".join(
                            f"TLS {v} {time_text(item['cells'][v], rtt_ms)}" for v in VERSIONS))
        if ours_tls and rtt_ms:
            for v in VERSIONS:
                median = item["cells"][v]["ms"]["median"]
                multiple = round_trips(median, rtt_ms)
                recorder.figure(f"handshakes {item['agents']} agents: TLS {v} full handshake in RTTs, ours",
                                multiple, "RTT", load=item["load"],
                                note=f"{number(median, 1)} ms at a measured RTT of {rtt_ms:.1f} ms; expected "
                                     f"{2 if v == '1.2' else 1} plus queueing")


def networks(lab, link, rtt_ms: float | None) -> list[dict]:
    ports = {"http": lab.http_port(SERVER), "https": lab.port(SERVER)}
    return [{"name": "loopback (0 ms)", "host": "127.0.0.1", "ports": ports, "time_limit_s": LAN_TIME_LIMIT_S,
             "rtt_ms": None, "measured_rtt_ms": measure_rtt_ms("127.0.0.1", ports["http"])},
            {"name": f"{link.rtt_ms:g} ms RTT", "host": link.host, "ports": ports, "time_limit_s": WAN_TIME_LIMIT_S,
             "rtt_ms": rtt_ms, "measured_rtt_ms": rtt_ms}]


def run_sweeps(recorder: Recorder, lab, link, rtt_ms: float | None, design: dict, repeats: int) -> list[str]:
    tables = []
    for network in networks(lab, link, rtt_ms):
        wan = network["rtt_ms"] is not None
        modes = ("new", "keepalive") if wan and design["keepalive"] else ("new",)
        for mode in modes:
            levels = design["levels"] if wan else design["lan_levels"]
            per_level = design["keepalive_per_level" if mode == "keepalive" else "per_level"]
            requests = (lambda c: max(100, per_level * c)) if wan else (lambda c: LAN_REQUESTS)
            load_before = load_now()
            result = sweep(network, mode, levels, requests, repeats)
            record_sweep(recorder, network, mode, result, repeats)
            connections = "keep-alive" if mode == "keepalive" else "a new connection per request"
            title = (f"**Sweep, {network['name']}, {connections}"
                     f"** (measured RTT {network['measured_rtt_ms']:.3g} ms; HTTPS = TLS 1.3, every handshake full; "
                     f"{repeats} repeats per cell after a discarded warm-up, HTTP/HTTPS alternated; median "
                     f"[95 % interval]; overhead signed: time (HTTPS − HTTP) / HTTP and req/s (HTTP − HTTPS) / HTTP, "
                     f"negative = HTTPS faster; times and rates end to end, set-up included"
                     + ("" if wan else f"; every run stopped after {LAN_TIME_LIMIT_S} s") +
                     f"; failed requests: ours {result['failed']['ours']}, ab {result['failed']['ab']}"
                     f"; load {load_before} → {load_now()})")
            tables.append(sweep_table(title, result["items"], result["averages"], network["rtt_ms"]))
            if wan and mode == "new":
                tables.append(phases_table(result["ab_runs"], network["rtt_ms"]))
    return tables


def phases_table(ab_runs: list[dict], rtt_ms: float | None) -> str:
    """ab's Connection Times medians at 50 ms, in RTTs: where the Nagle stall shows (HTTPS Waiting 2 RTT)."""
    phases = ab_phase_medians(ab_runs)
    rows = [(str(level), scheme.upper(),
             *(with_rtt(cell[p], rtt_ms, whole_ms=True) for p in ("connect", "waiting", "total")))
            for (level, scheme), cell in phases.items()]
    protocol = next((f"{r['protocol']} {r['cipher']}" for r in ab_runs if r["protocol"]), "")
    return "\n".join([f"**ab's Connection Times at {rtt_ms:.1f} ms RTT** (per level, the median over the repeats of "
                      f"each run's median; HTTPS {protocol}; Connect = TCP + TLS, Waiting = request sent to first "
                      "byte): the second RTT of HTTPS Waiting is Nagle's, see the note below", "",
                      *markdown_table(("c", "ab", "Connect", "Waiting", "Total"), rows)])


def main() -> int:
    args = parse_args()
    for tool in ("ab", "h2load"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install -y apache2-utils nghttp2-client")
    from tests.support.tls_servers import require_nginx, start_lab
    from tests.support.wan import start_wan

    require_nginx()
    recorder = Recorder(BENCH["title"], args)
    design = QUICK if args.quick else FULL
    print(f"load average at start {os.getloadavg()}; design {design}, {args.repeats} repeats", flush=True)
    tables = []
    with start_lab() as lab, start_wan(args.rtt) as link:
        rtt_ms = measure_rtt_ms(link.host, lab.http_port(SERVER))
        recorder.figure(f"RTT of the {args.rtt:g} ms link (TCP connects, 10th percentile)", rtt_ms, "ms")
        if "sweep" in args.parts:
            tables += run_sweeps(recorder, lab, link, rtt_ms, design, args.repeats)
        if "handshakes" in args.parts:
            load_before = load_now()
            levels = handshakes(lab, link, design["agents"], design["per_agent"], args.repeats)
            record_handshakes(recorder, levels, rtt_ms)
            tables.append(handshake_table(
                f"**TLS 1.2 vs 1.3 full handshakes at {rtt_ms:.1f} ms RTT** ({design['per_agent']} per agent, "
                f"AES-128-GCM both versions, RSA-2048, no resumption; {args.repeats} rounds after a discarded "
                f"warm-up, versions alternated, paired by round; median [95 % interval]; negative = TLS 1.3 faster; "
                "ours times the handshake alone, h2load sends one request per connection (so its hs/s holds one "
                "more RTT per connection); h2load's TLS 1.2 runs go to a TLS 1.2-only twin of the server (it cannot "
                f"pin the version); load {load_before} → {load_now()})", levels, rtt_ms))
    for table in tables:
        print("\n" + table, flush=True)
        recorder.note(table)
    if "sweep" in args.parts:
        recorder.note(NAGLE_NOTE)
    recorder.note(design_note(args, design))
    recorder.write()
    return 0


def design_note(args: argparse.Namespace, design: dict) -> str:
    mode = "quick (a reduced design)" if args.quick else "full"
    keepalive = (f"; keep-alive too at {args.rtt:g} ms (n = max(100, {design['keepalive_per_level']} c))"
                 if design["keepalive"] else "")
    return (f"Design ({mode}): sweep levels {', '.join(map(str, design['levels']))} at {args.rtt:g} ms "
            f"(n = max(100, {design['per_level']} c)), {', '.join(map(str, design['lan_levels']))} on loopback "
            f"(n = {LAN_REQUESTS:,}, -t {LAN_TIME_LIMIT_S}){keepalive}; "
            f"handshakes with {', '.join(map(str, design['agents']))} agents x {design['per_agent']}; {args.repeats} "
            "repeats. Closed-loop clients (ab, h2load and ours wait for each answer), nothing pinned, nginx one "
            "worker; ours runs its default processes (one per core, at most one per 8 connections), ab one. "
            "The 95 % intervals are over the repeats (tlsaudit/domain/stats.py); ab's and h2load's runs get the "
            "same treatment as ours.")


if __name__ == "__main__":
    sys.exit(main())
