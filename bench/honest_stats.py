"""Honest rates and sound statistics (issue #15, items 3-4): what the figures cost and whether they add up.

    .venv/bin/python bench/honest_stats.py [--quick] [--json OUT] [--pairs 3]

1. Reported vs end-to-end handshake rates: `manage.py handshakes` as a user runs it (a new process,
   one agent x 300 handshakes per cell at c=1, ten agents x 30 at c=10, two suites, the default 3
   repeats and warm-up), timed from outside. The reported rate of the whole run is the handshakes over
   the sum of the cells' times implied by their own rates (count / handshakes_per_s); the end-to-end
   rate is the handshakes over the process's wall time, with and without the start-up the command
   reports apart. Goal: reported / end to end <= 1.3. `--pairs` alternated invocations; median and range.
2. The cost of the bootstrap of the median (tlsaudit.domain.stats): per call, for n = 20, 100, 1,000
   values and 1,000 / 2,000 (the default) / 10,000 resamples.
3. Default run durations: `overhead` with the dashboard's sweep defaults (levels 1,20,40, new
   connections, n=500 per run, 5 s per run at most, 3 repeats, warm-up) and `handshakes` with its
   defaults (10 agents x 20, 3 repeats, warm-up, two suites), against the nginx lab on loopback and
   behind a 50 ms round trip (the latency lab, tests/support/wan.py), wall time of the command.

The lab is `tests/support/tls_servers.py` (fixture `load_no_resumption`: every handshake full).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from tests.support.tls_servers import require_nginx, start_lab  # noqa: E402
from tests.support.wan import start_wan  # noqa: E402

BENCH = {"title": "Honest rates and statistics", "order": 45, "quick_timeout_s": 600, "full_timeout_s": 1800}
FIXTURE = "load_no_resumption"
SUITES = "TLS_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256"
ENV = {**os.environ, "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1",
       "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--pairs", type=int, help="alternated invocations per level (default 3, quick 2)")
    args = parser.parse_args()
    args.pairs = args.pairs or (2 if args.quick else 3)
    return args


def manage(*args: str) -> tuple[float, dict]:
    """Run a command as a user would; (wall seconds from outside, its JSON)."""
    started = time.monotonic()
    run = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args, "--json"], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    if run.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({run.returncode}): {run.stdout[-500:]} {run.stderr[-500:]}")
    return wall, json.loads(run.stdout)


def rate_ratio(lab, agents: int, per_agent: int) -> dict:
    wall, report = manage("handshakes", f"localhost:{lab.port(FIXTURE)}", "--ip", "127.0.0.1", "--agents",
                          str(agents), "--per-agent", str(per_agent), "--suites", SUITES)
    cells = [c for c in report["cells"] if c["count"]]
    count = sum(c["count"] for c in cells)
    reported = count / sum(c["count"] / c["handshakes_per_s"] for c in cells)
    startup = report.get("startup_s") or 0.0
    return {"wall_s": wall, "startup_s": startup, "count": count, "reported": reported,
            "ratio": reported / (count / wall), "ratio_without_startup": reported / (count / (wall - startup))}


def measure_rates(lab, recorder: Recorder, pairs: int) -> None:
    levels = {"c=1": (1, 300), "c=10": (10, 30)}
    runs: dict[str, list[dict]] = {name: [] for name in levels}
    for _ in range(pairs):   # alternated: c=1, c=10, c=1, c=10, ...
        for name, (agents, per_agent) in levels.items():
            runs[name].append(rate_ratio(lab, agents, per_agent))
    for name, results in runs.items():
        for key, label in (("ratio_without_startup", "start-up reported apart"), ("ratio", "start-up included")):
            values = [r[key] for r in results]
            recorder.figure(f"handshakes {name}: reported / end-to-end rate ({label})", statistics.median(values),
                            "x", goal="<= 1.3" if key == "ratio_without_startup" else "",
                            met=max(values) <= 1.3 if key == "ratio_without_startup" else None,
                            note=f"range {min(values):.2f}-{max(values):.2f}, {len(values)} invocations, "
                                 f"{results[0]['count']} handshakes each, wall {statistics.median(r['wall_s'] for r in results):.1f} s, "
                                 f"start-up {statistics.median(r['startup_s'] for r in results):.2f} s")


def measure_bootstrap(recorder: Recorder) -> None:
    import random

    from tlsaudit.domain.stats import bootstrap_median_interval

    rng = random.Random(1)
    for n in (20, 100, 1000):
        values = [rng.lognormvariate(0, 0.5) for _ in range(n)]
        for resamples in (1000, 2000, 10000):
            calls = 3 if n * resamples <= 2_000_000 else 1
            started = time.perf_counter()
            for _ in range(calls):
                bootstrap_median_interval(values, resamples=resamples)
            recorder.figure(f"bootstrap of the median, n={n}, {resamples} resamples", (time.perf_counter() - started)
                            / calls * 1000, "ms per call")


def measure_durations(lab, recorder: Recorder) -> None:
    http_port, https_port = lab.http_port(FIXTURE), lab.port(FIXTURE)
    with start_wan(50) as link:
        networks = {"loopback": "127.0.0.1", "50 ms RTT": link.host}
        for network, ip in networks.items():
            wall, report = manage("overhead", "localhost", "--ip", ip, "--http-port", str(http_port),
                                  "--https-port", str(https_port), "--path", "/health", "--levels", "1,20,40",
                                  "-n", "500")
            short = sum(1 for row in report["levels"] for s in ("http", "https") if row[s]["too_short"])
            verdicts = ", ".join(f"c={row['concurrency']}: {row['time_taken_overhead']['verdict']}"
                                 for row in report["levels"])
            recorder.figure(f"default sweep duration, {network}", wall, "s",
                            note=f"levels 1,20,40, n=500, -t 5, 3 repeats; {short} of 6 cells too short; {verdicts}")
            wall, report = manage("handshakes", f"localhost:{https_port}", "--ip", ip, "--suites", SUITES)
            rows = report["tls13_vs_tls12"]
            recorder.figure(f"default handshake run duration, {network}", wall, "s",
                            note="10 agents x 20, 3 repeats, 2 suites; TLS 1.3 vs 1.2: " + ", ".join(
                                f"{r['family']} {r['tls13_vs_tls12']['pct']:+.1f} % ({r['tls13_vs_tls12']['verdict']})"
                                for r in rows if r["tls13_vs_tls12"]["pct"] is not None))


def main() -> None:
    args = parse_args()
    recorder = Recorder(BENCH["title"], args)
    require_nginx()
    lab = start_lab()
    try:
        measure_rates(lab, recorder, args.pairs)
        measure_bootstrap(recorder)
        if args.quick:      # ~80 s, most of it the default sweep behind 50 ms: the full mode measures them
            recorder.note("Quick mode leaves out the default run durations (part 3, about 80 s): `make bench-full` "
                          "measures them.")
        else:
            measure_durations(lab, recorder)
    finally:
        lab.stop()
    recorder.write()


if __name__ == "__main__":
    main()
