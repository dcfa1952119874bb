"""Fixtures of the browser-probe tests: a real Celery worker on the `browser` queue (threads pool,
the real Redis) that a test can stop, a lab site Chromium trusts, and a count of the Chromium
processes this test session started."""

import os
import re
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import waiting
from tests.support.sites import added_site

MARKER = "TLSAUDIT_PROBE_TEST"
LAB = "a_plus_rsa_hsts"


@pytest.fixture
def browser_worker(worker_pool):
    """browser_worker() -> a context manager in which the session's worker on the `browser` queue (one
    thread) consumes; leaving it waits for the worker to be idle, pauses it and closes the process's
    Chromium, as a stopped worker would (tests/support/workers.py)."""
    worker_pool.app.control.purge()

    @contextmanager
    def run():
        try:
            yield worker_pool.get(("browser",), 1)
        finally:
            worker_pool.settle()

    yield run
    from workers.browser.host import HOST

    HOST.close()  # a test that failed inside the worker block still leaves no browser behind


@pytest.fixture
def probe_site(lab_org, tls_lab):
    """localhost on the lab's A+ server (HTTPS and its plain-HTTP port), pinned to 127.0.0.1, in
    Agency A, which trusts the lab's CA."""

    return added_site(organization=lab_org, hostname="localhost", https_port=tls_lab.port(LAB),
                               http_port=tls_lab.http_port(LAB), pinned_ip="127.0.0.1", name="Lab")


def wait_finished(probe, timeout=120.0):
    return waiting.wait_finished(probe, timeout, lambda p: p.current_step)


# --- Chromium processes --------------------------------------------------------------------

@pytest.fixture(autouse=True)
def chromium_marker(monkeypatch):
    """Every process started from here on inherits this test's marker in its environment, so the
    Chromium processes it starts can be found even after they were re-parented."""
    token = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, token)
    return token


def process_table() -> dict[int, tuple[int, str]]:
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        table[int(entry.name)] = (int(stat[stat.rindex(")") + 2:].split()[1]), comm)
    return table


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
