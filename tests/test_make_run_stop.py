"""#30 item 11: Ctrl-C on `make run` ends quietly. honcho signals each Procfile entry's whole process group;
Celery's pool children used to die of it before their master could stop them, and every Ctrl-C ended
with "Process 'ForkPoolWorker-1' ... exited with 'signal 15 (SIGTERM)'" errors. The Procfile as shipped,
run by honcho as the Makefile runs it (its web port moved to a free one), then stopped the way a terminal
stops it: SIGINT to the foreground process group. (A Celery worker whose warm shutdown outlasts honcho's
5 s grace is then killed with its pool, silently: see workers/supervised.py.)"""

import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.support import waiting
from tests.support.daemons import free_port
from workers.browser.chromium import parent_pids

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
MARK = "TLSAUDIT_RUN_STOP_TEST"


def marked(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"{MARK}={token}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def pool_children(token: str) -> int:
    """The jobs worker's pool processes: forked by their master, so they carry its very command line."""
    def cmdline(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""

    parents = parent_pids()
    return sum(1 for pid in marked(token) if b"load,browser,default" in cmdline(pid)
               and cmdline(pid) == cmdline(parents.get(pid, 0)))


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_ctrl_c_on_make_run_stops_every_process_without_an_error(tmp_path):
    port, token = free_port(), uuid.uuid4().hex
    procfile = tmp_path / "Procfile"
    procfile.write_text((ROOT / "Procfile").read_text().replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path),
           "DEBUG": "1", "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1", "PYTHONUNBUFFERED": "1",
           "TLSAUDIT_VAR_DIR": str(tmp_path / "var"), MARK: token}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    honcho = subprocess.Popen([str(Path(sys.executable).parent / "honcho"), "start", "-d", str(ROOT), "-f",
                               str(procfile)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    try:
        # Given the stack up: the web answering and the jobs worker's two pool children forked
        waiting.wait_until(lambda: answers(f"http://127.0.0.1:{port}/healthz") and pool_children(token) == 2,
                           timeout=90, interval=0.5, what="make run's processes to be up")
        # When the terminal's Ctrl-C reaches honcho's process group
        os.killpg(honcho.pid, signal.SIGINT)
        started = time.monotonic()
        output, _ = honcho.communicate(timeout=30)
        took = time.monotonic() - started
        left = waiting.settled(lambda: marked(token), lambda pids: not pids, seconds=10)
    finally:
        # Each entry has a session of its own: whatever is still marked, not one process group.
        for pid in [honcho.pid, *marked(token)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        honcho.wait()
    # Then every process ends, and nothing calls it an error
    assert "SIGINT received" in output
    assert "ERROR" not in output and "signal 15" not in output, output
    assert left == [], left
    assert took < 15, (took, output)
