"""A thread-aware CPU profile of a busy worker process (stdlib only; py-spy is not installed here).

cProfile sees one thread, and a scan pool's CPU is spread over hundreds (Celery's pool threads,
sslyze's connection threads, our probes'). So every thread gets its own cProfile, timed by that
thread's CPU clock (time.thread_time: waiting costs nothing), started when the thread starts and
merged into one profile when it ends. A sampler reading other threads' frames was tried first:
walking sys._current_frames() while those threads run crashed CPython 3.11.

    BENCH_CPU_PROFILE=DIR python -m bench.stack worker ...   # bench/stack.py starts it; DIR/cpu-PID.prof
    .venv/bin/python bench/cpu_profile.py DIR/cpu-PID.prof [--top 40]

The totals are inflated by the profiler itself (a clock read per call): read them as shares.
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import os
import pstats
import threading
import time
from pathlib import Path


class ThreadProfiles:
    def __init__(self, out: Path):
        self.out = out
        self.lock = threading.Lock()
        self.merged: pstats.Stats | None = None
        self.threads = 0

    def add(self, profile: cProfile.Profile) -> None:
        with self.lock:
            self.threads += 1
            if self.merged is None:
                self.merged = pstats.Stats(profile)
            else:
                self.merged.add(profile)

    def install(self) -> None:
        """Profile every thread started from now on, and this one."""
        boot = threading.Thread._bootstrap_inner
        profiles = self

        def profiled_bootstrap(thread):
            profile = cProfile.Profile(time.thread_time)
            profile.enable()
            try:
                boot(thread)
            finally:
                profile.disable()
                profiles.add(profile)

        threading.Thread._bootstrap_inner = profiled_bootstrap
        main = cProfile.Profile(time.thread_time)
        main.enable()

        def dump():
            main.disable()
            self.add(main)
            with self.lock:
                self.merged.dump_stats(str(self.out))

        atexit.register(dump)


def start_from_environment() -> ThreadProfiles | None:
    """Profile this process if BENCH_CPU_PROFILE names a directory; written there at exit."""
    directory = os.environ.get("BENCH_CPU_PROFILE")
    if not directory:
        return None
    Path(directory).mkdir(parents=True, exist_ok=True)
    profiles = ThreadProfiles(Path(directory) / f"cpu-{os.getpid()}.prof")
    profiles.install()
    return profiles


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="print a merged per-thread CPU profile")
    parser.add_argument("profile", nargs="+")
    parser.add_argument("--top", type=int, default=40)
    options = parser.parse_args()
    stats = pstats.Stats(*options.profile)
    stats.sort_stats("tottime").print_stats(options.top)
    stats.sort_stats("cumulative").print_stats(options.top)
