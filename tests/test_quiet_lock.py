"""The seats (tests/support/quiet.py), three processes played by three Seats on the same files: a quiet
measurement waits for the running busy test to end, the busy test that asks after it waits for it, and a
deadline test waits for nothing. (tests/test_xdist_groups.py checks the same with real xdist processes.)"""

import threading
import time

from tests.support import quiet


def test_a_quiet_measurement_waits_for_the_busy_test_and_the_next_busy_test_waits_for_it(tmp_path):
    base = tmp_path / "run"
    busy_a, measuring, busy_b = (quiet.Seats(3, base) for _ in range(3))
    events, release_a = [], threading.Event()

    def first():
        seat = busy_a.take_any()
        events.append("busy A runs")
        release_a.wait(5)
        events.append("busy A done")
        busy_a.release(seat)

    def quiet_one():
        measuring.take([1, 2])
        measuring.take([0])
        events.append("quiet runs")
        time.sleep(0.3)
        events.append("quiet done")
        for seat in (0, 1, 2):
            measuring.release(seat)

    def next_one():
        seat = busy_b.take_any()
        events.append("busy B runs")
        busy_b.release(seat)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    time.sleep(0.2)
    threads.append(threading.Thread(target=quiet_one))
    threads[1].start()
    assert turnstile_taken(base), "the quiet measurement did not queue behind the busy test"
    threads.append(threading.Thread(target=next_one))
    threads[2].start()
    time.sleep(0.3)
    assert events == ["busy A runs"]          # the quiet one waits, and the next busy test behind it
    release_a.set()
    for thread in threads:
        thread.join(10)
    assert events == ["busy A runs", "busy A done", "quiet runs", "quiet done", "busy B runs"], events


def test_a_deadline_test_runs_whatever_the_seats(tmp_path):
    holder, ours = quiet.Seats(2, tmp_path / "run"), quiet.Seats(2, tmp_path / "run")
    holder.take([0, 1])
    started = time.monotonic()
    with quiet.seated(ours, "deadline", None):
        assert time.monotonic() - started < 0.5 and not ours.open
    holder.release(0), holder.release(1)
    with quiet.seated(ours, "rest", None):   # and a busy test gets a seat once one is free
        assert len(ours.open) == 1
    assert not ours.open


def turnstile_taken(base, seconds: float = 5.0) -> bool:
    """Whether someone holds the turnstile (a measurement waiting for its seats) within `seconds`."""
    import fcntl

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(base.with_suffix(".turnstile"), "a") as turnstile:
            try:
                fcntl.flock(turnstile, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        time.sleep(0.01)
    return False


def test_without_xdist_or_with_one_process_no_seat_is_taken():
    assert quiet.pool_for({}, by_group=True) is None
    assert quiet.pool_for({"PYTEST_XDIST_TESTRUNUID": "run", "PYTEST_XDIST_WORKER_COUNT": "1"}, by_group=True) is None
    with quiet.seated(None, "measuring", "measuring", quiet=True), quiet.seated(None, "rest", None):  # nothing held
        pass


def test_seats_already_held_are_kept_without_queueing(tmp_path):
    """The timing group keeps its seats from test to test: taking them again must not wait for the turnstile
    (where a busy test may be waiting for a seat of its own)."""
    import fcntl

    measuring = quiet.Seats(3, tmp_path / "run")
    measuring.take([1, 2])
    with open(measuring.turnstile, "a") as turnstile:
        fcntl.flock(turnstile, fcntl.LOCK_EX)      # someone else in the turnstile
        started = time.monotonic()
        measuring.take([1, 2])
        assert time.monotonic() - started < 0.2
        fcntl.flock(turnstile, fcntl.LOCK_UN)


def test_seats_only_when_loadgroup_keeps_each_group_on_one_process():
    xdist = {"PYTEST_XDIST_TESTRUNUID": "run", "PYTEST_XDIST_WORKER_COUNT": "3"}
    assert quiet.pool_for(xdist, by_group=False) is None
    assert quiet.pool_for(xdist, by_group=True).count == 3
