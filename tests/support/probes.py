"""Helpers of the browser-probe tests: waiting for a probe, and the Chromium processes a test started
(marked through their environment, so they are found even after they were re-parented)."""

import os
import re
import time
from pathlib import Path

from tests.support import waiting
from tests.support.processes import process_table

MARKER = "TLSAUDIT_PROBE_TEST"
LAB = "a_plus_rsa_hsts"


def wait_finished(probe, timeout=120.0):
    return waiting.wait_finished(probe, timeout, lambda p: p.current_step)


def chromium_processes(token: str) -> list[int]:
    """Chromium processes carrying the marker, or descending from this (the test) process."""
    table = process_table()
    needle = f"{MARKER}={token}".encode()
    found = set()
    for pid, (_, comm) in table.items():
        if not re.match(r"chrom", comm):
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ or descends_from(pid, os.getpid(), table):
            found.add(pid)
    return sorted(found)


def descends_from(pid: int, root: int, table) -> bool:
    seen = set()
    while pid in table and pid not in seen:
        seen.add(pid)
        pid = table[pid][0]
        if pid == root:
            return True
    return False


def wait_no_chromium(token: str, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := chromium_processes(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
