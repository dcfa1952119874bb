"""The suite's serial groups (tests/conftest.py: "timing", "deadlines") rely on pytest-xdist's
--dist=loadgroup. With pytest 9.2 it silently stopped grouping (pytest-xdist #1386) and the wall-clock
tests ran beside one another for a while unnoticed. This runs a small suite of its own under the
installed pytest and pytest-xdist and checks that a group stays on one worker."""

import re
import subprocess
import sys

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
