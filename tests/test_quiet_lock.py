"""The quiet-machine lock (tests/support/quiet.py): a quiet test waits for the running test to end, and
tests that start after it has begun waiting wait for it."""

import threading
import time

from tests.support import quiet


def test_a_quiet_test_waits_for_the_running_one_and_the_next_waits_for_it(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", f"selftest{time.monotonic_ns()}")
    events = []
    release_first = threading.Event()

    def first():
        with quiet.held(quiet=False):
            events.append("first runs")
            release_first.wait(5)
            events.append("first done")

    def quiet_one():
        with quiet.held(quiet=True):
            events.append("quiet runs")
            time.sleep(0.3)
            events.append("quiet done")

    def next_one():
        with quiet.held(quiet=False):
            events.append("next runs")

    threads = [threading.Thread(target=first)]
    threads[0].start()
    time.sleep(0.2)
    threads.append(threading.Thread(target=quiet_one))
    threads[1].start()
    time.sleep(0.2)
    threads.append(threading.Thread(target=next_one))
    threads[2].start()
    time.sleep(0.2)
    assert events == ["first runs"]           # the quiet test waits, and the next test behind it
    release_first.set()
    for thread in threads:
        thread.join(10)
    assert events == ["first runs", "first done", "quiet runs", "quiet done", "next runs"], events
    for path in quiet.lock_paths():
        path.unlink()


def test_without_xdist_nothing_is_locked(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    assert quiet.lock_paths() is None
    with quiet.held(quiet=True), quiet.held(quiet=True):   # would deadlock if it locked
        pass
