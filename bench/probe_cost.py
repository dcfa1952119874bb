"""What one browser probe costs: wall time and peak memory of 4 variants x K=5 page loads on the
local probe site, and the Chromium processes left after 20 probes (must be 0).

    .venv/bin/python bench/probe_cost.py [--runs 5] [--probes 20]

Memory: peak RSS summed over this Python process, Playwright's driver and Chromium's whole process
tree (sampled every 50 ms from /proc; shared pages are counted once per process, so it overstates).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.probe_site import start_probe_site  # noqa: E402
from workers.browser.chromium import ProbeBrowser, parent_pids  # noqa: E402
from workers.browser.probe import run_probe  # noqa: E402
from workers.browser.spec import ProbeSpec  # noqa: E402


def tree(root: int) -> list[int]:
    parents = parent_pids()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def chromium_left() -> list[int]:
    return [pid for pid in tree(os.getpid()) if comm(pid).startswith("chrom")]


class PeakRss(threading.Thread):
    """Samples the RSS of this process and all its descendants (driver, Chromium) every 50 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_kib, self.stop = 0, threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.is_set():
            self.peak_kib = max(self.peak_kib, sum(rss_kib(pid) for pid in tree(me)))
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    with start_probe_site() as site:
        spec = ProbeSpec(host=site.host, https_port=site.https_port, http_port=site.http_port, ip=site.ip,
                         ca_pem=site.ca_pem, runs=args.runs)
        print(f"bench/probe_cost.py --runs {args.runs} --probes {args.probes}; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.2f}")
        sampler = PeakRss()
        sampler.start()
        started = time.monotonic()
        result = run_probe(spec, allow_private=True)  # launches and closes its own Chromium, like the CLI
        wall = time.monotonic() - started
        sampler.stop.set()
        sampler.join()
        assert result["error"] is None, result["error"]
        loads = len(result["loads"])
        print(f"one probe, own browser: {loads} loads in {wall:.2f} s wall ({wall / loads * 1000:.0f} ms/load "
              f"incl. launch), peak RSS python+driver+chromium {sampler.peak_kib / 1024:.0f} MiB")
        med = {k: v["load"]["median"] for k, v in result["summary"].items()}
        print("  median load event (ms): " + ", ".join(f"{k} {v}" for k, v in med.items()))
        print("  increase % HTTPS over HTTP (load): cold {cold}, warm {warm}".format(
            **{m: result["increase_pct"][m].get("load") for m in ("cold", "warm")}))

        started = time.monotonic()
        with ProbeBrowser(spec.ca_pem, {site.host: site.ip}) as browser:
            for _ in range(args.probes // 2):
                assert run_probe(spec, browser=browser, allow_private=True)["error"] is None
        shared = time.monotonic() - started
        started = time.monotonic()
        for _ in range(args.probes - args.probes // 2):
            assert run_probe(spec, allow_private=True)["error"] is None
        owned = time.monotonic() - started
        time.sleep(1.0)
        left = chromium_left()
        print(f"{args.probes // 2} probes on one kept browser: {shared / (args.probes // 2):.2f} s/probe; "
              f"{args.probes - args.probes // 2} probes each launching its own: "
              f"{owned / (args.probes - args.probes // 2):.2f} s/probe")
        print(f"Chromium processes left after {args.probes + 1} probes: {len(left)} {left}")
        if left:
            sys.exit(1)


if __name__ == "__main__":
    main()
