"""Several processes by default (issue 15, item 5): one per usable core, forked when that is safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Every test runs on both engines (Python and C), which must agree (tests/load/conftest.py).
pytestmark = pytest.mark.usefixtures("load_engine")

ROOT = Path(__file__).resolve().parents[2]
NAME = "load_no_resumption"


def python(code: str, *prefix: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1"}
    return subprocess.run([*prefix, sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def loadtest(url: str, *args: str, prefix: tuple[str, ...] = ()) -> dict:
    env = {**os.environ, "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1"}
    done = subprocess.run([*prefix, sys.executable, "manage.py", "loadtest", url, *args, "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["report"]


def test_the_cli_uses_one_process_per_usable_core_and_one_per_8_connections_at_most(tls_lab):
    url = f"http://127.0.0.1:{tls_lab.http_port(NAME)}/health"
    cores = len(os.sched_getaffinity(0))

    wide = loadtest(url, "-n", "200", "-c", "16")
    narrow = loadtest(url, "-n", "200", "-c", "7")
    pinned = loadtest(url, "-n", "200", "-c", "16", prefix=("taskset", "-c", "0"))
    told = loadtest(url, "-n", "200", "-c", "16", "--processes", "1")

    assert (wide["processes"], wide["complete_requests"], wide["failed_requests"]) == (min(cores, 2), 200, 0)
    assert narrow["processes"] == 1, "7 connections do not fill a core: no split"
    assert pinned["processes"] == 1, "taskset leaves one core: one process"
    assert told["processes"] == 1


def test_children_are_forked_by_a_single_threaded_caller_and_spawned_by_one_with_threads():
    done = python("""
        import threading, time
        from workers.load.client import start_method
        print(start_method())
        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
        print(start_method())
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fork", "spawn"]


def test_forked_and_spawned_children_both_give_exact_totals(tls_lab):
    port = tls_lab.http_port(NAME)
    code = f"""
        import sys, threading, time
        from workers.load.client import run_load
        from workers.load.spec import LoadSpec
        if sys.argv[-1] == "thread":
            threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        spec = LoadSpec(scheme="http", host="localhost", ip="127.0.0.1", port={port}, path="/health",
                        requests=301, concurrency=4, processes=2, keepalive=True)
        result = run_load(spec)
        print(result.counters.complete, result.counters.failed, result.processes, len(result.samples["total"]))
    """
    for mode in ("single", "thread"):
        env = {**os.environ, "TLSAUDIT_DEV": "1"}
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), mode], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["301", "0", "2", "301"], (mode, done.stdout)
