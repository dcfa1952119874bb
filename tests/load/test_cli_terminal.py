"""Long CLI runs show ab's heartbeat ("Completed N requests") on a terminal, and nothing of it when their
stderr is a pipe or the output is --json. The terminal is a real pseudo-terminal (pty), the commands
real processes against the nginx lab."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
NAME = "load_no_resumption"


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return {**env, "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1",
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}


def on_terminal(*args: str) -> tuple[int, str, str]:
    """Run with stderr on a pty: (exit status, stdout, what the terminal showed)."""
    controller, terminal = pty.openpty()
    child = subprocess.Popen([sys.executable, str(MANAGE_PY), *args], cwd=MANAGE_PY.parent, env=environment(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    shown: list[bytes] = []

    def read_terminal():
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:   # EIO once the child's side is closed
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    stdout, _ = child.communicate(timeout=120)
    reader.join(10)
    os.close(controller)
    return child.returncode, stdout.decode(), b"".join(shown).decode(errors="replace").replace("\r\n", "\n")


def piped(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MANAGE_PY), *args], cwd=MANAGE_PY.parent, env=environment(),
                          capture_output=True, text=True, timeout=120)


def heartbeats(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("Completed ", "Finished "))]


@pytest.fixture
def url(tls_lab) -> str:
    return f"https://localhost:{tls_lab.port(NAME)}/health"


def test_loadtest_shows_abs_heartbeat_on_a_terminal(url):
    status, stdout, terminal = on_terminal("loadtest", url, "--ip", "127.0.0.1", "-n", "500", "-c", "5")
    assert status == 0, terminal
    assert heartbeats(terminal) == [f"Completed {n} requests" for n in range(50, 500, 50)] + [
        next(line for line in heartbeats(terminal) if line.startswith("Finished 500 requests in "))]
    assert "\x1b[" not in terminal   # plain lines, not Django's red error style
    assert "Complete requests:      500" in stdout and "Completed" not in stdout


def test_loadtest_is_quiet_when_piped_or_asked_for_json(url):
    run = piped("loadtest", url, "--ip", "127.0.0.1", "-n", "500", "-c", "5")
    assert run.returncode == 0 and heartbeats(run.stderr) == [] and "Complete requests:      500" in run.stdout
    status, stdout, terminal = on_terminal("loadtest", url, "--ip", "127.0.0.1", "-n", "500", "-c", "5", "--json")
    assert status == 0 and heartbeats(terminal) == []
    assert json.loads(stdout)["complete"] == 500


def test_handshakes_and_overhead_show_progress_on_a_terminal_only(tls_lab):
    target = f"localhost:{tls_lab.port(NAME)}"
    hs_args = ("handshakes", target, "--ip", "127.0.0.1", "--agents", "2", "--per-agent", "20", "--repeats", "2",
               "--suites", "TLS_AES_128_GCM_SHA256")
    status, stdout, terminal = on_terminal(*hs_args)
    assert status == 0, terminal
    # 2 x 5 warm-up + 2 rounds x 40: a tenth is 9 handshakes
    assert heartbeats(terminal)[:3] == ["Completed 9 handshakes", "Completed 18 handshakes", "Completed 27 handshakes"]
    assert heartbeats(terminal)[-1].startswith("Finished 90 handshakes in ")
    assert piped(*hs_args).stderr == "" and heartbeats(on_terminal(*hs_args, "--json")[2]) == []

    sweep = ("overhead", "localhost", "--ip", "127.0.0.1", "--http-port", str(tls_lab.http_port(NAME)),
             "--https-port", str(tls_lab.port(NAME)), "--path", "/health", "--levels", "1", "-n", "20",
             "--repeats", "2")
    status, stdout, terminal = on_terminal(*sweep)
    assert status == 0, terminal
    lines = terminal.splitlines()
    assert [line for line in lines if line.startswith(("Warm-up", "Repeat"))] == [
        "Warm-up: HTTP c=1 n=20 (new)", "Warm-up: HTTPS c=1 n=20 (new)",
        "Repeat 1/2: HTTP c=1 n=20 (new)", "Repeat 1/2: HTTPS c=1 n=20 (new)",
        "Repeat 2/2: HTTPS c=1 n=20 (new)", "Repeat 2/2: HTTP c=1 n=20 (new)"]
    assert "Completed 60 requests" in lines and "TLS overhead for localhost" in stdout
    assert piped(*sweep).stderr == ""
