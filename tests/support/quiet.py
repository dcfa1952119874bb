"""Seats: how many busy tests may run beside a measurement, whatever the number of xdist processes.

The "timing" group (tests/conftest.py) keeps measurements apart from each other, but the other processes go
on with their own tests (load engines, Chromium, scans) on the same two cores. With three processes a TLS
1.3 handshake behind 50 ms read 1.93 RTT with two busy tests beside the latency lab, and CI saw a 10 s
browser probe behind 50 ms answer "the runs disagree" for a cold load it calls -37 % [-41, -33] on a quiet
machine. A measurement is made on a quiet machine (../shared/measurement.md, benchmark hygiene), so the
processes share one seat each:

- a test of the rest (the busy kind: browsers, load engines, scans) holds one seat for its run;
- the timing group holds every seat but one from its first test to its last (one acquisition per group, not
  per test: waiting for a free seat before each of 180 measurements would cost the tail of a long test each
  time), so one busy test at most runs beside a measurement, as with two processes;
- a `@pytest.mark.quiet` test (a measurement that gives a verdict) also takes the last seat: nothing of the
  rest runs beside it;
- the deadlines group takes none: its tests mostly sleep (hostile servers, recovery windows), and holding
  them up would lengthen the run's longest chain.

Seats are flock()ed files named after the run, taken behind a turnstile, so a measurement waiting for its
seats is not starved by the next test of the rest. Each hold spans the test's whole run (this plugin's
pytest_runtest_protocol), its module, package and session fixtures included: another test's first use of
a lab or a browser would otherwise start beside the measurement. Without xdist there is nobody to wait for.
A plugin (tests/conftest.py's pytest_plugins), so tests/test_xdist_groups.py can run it in a small suite.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

POLL_S = 0.05


class Seats:
    def __init__(self, count: int, base: Path):
        self.count = count
        self.paths = [base.with_suffix(f".seat{i}") for i in range(count)]
        self.turnstile = base.with_suffix(".turnstile")
        self.open: dict[int, object] = {}

    @contextmanager
    def _in_turn(self):
        with open(self.turnstile, "a") as turnstile:
            fcntl.flock(turnstile, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(turnstile, fcntl.LOCK_UN)

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
        with self._in_turn():
            while True:
                for index in range(self.count):
                    if index not in self.open and self._try(index):
                        return index
                time.sleep(POLL_S)

    def take(self, indexes) -> None:
        """These seats, waiting for each (kept until released). Seats already held cost nothing: the timing
        group keeps its seats from test to test and must not queue behind a busy test each time."""
        wanted = [index for index in indexes if index not in self.open]
        if not wanted:
            return
        with self._in_turn():
            for index in wanted:
                while index not in self.open and not self._try(index):
                    time.sleep(POLL_S)


def pool_for(environ, by_group: bool) -> Seats | None:
    """The run's seats, one per process, or None: outside xdist, with one process, or with another --dist than
    loadgroup (two processes measuring could each keep seats the other waits for)."""
    run, count = environ.get("PYTEST_XDIST_TESTRUNUID"), int(environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not run or count < 2 or not by_group:
        return None
    return Seats(count, Path(tempfile.gettempdir()) / f"tlsaudit-seats-{run}")


SEATS = pytest.StashKey["Seats | None"]()


@contextmanager
def seated(pool: Seats | None, kind: str | None, next_kind: str | None, quiet: bool = False):
    """A test's seats by its kind: "measuring" (the timing group: all seats but the first, kept while the
    next test is measuring too; a quiet one the first as well), "rest" (one seat for the test's run) or
    "deadline" (none)."""
    if pool is None or kind == "deadline":
        yield
        return
    if kind == "measuring":
        pool.take(range(1, pool.count))
        if quiet:
            pool.take([0])
        try:
            yield
        finally:
            pool.release(0)
            if next_kind != "measuring":
                for index in range(1, pool.count):
                    pool.release(index)
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


def pytest_configure(config):
    # On an xdist worker `dist` reads "no" (pytest-xdist's setup_config) and `loadgroup` says what the run uses.
    by_group = bool(getattr(config.option, "loadgroup", False)) or config.getoption("dist", "no") == "loadgroup"
    config.stash[SEATS] = pool_for(os.environ, by_group)


def pytest_collection_finish(session):
    """A quiet test is a measurement: it must be in the timing group, where the seats keep the rest away."""
    stray = [item.nodeid for item in session.items
             if item.get_closest_marker("quiet") and seat_kind(item) != "measuring"]
    if stray:
        raise pytest.UsageError(f"{stray[0]} is marked quiet but is not in the timing group (tests/conftest.py's "
                                "TIMING_FOLDERS or a `timing` mark): no seat would keep the busy tests away from it.")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    quiet = item.get_closest_marker("quiet") is not None
    with seated(item.config.stash[SEATS], seat_kind(item), seat_kind(nextitem), quiet=quiet):
        yield
