"""The app served by gunicorn, as in production, for tests and benchmarks that need a web process
to die mid-request or many requests to race across processes (Django's live_server is one thread
of the test process: it can neither be SIGKILLed nor run requests in parallel workers).

    web = Gunicorn(database_url, redis_url, log_dir, workers=4, threads=4, API_THROTTLE_RATE="60/min")
    base = web.start()          # waits until it accepts
    codes = hammer(f"{base}/api/v1/organization/", {"Authorization": ...}, clients=20, total=240)
    web.kill()                  # SIGKILL the whole process group: no clean-up runs

The process group and logs are handled by tests/faults/support.py's `Proc`; `env_for` gives the
app processes the database and Redis of the caller (the test database, or a bench database).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import requests

from tests.faults.support import IP, PYTHON, Proc, env_for, free_port, port_accepts, tail, wait_until


class Gunicorn:
    """gunicorn tlsaudit.wsgi on a free port of 127.0.0.1; `env` overrides settings (e.g. a lease)."""

    def __init__(self, database_url: str, redis_url: str, log_dir: Path, *, workers: int = 2, threads: int = 1,
                 name: str = "web", **env):
        self.env = env_for(database_url, redis_url, log_dir / "var", **env)
        self.log_dir, self.workers, self.threads, self.name = log_dir, workers, threads, name
        self.starts = 0
        self.proc: Proc | None = None

    def start(self) -> str:
        """A new server process (a fresh port each time, as a restarted container); returns its base URL."""
        self.starts += 1
        port = free_port()
        self.proc = Proc(f"{self.name}-{self.starts}", [
            PYTHON, "-m", "gunicorn", "tlsaudit.wsgi", "--bind", f"{IP}:{port}", "--workers", str(self.workers),
            "--threads", str(self.threads), "--timeout", "30", "--access-logfile", "-",
            # Several servers run at once on this machine (tests in parallel): none needs the shared socket.
            "--no-control-socket"],
            self.env, self.log_dir / f"{self.name}-{self.starts}.log")
        wait_until(lambda: port_accepts(port) or not self.proc.alive(), 60, f"gunicorn on {port}")
        assert self.proc.alive(), tail(self.proc.log)
        return f"http://{IP}:{port}"

    def kill(self) -> None:
        """SIGKILL the master and its workers at once, as when a container or machine dies."""
        if self.proc is not None:
            self.proc.kill()

    def log(self) -> str:
        return tail(self.proc.log, 60) if self.proc else "(never started)"


def hammer(url: str, headers: dict, *, clients: int, total: int, timeout: float = 30) -> Counter:
    """`total` GETs of `url` from `clients` threads released together, each on its own keep-alive
    connection; returns how many answers had each status code (or each exception's name)."""
    codes: Counter = Counter()
    lock = threading.Lock()
    left = [total]
    start = threading.Barrier(clients)

    def take_one() -> bool:
        with lock:
            if left[0] == 0:
                return False
            left[0] -= 1
            return True

    def client() -> None:
        with requests.Session() as session:
            start.wait()
            while take_one():
                try:
                    outcome = session.get(url, headers=headers, timeout=timeout).status_code
                except requests.RequestException as exc:   # counted, so a lost answer cannot pass unseen
                    outcome = type(exc).__name__
                with lock:
                    codes[outcome] += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return codes
