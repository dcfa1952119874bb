"""Our load engine vs ApacheBench (and wrk) on the same nginx (issue #4 "Benchmarks").

    .venv/bin/python bench/loadgen_vs_ab.py [--rounds 3] [-c 50] [--scale 1.0] [--no-pin]

Goal: >= 1.0x ab's requests/s in every mode, and a median latency within +-10 % of ab's at c=1.

Starts the nginx TLS lab (tests/support/tls_servers.py: one nginx worker; fixture
`load_no_resumption`, so every HTTPS connection is a full TLS 1.3 handshake). HTTPS requests `/`
(152-byte page), HTTP requests `/health` (3 bytes: the lab's HTTP `/` is a redirect). Per mode
(HTTP/HTTPS x new connection/keep-alive), in every round, back to back with the same n and c:

1. `ab [-k] -n N -c C URL` (ab -k speaks HTTP/1.0 keep-alive);
2. ours in this process: workers.load.client.run_load(LoadSpec(..., processes=1)) (warm, no CLI start-up);
3. ours with processes=2 (two spawned processes, each n/2 and c/2, merged; time from the first
   request to the last, as ab counts it: process start-up is not in it);
4. `wrk -t1 -cC -d3s URL` for the keep-alive modes.

Cores (loadgen-notes §3.2): by default nginx's single worker is pinned to CPU 0 and every client
(ab, wrk, ours with 1 process) to CPU 1, so client and server never compete for a core and the
comparison is one client core vs one client core. "ours x2" (two processes) runs on both cores:
it may use a second core (ab cannot), but on a 2-vCPU host that core is nginx's, so it helps only
where the client is the bottleneck (new connections) and steals from nginx where the server is
(keep-alive). `--no-pin` runs everything unpinned (the scheduler decides), as before.

Client CPU: besides requests/s (wall clock, noisy on a shared host) the table gives requests per
client-CPU-second ("eff": ab's and wrk's rusage as children, ours' process_time() of the run, plus its
children's rusage with 2 processes) — the reproducible measure of how fast each client is.

Latency: at c=1, ab's median Total from its `-e` CSV (µs resolution: "50,0.123") vs ours from the
exact samples with the same index ((0.5 + n * 50 / 100) of the sorted totals); LATENCY_PAIRS runs
of each per round, alternating ab and ours, and the median of those medians (one c=1 run takes
well under a second and single runs differed by +-15 % from scheduler wake-ups alone).
Prints medians over the rounds (wall-clock rps is noisy on a shared 2-vCPU host; see the load average).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from tests.support.tls_servers import require_nginx, start_lab  # noqa: E402
from workers.load.client import run_load  # noqa: E402
from workers.load.spec import LoadSpec  # noqa: E402

BENCH = {"title": "Load generator vs ab/wrk", "order": 50, "quick_timeout_s": 240, "full_timeout_s": 1800}
FIXTURE = "load_no_resumption"
QUICK_SCALE, QUICK_ROUNDS = 0.05, 1
LATENCY_PAIRS = 7  # per round and mode: ab then ours at c=1, alternating
# mode -> (scheme, keep-alive, n for the throughput run, n for the c=1 latency run)
MODES = {
    "HTTP keep-alive": ("http", True, 50_000, 3_000),
    "HTTP new connection": ("http", False, 20_000, 2_000),
    "HTTPS keep-alive": ("https", True, 50_000, 3_000),
    "HTTPS new connection": ("https", False, 3_000, 500),
}


def url_of(lab, scheme: str) -> tuple[str, int, str]:
    if scheme == "https":
        return f"https://127.0.0.1:{lab.port(FIXTURE)}/", lab.port(FIXTURE), "/"
    return f"http://127.0.0.1:{lab.http_port(FIXTURE)}/health", lab.http_port(FIXTURE), "/health"


CLIENT_CPUS: set[int] | None = None  # set by pin(): the clients' core(s)
ALL_CPUS = set(range(os.cpu_count() or 1))


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pinned(args: list[str]) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, sorted(CLIENT_CPUS))), *args] if CLIENT_CPUS else args


def pin(lab) -> str:
    """nginx workers on CPU 0, clients (this process and its children) on CPU 1."""
    global CLIENT_CPUS
    if len(ALL_CPUS) < 2:
        return "not pinned (one CPU)"
    workers = [int(pid) for pid in Path(f"/proc/{lab.process.pid}/task/{lab.process.pid}/children").read_text().split()]
    for pid in workers:
        os.sched_setaffinity(pid, {0})
    CLIENT_CPUS = {1}
    os.sched_setaffinity(0, CLIENT_CPUS)
    return f"nginx worker(s) {workers} pinned to CPU 0, clients to CPU 1 (ours x2: CPUs 0-1)"


def run_ab(url: str, n: int, c: int, keepalive: bool, csv: Path | None = None) -> dict:
    args = ["ab", "-q", "-n", str(n), "-c", str(c)] + (["-k"] if keepalive else []) + (["-e", str(csv)] if csv else [])
    cpu = children_cpu_s()
    out = subprocess.run(pinned([*args, url]), capture_output=True, text=True, timeout=600).stdout
    cpu = children_cpu_s() - cpu
    complete = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
    return {"rps": float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1)),
            "complete": complete, "eff": complete / cpu if cpu else 0.0,
            "failed": int(re.search(r"Failed requests:\s+(\d+)", out).group(1))}


def ab_median_us(url: str, n: int, keepalive: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "perc.csv"
        run_ab(url, n, 1, keepalive, csv)
        rows = dict(line.split(",") for line in csv.read_text().splitlines()[1:])
        return float(rows["50"]) * 1000


def run_ours(scheme: str, port: int, path: str, n: int, c: int, keepalive: bool, processes: int) -> dict:
    spec = LoadSpec(scheme=scheme, host="localhost", ip="127.0.0.1", port=port, path=path, requests=n,
                    concurrency=c, keepalive=keepalive, processes=processes)
    if CLIENT_CPUS:  # 1 process: the client core; 2 processes: every core (spawned children inherit it)
        os.sched_setaffinity(0, CLIENT_CPUS if processes == 1 else ALL_CPUS)
    cpu, children = time.process_time(), children_cpu_s()
    try:
        result = run_load(spec)
    finally:
        if CLIENT_CPUS:
            os.sched_setaffinity(0, CLIENT_CPUS)
    cpu = time.process_time() - cpu + children_cpu_s() - children
    counters = result.counters
    return {"rps": counters.complete / result.time_taken_s, "complete": counters.complete,
            "eff": counters.complete / cpu if cpu else 0.0, "failed": counters.failed, "samples": result.samples}


def ours_median_us(scheme: str, port: int, path: str, n: int, keepalive: bool) -> float:
    totals = sorted(run_ours(scheme, port, path, n, 1, keepalive, 1)["samples"]["total"])
    return float(totals[int(0.5 + len(totals) * 50 / 100)])


def run_wrk(url: str, c: int, seconds: int = 3) -> dict:
    cpu = children_cpu_s()
    out = subprocess.run(pinned(["wrk", "-t1", f"-c{c}", f"-d{seconds}s", url]), capture_output=True, text=True,
                         timeout=120).stdout
    cpu = children_cpu_s() - cpu
    errors = re.search(r"Socket errors: (.*)", out)
    done = re.search(r"(\d+) requests in", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "eff": int(done.group(1)) / cpu if done and cpu else 0.0, "errors": errors.group(1) if errors else ""}


def one_round(lab, c: int, scale: float) -> dict:
    """Every mode once, tools back to back (A B A B across rounds)."""
    row = {}
    for mode, (scheme, keepalive, n, n_latency) in MODES.items():
        url, port, path = url_of(lab, scheme)
        n = max(c, int(n * scale))
        n_latency = max(10, int(n_latency * scale))
        cells = {"ab": run_ab(url, n, c, keepalive),
                 "ours": run_ours(scheme, port, path, n, c, keepalive, 1),
                 "ours x2": run_ours(scheme, port, path, n, c, keepalive, 2)}
        if keepalive and shutil.which("wrk"):
            cells["wrk"] = run_wrk(url, c)
        ab_lat, our_lat = [], []
        for _ in range(LATENCY_PAIRS):  # c=1 runs are short and wake-up noise is large: alternate, take medians
            ab_lat.append(ab_median_us(url, n_latency, keepalive))
            our_lat.append(ours_median_us(scheme, port, path, n_latency, keepalive))
        cells["ab median us"], cells["ours median us"] = statistics.median(ab_lat), statistics.median(our_lat)
        for name in ("ab", "ours", "ours x2"):
            if cells[name]["failed"] or cells[name]["complete"] != n:
                print(f"  !! {mode} {name}: complete {cells[name]['complete']} of {n}, failed {cells[name]['failed']}")
        row[mode] = cells
        print(f"  {mode:22} ab {cells['ab']['rps']:9.0f}  ours {cells['ours']['rps']:9.0f}  "
              f"ours x2 {cells['ours x2']['rps']:9.0f}  wrk {cells.get('wrk', {}).get('rps', 0):9.0f}  "
              f"c=1 median ab {cells['ab median us']:7.0f} us, ours {cells['ours median us']:7.0f} us; req/cpu-s "
              f"ab {cells['ab']['eff']:7.0f} ours {cells['ours']['eff']:7.0f} x2 {cells['ours x2']['eff']:7.0f} "
              f"wrk {cells.get('wrk', {}).get('eff', 0):7.0f}", flush=True)
    return row


def median_of(rounds: list[dict], mode: str, name: str, key: str = "rps") -> float | None:
    values = [r[mode][name] if isinstance(r[mode].get(name), float) else r[mode][name][key]
              for r in rounds if name in r[mode]]
    return statistics.median(values) if values else None


def table(rounds: list[dict], c: int) -> str:
    lines = [f"| mode (c={c}) | ab req/s | ours req/s (1 proc) | ours req/s (2 procs) | wrk -t1 req/s | "
             f"ours/ab (1) | ours/ab (2) | best/ab | c=1 median ab µs | ours µs | diff |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode in MODES:
        ab, ours, ours2 = (median_of(rounds, mode, k) for k in ("ab", "ours", "ours x2"))
        wrk = median_of(rounds, mode, "wrk")
        ab_lat, our_lat = median_of(rounds, mode, "ab median us"), median_of(rounds, mode, "ours median us")
        lines.append(f"| {mode} | {ab:,.0f} | {ours:,.0f} | {ours2:,.0f} | {f'{wrk:,.0f}' if wrk else '-'} | "
                     f"{ours / ab:.2f}x | {ours2 / ab:.2f}x | {max(ours, ours2) / ab:.2f}x | {ab_lat:.0f} | "
                     f"{our_lat:.0f} | {(our_lat - ab_lat) / ab_lat * 100:+.1f} % |")
    lines += ["", f"Client efficiency, requests per client-CPU-second (c={c}; medians; higher is better):", "",
              "| mode | ab | ours (1 proc) | ours (2 procs, incl. their start-up) | wrk -t1 | ours/ab (1) | ours/ab (2) |",
              "|---|---|---|---|---|---|---|"]
    for mode in MODES:
        ab, ours, ours2 = (median_of(rounds, mode, k, "eff") for k in ("ab", "ours", "ours x2"))
        wrk = median_of(rounds, mode, "wrk", "eff")
        lines.append(f"| {mode} | {ab:,.0f} | {ours:,.0f} | {ours2:,.0f} | {f'{wrk:,.0f}' if wrk else '-'} | "
                     f"{ours / ab:.2f}x | {ours2 / ab:.2f}x |")
    return "\n".join(lines)


def tool_versions() -> str:
    ab = subprocess.run(["ab", "-V"], capture_output=True, text=True).stdout.splitlines()[0]
    wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[:1] if shutil.which(
        "wrk") else ["(wrk not installed: apt-get install -y wrk)"]
    return f"{ab}; {wrk[0] if wrk else 'wrk'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--rounds", type=int, help=f"default 3 (quick {QUICK_ROUNDS})")
    parser.add_argument("-c", "--concurrency", type=int, default=50)
    parser.add_argument("--scale", type=float, help=f"multiply every n (default 1.0, quick {QUICK_SCALE})")
    parser.add_argument("--no-pin", action="store_true", help="do not pin nginx to CPU 0 and the clients to CPU 1")
    args = parser.parse_args()
    args.rounds = args.rounds if args.rounds is not None else (QUICK_ROUNDS if args.quick else 3)
    args.scale = args.scale if args.scale is not None else (QUICK_SCALE if args.quick else 1.0)
    if args.rounds < 1 or args.scale <= 0 or args.concurrency < 1:
        parser.error("--rounds and -c must be at least 1, --scale positive")
    recorder = Recorder(BENCH["title"], args)
    if not shutil.which("ab"):
        sys.exit("ab not found: apt-get install -y apache2-utils")
    require_nginx()
    print(f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, {tool_versions()}")
    print(f"load average at start: {os.getloadavg()}")
    rounds = []
    with start_lab() as lab:
        print("cores: " + ("not pinned (--no-pin)" if args.no_pin else pin(lab)))
        run_ab(url_of(lab, "https")[0], 200, 10, False)  # warm-up: page cache, nginx, ab's first run
        run_ours("https", lab.port(FIXTURE), "/", 200, 10, False, 2)
        for index in range(1, args.rounds + 1):
            print(f"round {index}/{args.rounds}", flush=True)
            rounds.append(one_round(lab, args.concurrency, args.scale))
    print(f"load average at end: {os.getloadavg()}")
    print()
    print(f"Medians of {args.rounds} rounds, n per mode: " +
          ", ".join(f"{m} {max(args.concurrency, int(v[2] * args.scale))}" for m, v in MODES.items()))
    print(table(rounds, args.concurrency))
    record(recorder, rounds, args)
    recorder.write()


def record(recorder: Recorder, rounds: list[dict], args) -> None:
    """The figures for docs/benchmarks.md (bench/contract.py): per mode, ours/ab and the c=1 latency."""
    for mode in MODES:
        ab, ours, ours2 = (median_of(rounds, mode, k) for k in ("ab", "ours", "ours x2"))
        wrk = median_of(rounds, mode, "wrk")
        eff_ab, eff_ours = median_of(rounds, mode, "ab", "eff"), median_of(rounds, mode, "ours", "eff")
        recorder.figure(f"{mode}: ab", ab, "req/s", note=f"wrk -t1 {wrk:,.0f} req/s" if wrk else "")
        recorder.figure(f"{mode}: ours / ab (1 process)", ours / ab, "x", goal=">= 1.0x", met=ours >= ab,
                        note=f"req per client-CPU-s {eff_ours / eff_ab:.2f}x ab's")
        # The engine's own answer to "one core cannot keep up" is a second process (the issue's design);
        # on this host that core is nginx's, so it only pays where the client core is the bottleneck.
        best = max(ours, ours2)
        recorder.figure(f"{mode}: ours / ab (best of 1 and 2 processes)", best / ab, "x", goal=">= 1.0x",
                        met=best >= ab, note=f"1 process {ours / ab:.2f}x, 2 processes {ours2 / ab:.2f}x")
        ab_lat, our_lat = median_of(rounds, mode, "ab median us"), median_of(rounds, mode, "ours median us")
        diff = (our_lat - ab_lat) / ab_lat * 100
        recorder.figure(f"{mode}: c=1 median latency, ours vs ab", diff, "%", goal="within +-10 %",
                        met=abs(diff) <= 10, note=f"ab {ab_lat:.0f} µs, ours {our_lat:.0f} µs")
    recorder.note(f"ab/wrk vs workers/load/client.py on the lab's `{FIXTURE}` (one nginx worker); "
                  f"c={args.concurrency}, n scaled by {args.scale}, medians of {args.rounds} round(s); "
                  "see the script's docstring for pinning.")


if __name__ == "__main__":
    main()
