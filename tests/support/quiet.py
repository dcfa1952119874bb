"""A quiet machine for the few tests that assert a measurement's verdict (`@pytest.mark.quiet`).

Under xdist the timing group keeps such tests apart from each other, but the other worker goes on with
its own tests (load engines, Chromium, scans) on the same cores, and a browser probe's page loads then
carry that worker's bursts: CI saw a 10 s probe behind 50 ms answer "the runs disagree" for a cold load
it calls at -37 % [-41, -33] on a quiet machine. A measurement is made on a quiet machine
(../shared/measurement.md, benchmark hygiene), so a `quiet` test holds an exclusive lock for its run and
every other test holds it shared: the other worker finishes its current test and waits.

The lock spans each test's whole run (tests/conftest.py's pytest_runtest_protocol), its module, package and
session fixtures included. Readers pass a turnstile first, so a waiting quiet test is not starved by the
next test's shared lock. Without xdist (one process) there is nobody to wait for, and the lock is not taken.

The seats (below) do the same, more gently, for every measurement of the "timing" group: at most one other
busy test beside it, however many processes the run has. A plugin (tests/conftest.py's pytest_plugins), so
tests/test_xdist_groups.py can run it in a small suite of its own.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest


def lock_paths() -> tuple[Path, Path] | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    base = Path(tempfile.gettempdir()) / f"tlsaudit-quiet-{run}"
    return base.with_suffix(".turnstile"), base.with_suffix(".lock")


@contextmanager
def held(quiet: bool):
    """The run's lock for one test: exclusive when `quiet`, else shared (behind the turnstile)."""
    paths = lock_paths()
    if paths is None:
        yield
        return
    turnstile_path, lock_path = paths
    with open(turnstile_path, "a") as turnstile, open(lock_path, "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if quiet:
            fcntl.flock(lock, fcntl.LOCK_EX)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        if not quiet:
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# --- seats: how many tests may run beside the measurements ------------------------------------------
#
# With three processes on two cores (make test's default), a measurement of the "timing" group would share
# the cores with two other tests: CI-like runs saw a TLS 1.3 handshake behind 50 ms take 1.93 RTT. So the
# processes share one seat per process, every test of the "rest" takes one for its run, and the timing group
# holds all seats but one from its first test to its last (one acquisition per group, not per test: waiting
# for a seat per test would cost the residue of a long test 180 times). Beside a measurement there is then
# one other test of the rest at a time, as with two processes; the deadline tests take no seat (they mostly
# sleep, and holding them up would lengthen the run's longest chain).

class Seats:
    POLL_S = 0.05

    def __init__(self, count: int, base: Path):
        self.count = count
        self.paths = [base.with_suffix(f".seat{i}") for i in range(count)]
        self.open: dict[int, object] = {}

    def _try(self, index: int) -> bool:
        handle = open(self.paths[index], "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self.open[index] = handle
        return True

    def release(self, index: int) -> None:
        handle = self.open.pop(index, None)
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def take_any(self) -> int:
        """One free seat, whichever (a test of the rest)."""
        while True:
            for index in range(self.count):
                if index not in self.open and self._try(index):
                    return index
            time.sleep(self.POLL_S)

    def take_all_but_one(self) -> None:
        """Seats 1..count-1 for the measurements (kept until release_measuring)."""
        for index in range(1, self.count):
            while index not in self.open and not self._try(index):
                time.sleep(self.POLL_S)

    @property
    def measuring(self) -> bool:
        return self.count > 1 and all(i in self.open for i in range(1, self.count))

    def release_measuring(self) -> None:
        for index in range(1, self.count):
            self.release(index)


_seats: Seats | None = None


def seats() -> Seats | None:
    global _seats
    paths = lock_paths()
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if paths is None or count < 2:
        return None
    if _seats is None:
        _seats = Seats(count, paths[1])
    return _seats


@contextmanager
def seated(kind: str, next_kind: str | None):
    """A test's seat by its kind: "measuring" (the timing group: all seats but one, kept while the next test
    is measuring too), "rest" (one seat for the test's run) or "deadline" (none)."""
    pool = seats()
    if pool is None or kind == "deadline":
        yield
        return
    if kind == "measuring":
        pool.take_all_but_one()
        try:
            yield
        finally:
            if next_kind != "measuring":
                pool.release_measuring()
        return
    index = pool.take_any()
    try:
        yield
    finally:
        pool.release(index)


def seat_kind(item) -> str | None:
    """What a test asks of the seats: the timing group measures, the deadlines group mostly sleeps, the rest
    keeps the cores busy."""
    if item is None:
        return None
    group = item.get_closest_marker("xdist_group")
    name = (group.args[0] if group.args else group.kwargs.get("name")) if group else None
    return {"timing": "measuring", "deadlines": "deadline"}.get(name, "rest")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Both locks span the whole test, its module, package and session fixtures included (another test's
    first use of a lab or a browser would otherwise start beside the measurement)."""
    with held(quiet=item.get_closest_marker("quiet") is not None), seated(seat_kind(item), seat_kind(nextitem)):
        yield
