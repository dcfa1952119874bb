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
    assert turnstile_taken(), "the quiet test did not queue behind the running one"
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


def turnstile_taken(seconds: float = 5.0) -> bool:
    """Whether someone holds the turnstile (a quiet test waiting for the lock) within `seconds`."""
    import fcntl

    turnstile_path, _ = quiet.lock_paths()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(turnstile_path, "a") as turnstile:
            try:
                fcntl.flock(turnstile, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        time.sleep(0.01)
    return False


def test_without_xdist_nothing_is_locked(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    assert quiet.lock_paths() is None
    with quiet.held(quiet=True), quiet.held(quiet=True):   # would deadlock if it locked
        pass
