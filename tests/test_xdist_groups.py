"""The suite's serial groups (tests/conftest.py: "timing", "deadlines") rely on pytest-xdist's
--dist=loadgroup. With pytest 9.2 it silently stopped grouping (pytest-xdist #1386) and the wall-clock
tests ran beside one another for a while unnoticed. This runs a small suite of its own under the
installed pytest and pytest-xdist and checks that a group stays on one worker."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

GROUPED = '''
import time
import pytest

@pytest.mark.xdist_group("timing")
@pytest.mark.parametrize("n", range(6))
def test_grouped(n):
    time.sleep(0.05)

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    time.sleep(0.05)
'''


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    (tmp_path / "test_inner.py").write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist=loadgroup", "-v", "-p", "no:cacheprovider",
                          "-p", "no:django", "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    placed = re.findall(r"\[(gw\d)\].*PASSED .*::(test_\w+)\[\d\](@\w+)?", run.stdout)
    grouped = {(worker, suffix) for worker, name, suffix in placed if name == "test_grouped"}
    assert len([p for p in placed if p[1] == "test_grouped"]) == 6, run.stdout[-2000:]
    assert grouped in ({("gw0", "@timing")}, {("gw1", "@timing")}), f"the group was split or lost: {grouped}"


SEATED = '''
import json, os, time
import pytest

def record(kind, n):
    started = time.monotonic()
    time.sleep(0.25)
    with open(os.environ["SEAT_LOG"], "a") as log:
        log.write(json.dumps([kind, n, started, time.monotonic()]) + "\\n")

@pytest.mark.xdist_group("timing")
@pytest.mark.parametrize("n", range(6))
def test_measuring(n):
    record("measuring", n)

@pytest.mark.xdist_group("timing")
@pytest.mark.quiet
def test_quiet_measuring():
    record("quiet", 0)

@pytest.mark.xdist_group("deadlines")
@pytest.mark.parametrize("n", range(6))
def test_deadline(n):
    record("deadline", n)

@pytest.mark.parametrize("n", range(24))
def test_rest(n):
    record("rest", n)
'''


def busiest(intervals: list[tuple[float, float]], within: tuple[float, float]) -> int:
    """The most intervals running at one instant inside `within`."""
    low, high = within
    points = sorted({max(s, low) for s, e in intervals if s < high and e > low})
    return max((sum(1 for s, e in intervals if s <= p < e) for p in points), default=0)


def test_three_processes_run_one_busy_test_beside_a_measurement_and_three_otherwise(tmp_path):
    """The seats of tests/support/quiet.py under the installed pytest-xdist with three processes: while the
    timing group runs, one test of the rest at most runs beside it (the deadline group's tests do not count),
    none beside its quiet test; without it, the rest fills all three processes."""
    (tmp_path / "test_inner.py").write_text(SEATED)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    quiet: a verdict\n")
    log = tmp_path / "seats.jsonl"
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "3", "--dist=loadgroup", "-q", "-p", "no:cacheprovider",
                          "-p", "no:django", "-p", "tests.support.quiet", "-c", str(tmp_path / "pytest.ini"),
                          str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, "SEAT_LOG": str(log), "PYTHONPATH": str(root)})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 37
    rest = [(s, e) for kind, _, s, e in rows if kind == "rest"]
    measuring = [(s, e) for kind, _, s, e in rows if kind in ("measuring", "quiet")]
    (quiet,) = [(s, e) for kind, _, s, e in rows if kind == "quiet"]
    assert busiest(rest, quiet) == 0, f"a test of the rest ran beside the quiet measurement: {rows}"
    group = (min(s for s, _ in measuring), max(e for _, e in measuring))
    assert busiest(rest, group) <= 1, f"more than one test of the rest beside the timing group: {rows}"
    outside = [(s, e) for s, e in rest if e <= group[0] or s >= group[1]]
    assert busiest(outside, (min(s for s, _ in rest), max(e for _, e in rest))) >= 2, (
        f"the seats held up the rest when nothing was measured: {rows}")
