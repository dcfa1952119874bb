"""One way for tests to wait for something another process does (a worker, a server, the kernel).

Every helper polls until its condition holds or its deadline passes; the ones that fail say what was
awaited and what was last seen. None of them sleeps a fixed time: a test that must show that
something did NOT happen waits for a positive sign that the work it raced is over (a row finished,
a log line, a counter), then checks.
"""

from __future__ import annotations

import time
from typing import Any, Callable

INTERVAL_S = 0.1


def wait_until(probe: Callable[[], Any], timeout: float = 30.0, what: str | Callable[[], str] = "the condition",
               interval: float = INTERVAL_S):
    """Poll `probe()` until it returns something truthy (returned); else fail naming `what` (a string,
    or a function called at the failure for the details of that moment)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            described = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {described}")
        time.sleep(interval)


def eventually(condition: Callable[[], Any], seconds: float = 30.0, interval: float = INTERVAL_S):
    """Poll `condition()` until it is truthy or the time is up; its last value (for `assert`)."""
    return settled(condition, bool, seconds, interval)


def settled(read: Callable[[], Any], ok: Callable[[Any], bool], seconds: float = 10.0,
            interval: float = INTERVAL_S):
    """Poll `read()` until `ok(value)` or the time is up; the last value, for the test to assert on."""
    deadline = time.monotonic() + seconds
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(interval)
        value = read()
    return value


def wait_finished(row, timeout: float = 60.0, detail: Callable[[Any], Any] | None = None,
                  interval: float = 0.2):
    """Reload a model row (audit, run, probe, report) until `row.is_finished`; else fail with its status
    and `detail(row)` (its progress, current step...)."""
    def finished():
        row.refresh_from_db()
        return row.is_finished

    def stuck() -> str:
        extra = f": {detail(row)}" if detail is not None else ""
        return f"{row} to finish (still {row.status}){extra}"

    wait_until(finished, timeout, stuck, interval)
    return row


class SchedulingLag:
    """How late the machine wakes a sleeping thread, measured while a timing test runs: a band that must
    hold on a loaded machine (the other test process, a build beside it) is widened by `worst` seconds,
    what the load measurably cost, instead of by a guess.

        with SchedulingLag() as lag:
            ...timed work...
        assert period <= 0.5 + lag.worst
    """

    TICK_S = 0.02

    def __init__(self):
        import threading

        self.worst = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watch, name="scheduling-lag", daemon=True)

    def watch(self) -> None:
        while not self.stop.is_set():
            asked = time.monotonic()
            time.sleep(self.TICK_S)
            self.worst = max(self.worst, time.monotonic() - asked - self.TICK_S)

    def __enter__(self) -> "SchedulingLag":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(1)
