"""Handshake probe vs h2load (issue #9): full TLS handshakes per second on the same nginx, and the ratio.

    .venv/bin/python bench/handshake_vs_h2load.py [--quick] [--json OUT] [-n 3000] [-c 10,50] [--rounds 3]
        [--no-pin]

Starts the TLS lab; fixture `load_no_resumption` (session cache and tickets off: every connection is
a full TLS 1.3 handshake, RSA-2048, X25519). Per concurrency C, in every round, back to back:

1. `h2load --h1 -n N -c C -H 'Connection: close' https://127.0.0.1:PORT/`: each request on a new
   connection, so N connections = N handshakes (h2load counts requests/s);
2. ours, `workers.load.handshake.run_handshakes` (what `manage.py handshakes` and the load agents run):
   C agents x N/C handshakes, TLS 1.3, each followed by the same one-request `Connection: close`
   exchange (`http_probe=True`), so both clients do the same work per connection;
3. ours, handshake only (no HTTP request): what a handshake cell of a load test measures.

Cores (as bench/loadgen_vs_ab.py): nginx's single worker pinned to CPU 0, the clients to CPU 1, so a
client never competes with the server for a core (`--no-pin`: the scheduler decides). Besides the
rate (wall clock, noisy on a shared host) the figures give handshakes per client-CPU-second, the
reproducible measure of how cheap each client is.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from tests.support.tls_servers import require_nginx, start_lab  # noqa: E402
from workers.load.handshake import run_handshakes  # noqa: E402
from workers.load.spec import HandshakeSpec  # noqa: E402

BENCH = {"title": "Handshake probe vs h2load", "order": 40, "quick_timeout_s": 180, "full_timeout_s": 1200}
FIXTURE = "load_no_resumption"
IP = "127.0.0.1"
H2LOAD, OURS, OURS_BARE = "h2load", "ours (handshake + request)", "ours (handshake only)"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("-n", "--handshakes", type=int, help="handshakes per run (default 3000, quick 600)")
    parser.add_argument("-c", "--concurrency", default="10,50", help="comma-separated levels (default %(default)s)")
    parser.add_argument("--rounds", type=int, help="rounds, each an alternated pair per level (default 5, quick 3)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin nginx to CPU 0 and the clients to CPU 1")
    args = parser.parse_args()
    args.handshakes = args.handshakes if args.handshakes is not None else (600 if args.quick else 3000)
    args.rounds = args.rounds if args.rounds is not None else (3 if args.quick else 5)
    try:
        args.levels = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency must be comma-separated integers, got {args.concurrency!r}")
    if args.handshakes < 1 or any(c < 1 for c in args.levels) or any(args.handshakes % c for c in args.levels):
        parser.error("each concurrency must be at least 1 and divide --handshakes")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pin(lab) -> str:
    """nginx workers on CPU 0, this process (and the h2load it starts) on CPU 1."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "not pinned (one CPU)"
    workers = [int(p) for p in Path(f"/proc/{lab.process.pid}/task/{lab.process.pid}/children").read_text().split()]
    for pid in workers:
        os.sched_setaffinity(pid, {cpus[0]})
    os.sched_setaffinity(0, {cpus[1]})
    return f"nginx worker(s) on CPU {cpus[0]}, clients on CPU {cpus[1]}"


def parse_h2load(output: str) -> dict:
    """requests/s, and the counts, from h2load's summary; ValueError if it is not there."""
    rate = re.search(r"finished in ([\d.]+)(ms|s), ([\d.]+) req/s", output)
    counts = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                       r"(\d+) errored, (\d+) timeout", output)
    if not rate or not counts:
        raise ValueError(f"h2load printed no summary:\n{output[-1500:]}")
    total, _, done, succeeded, failed, errored, timeouts = (int(v) for v in counts.groups())
    wall_s = float(rate.group(1)) / (1000 if rate.group(2) == "ms" else 1)
    return {"wall_s": wall_s, "rate": float(rate.group(3)), "count": succeeded,
            "failed": failed + errored + timeouts + (total - done)}


def run_h2load(port: int, n: int, c: int) -> dict:
    cpu = children_cpu_s()
    done = subprocess.run(["h2load", "--h1", "-n", str(n), "-c", str(c), "-H", "Connection: close",
                           f"https://{IP}:{port}/"], capture_output=True, text=True, timeout=600)
    result = parse_h2load(done.stdout)
    result["cpu_s"] = children_cpu_s() - cpu
    return result


def run_ours(port: int, n: int, c: int, http_probe: bool) -> dict:
    spec = HandshakeSpec(host=IP, port=port, ip=IP, version="1.3", agents=c, per_agent=n // c)
    cpu = time.process_time()
    result = run_handshakes(spec, http_probe=http_probe)
    return {"rate": result["handshakes_per_s"], "count": result["count"], "wall_s": result["wall_s"],
            "failed": sum(result["failures"].values()) + sum(result["flagged"].values()),
            "cpu_s": time.process_time() - cpu}


def one_round(port: int, n: int, levels: list[int]) -> dict:
    row = {}
    for c in levels:
        cells = {H2LOAD: run_h2load(port, n, c), OURS: run_ours(port, n, c, True),
                 OURS_BARE: run_ours(port, n, c, False)}
        for name, cell in cells.items():
            if cell["failed"] or cell["count"] != n:
                raise SystemExit(f"c={c} {name}: {cell['count']} of {n} handshakes, {cell['failed']} failed")
        print("  c=%-3d " % c + "  ".join(f"{k} {v['rate']:7.0f}/s ({v['count'] / v['cpu_s']:5.0f}/cpu-s)"
                                          for k, v in cells.items()), file=sys.stderr, flush=True)
        row[c] = cells
    return row


def record(recorder: Recorder, rounds: list[dict], args) -> None:
    for c in args.levels:
        def median(name: str, key: str) -> float:
            values = [r[c][name][key] if key == "rate" else r[c][name]["count"] / r[c][name]["cpu_s"] for r in rounds]
            return statistics.median(values)

        for name in (H2LOAD, OURS, OURS_BARE):
            recorder.figure(f"c={c}: {name}", median(name, "rate"), "handshakes/s",
                            note=f"{median(name, 'eff'):,.0f} per client-CPU-second")
        # Each round ran h2load then ours back to back: one alternated pair per round.
        recorder.ratio(f"c={c}: ours / h2load (same work per connection)", [r[c][OURS]["rate"] for r in rounds],
                       [r[c][H2LOAD]["rate"] for r in rounds], goal=">= 1.0x", met=lambda ratio: ratio >= 1.0,
                       note="handshakes/s")
        recorder.ratio(f"c={c}: client CPU per handshake, ours / h2load",
                       [r[c][OURS]["cpu_s"] / r[c][OURS]["count"] for r in rounds],
                       [r[c][H2LOAD]["cpu_s"] / r[c][H2LOAD]["count"] for r in rounds])


def main() -> None:
    args = parse_args()
    if not shutil.which("h2load"):
        sys.exit("h2load not found: apt-get install nghttp2-client (make bench installs it)")
    require_nginx()
    recorder = Recorder(BENCH["title"], args)
    version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    with start_lab() as lab:
        port = lab.port(FIXTURE)
        cores = "not pinned (--no-pin)" if args.no_pin else pin(lab)
        print(f"{version}; {cores}; n={args.handshakes}, c={args.levels}, {args.rounds} round(s)", file=sys.stderr)
        run_h2load(port, 100, 10)  # warm-up: page cache, nginx, the first process start
        run_ours(port, 100, 10, True)
        rounds = [one_round(port, args.handshakes, args.levels) for _ in range(args.rounds)]
    record(recorder, rounds, args)
    recorder.note(f"{version} vs workers/load/handshake.py; lab fixture `{FIXTURE}` (TLS 1.3 full handshakes, "
                  f"RSA-2048, one nginx worker); n={args.handshakes} per run, {args.rounds} round(s) (h2load, ours, ours bare); ratios are medians of the rounds' pairs; "
                  f"{cores}. Our agents are connections of one epoll loop in one Python process (workers/load/handshake_loop.py).")
    recorder.write()


if __name__ == "__main__":
    main()
