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
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


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
