"""One audit at internet latency (issue #16 item 3): ours against the raw sslyze CLI, same target, same run.

    .venv/bin/python bench/audit_latency.py [--rtt 50] [--target b_tls10_enabled] [--runs 5]

Stand-alone (no BENCH marker: about 40 s a round). Starts the TLS lab behind the latency lab's link
(tests/support/wan.py) and, alternating round by round (ours first in even rounds, sslyze first in odd
ones), runs in new processes:
- ours: `manage.py audit localhost:PORT --ip LINK --ca-file CA --json` (all 18 sslyze commands, a version
  refused outright answered by its refusal instead of a suite-by-suite test, and our probes), checked
  for the fixture's grade; its own `duration_s` (the scan, without Python's start) too;
- sslyze: `python -m sslyze` with all 18 commands over the same target, checked COMPLETED.
Prints every round, the medians and the ratio ours / sslyze (goal <= 0.3, #27), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.audit_speed import ALL_SSLYZE_FLAGS, SERVICE_VARIABLES  # noqa: E402
from tests.support.tls_servers import require_nginx, start_lab  # noqa: E402
from tests.support.wan import start_wan  # noqa: E402

PYTHON = sys.executable


def ours(port: int, ip: str, ca_file: Path, grade: str) -> tuple[float, float]:
    """Wall time of one `manage.py audit`, and the scan's own duration it reports."""
    env = {**{k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}, "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1"}
    started = time.perf_counter()
    done = subprocess.run([PYTHON, "manage.py", "audit", f"localhost:{port}", "--ip", ip, "--ca-file", str(ca_file),
                           "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        result = json.loads(done.stdout)  # one target: one JSON object (indented)
    except ValueError:
        result = {}
    if done.returncode != 0 or result.get("grade") != grade:
        sys.exit(f"our audit went wrong (exit {done.returncode}, grade {result.get('grade')}, expected {grade}):\n"
                 f"{done.stdout[-800:]}{done.stderr[-800:]}")
    return wall, float(result.get("duration_s") or "nan")


def sslyze(port: int, ip: str, ca_file: Path) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "sslyze.json"
        started = time.perf_counter()
        done = subprocess.run([PYTHON, "-m", "sslyze", f"--json_out={out}", "--certinfo_ca_file", str(ca_file),
                               *ALL_SSLYZE_FLAGS, f"localhost:{port}{{{ip}}}"], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - started
        results = json.loads(out.read_text())["server_scan_results"] if out.exists() else []
    if [r["scan_status"] for r in results] != ["COMPLETED"]:
        sys.exit(f"sslyze's scan did not complete (exit {done.returncode}): {done.stdout[-800:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtt", type=float, default=50.0)
    parser.add_argument("--target", default="b_tls10_enabled")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    require_nginx()
    lab = start_lab()
    try:
        with start_wan(args.rtt) as link:
            port, grade = lab.port(args.target), lab.spec(args.target).grade
            walls, durations, raw = [], [], []
            for round_ in range(args.runs):
                order = ("ours", "sslyze") if round_ % 2 == 0 else ("sslyze", "ours")
                for who in order:
                    if who == "ours":
                        wall, duration = ours(port, link.host, lab.ca_file, grade)
                        walls.append(wall)
                        durations.append(duration)
                    else:
                        raw.append(sslyze(port, link.host, lab.ca_file))
                print(f"round {round_}: ours {walls[-1]:.1f} s (scan {durations[-1]:.1f} s), sslyze CLI {raw[-1]:.1f} s,"
                      f" load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        lab.stop()
    ratios = [a / b for a, b in zip(walls, raw)]
    print(f"{args.target} at {args.rtt:g} ms RTT, {args.runs} alternated rounds: ours median {statistics.median(walls):.1f} s "
          f"[{min(walls):.1f}-{max(walls):.1f}] (scan alone {statistics.median(durations):.1f} s), sslyze CLI median "
          f"{statistics.median(raw):.1f} s [{min(raw):.1f}-{max(raw):.1f}]; ours / sslyze per round: median "
          f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}] (goal <= 0.3, #27); "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
