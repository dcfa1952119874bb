"""The latency lab (tests/support/wan.py) measured: delay accuracy, its own cost, and round trips at 50 ms.

    .venv/bin/python bench/wan_lab.py [--quick] [--json OUT]

1. Accuracy at 0/20/50/150 ms RTT: TCP connect time and an echo round trip (the echo server in its own
   process), error = measured - set RTT, p50/p99; and how late the line released packets (its stats).
2. Cost: ab against the TLS lab's nginx (HTTP /health), straight to 127.0.0.1 and through a 0 ms link,
   keep-alive and a new connection per request; the delay line's CPU per request and per packet.
3. Round trips at 50 ms RTT: our handshake timer (TLS 1.2 full, TLS 1.3 full, TLS 1.2 resumed, TLS 1.3
   after a HelloRetryRequest) and our load engine (new HTTPS connection with TLS 1.2 and 1.3, keep-alive),
   each phase as a multiple of the RTT measured from the run's TCP connects: median [p25, p75].
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.contract import Recorder, add_arguments  # noqa: E402
from tests.support.tls_servers import require_nginx, start_lab  # noqa: E402
from tests.support.wan import LAB_RTTS_MS, start_wan  # noqa: E402
from tlsaudit.domain.handshake_stats import decode  # noqa: E402
from tlsaudit.domain.round_trips import estimate_rtt_from_histogram, estimate_rtt_ms  # noqa: E402
from workers.load.client import run_load  # noqa: E402
from workers.load.handshake import run_handshakes  # noqa: E402
from workers.load.spec import HandshakeSpec, LoadSpec  # noqa: E402

BENCH = {"title": "Latency lab: accuracy, cost, round trips at 50 ms", "order": 45,
         "quick_timeout_s": 240, "full_timeout_s": 1200}
ECHO = """
import socket, threading
srv = socket.create_server(("127.0.0.1", 0), backlog=1024)
print(srv.getsockname()[1], flush=True)
def serve(conn):
    with conn:
        try:
            while data := conn.recv(65536):
                conn.sendall(data)
        except OSError:
            pass
while True:
    threading.Thread(target=serve, args=(srv.accept()[0],), daemon=True).start()
"""
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


# --- 1. accuracy -----------------------------------------------------------------------------------

def accuracy(rec: Recorder, echo_port: int, quick: bool) -> None:
    for rtt in LAB_RTTS_MS:
        count = (20 if quick else 60) if rtt == 150 else (60 if quick else 200)
        with start_wan(rtt) as link:
            connects, echoes = [], []
            for _ in range(count):
                t0 = time.perf_counter()
                with socket.create_connection((link.host, echo_port), timeout=5) as sock:
                    t1 = time.perf_counter()
                    sock.sendall(b"ping")
                    sock.recv(16)
                    t2 = time.perf_counter()
                connects.append((t1 - t0) * 1000 - rtt)
                echoes.append((t2 - t1) * 1000 - rtt)
            late = link.stats()["late_us"]
        print(f"RTT {rtt:3} ms: connect error p50 {pct(connects, .5):+.3f} p99 {pct(connects, .99):+.3f} ms; "
              f"echo error p50 {pct(echoes, .5):+.3f} p99 {pct(echoes, .99):+.3f} ms; line late p50 {late['p50']} "
              f"p99 {late['p99']} µs ({count} samples)")
        rec.figure(f"added delay error, TCP connect, RTT {rtt} ms, p50", pct(connects, .5), "ms")
        rec.figure(f"added delay error, TCP connect, RTT {rtt} ms, p99", pct(connects, .99), "ms")
        rec.figure(f"added delay error, echo, RTT {rtt} ms, p50", pct(echoes, .5), "ms")
        rec.figure(f"added delay error, echo, RTT {rtt} ms, p99", pct(echoes, .99), "ms")
        rec.figure(f"delay line release lateness, RTT {rtt} ms, p99", late["p99"], "µs")


# --- 2. cost ---------------------------------------------------------------------------------------

def ab(host: str, port: int, n: int, c: int, keepalive: bool) -> float:
    args = ["ab", "-q", "-n", str(n), "-c", str(c), *(["-k"] if keepalive else []), f"http://{host}:{port}/health"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300).stdout
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    if failed:
        raise SystemExit(f"ab: {failed} failed requests through {host}")
    return float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))


def cost(rec: Recorder, lab, quick: bool) -> None:
    port = lab.http_port("load_no_resumption")
    for keepalive, n in ((True, 5000 if quick else 20000), (False, 2000 if quick else 5000)):
        mode = "keep-alive" if keepalive else "new connection"
        with start_wan(0) as link:
            direct = ab("127.0.0.1", port, n, 50, keepalive)
            before, stats0 = cpu_seconds(link.process.pid), link.stats()
            linked = ab(link.host, port, n, 50, keepalive)
            cpu = cpu_seconds(link.process.pid) - before
            stats = link.stats()
        packets = sum(stats[d]["packets"] - stats0[d]["packets"] for d in ("to_server", "to_client"))
        print(f"ab -c 50 {mode}: {direct:.0f} req/s direct, {linked:.0f} through a 0 ms link "
              f"({linked / direct:.2f}x); line CPU {cpu * 1e6 / n:.0f} µs/request, {cpu * 1e6 / packets:.1f} µs/packet, "
              f"{packets / n:.1f} packets/request")
        rec.figure(f"ab -c 50 {mode}, requests/s through a 0 ms link / direct", linked / direct, "x")
        rec.figure(f"ab -c 50 {mode}, requests/s through a 0 ms link", linked, "req/s")
        rec.figure(f"delay line CPU per request, {mode}", cpu * 1e6 / n, "µs")
        rec.figure(f"delay line CPU per packet, {mode}", cpu * 1e6 / packets, "µs")


# --- 3. round trips at 50 ms -----------------------------------------------------------------------

def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{pct(values, .25):.2f}, {pct(values, .75):.2f}]"


def handshake_multiples(rec: Recorder, lab, link, count: int) -> None:
    cases = (("TLS 1.2 full", "1.2", "load_no_resumption", False), ("TLS 1.3 full", "1.3", "load_no_resumption", False),
             ("TLS 1.2 resumed", "1.2", "load_session_cache", True),
             ("TLS 1.3 HelloRetryRequest", "1.3", "a_plus_ecdsa_p384_only", False))
    for name, version, server, resume in cases:
        result = run_handshakes(HandshakeSpec(host="localhost", ip=link.host, port=lab.port(server), version=version,
                                              agents=1, per_agent=count, resume=resume))
        rtt = estimate_rtt_from_histogram(result["histograms"]["tcp"])
        histogram = decode(result["histograms"]["tls"])
        values = [histogram.get_value_at_percentile(p) / 1000 / rtt for p in (25, 50, 75)]
        print(f"{name:26} at RTT {rtt:.1f} ms: {values[1]:.2f} RTT [{values[0]:.2f}, {values[2]:.2f}] "
              f"(n={result['count']}, failures {result['failures']})")
        rec.figure(f"{name} handshake at 50 ms, median RTT multiple", values[1], "RTT",
                   note=f"p25-p75 {values[0]:.2f}-{values[2]:.2f}, n={result['count']}, RTT {rtt:.1f} ms")


def load_multiples(rec: Recorder, lab, link, count: int) -> None:
    port = lab.port("load_no_resumption")
    for name, version, keepalive in (("HTTPS new connection TLS 1.2", "1.2", False),
                                     ("HTTPS new connection TLS 1.3", "1.3", False),
                                     ("HTTPS keep-alive TLS 1.3", "1.3", True)):
        result = run_load(LoadSpec(scheme="https", host="localhost", ip=link.host, port=port, requests=count,
                                   concurrency=1, keepalive=keepalive, tls_version=version))
        rtt = (estimate_rtt_ms(tcp_connects(link.host, port)) if keepalive
               else estimate_rtt_from_histogram(result.histograms["tcp"]))
        phases = {p: [v / 1000 / rtt for v in (result.samples[p][1:] if keepalive else result.samples[p])]
                  for p in ("tcp", "tls", "waiting", "total") if len(result.samples[p]) > 1}
        print(f"{name:30} at RTT {rtt:.1f} ms: " + "; ".join(f"{p} {spread(v)}" for p, v in phases.items()))
        rec.figure(f"{name} at 50 ms, total, median RTT multiple", statistics.median(phases["total"]), "RTT",
                   note=f"p25-p75 {pct(phases['total'], .25):.2f}-{pct(phases['total'], .75):.2f}, RTT {rtt:.1f} ms")


def tcp_connects(host: str, port: int, count: int = 5) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        socket.create_connection((host, port), timeout=5).close()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    require_nginx()
    rec = Recorder(BENCH["title"], args)
    echo = subprocess.Popen([sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True)
    try:
        echo_port = int(echo.stdout.readline())
        with start_lab() as lab:
            accuracy(rec, echo_port, args.quick)
            cost(rec, lab, args.quick)
            with start_wan(50) as link:
                handshake_multiples(rec, lab, link, 10 if args.quick else 40)
                load_multiples(rec, lab, link, 10 if args.quick else 40)
    finally:
        echo.kill()
        echo.wait()
    rec.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
