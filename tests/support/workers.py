"""Real Celery workers for the whole test session: one per (queues, concurrency), started once, idle
and consuming nothing between tests (registered in tests/conftest.py with pytest_plugins).

Starting and stopping a worker for each test cost ~0.8 s up and 1.3-2.5 s down, in ~100 tests. Here a
test's `start_worker_on(queues, concurrency)` gets the session's worker of that shape (started on first
use, threads pool, the real Redis) and makes it consume those queues; when the test ends the pool waits
for every worker to finish what it holds (active, reserved, or a retry waiting for its countdown), has
them stop consuming, and purges the queues. So between tests no worker takes anything: a test that wants
an audit to stay "queued" until it starts a worker gets exactly that, as with a new worker.

Consumers are cancelled and added with the worker's own remote-control commands (run in its consumer
thread, where kombu's channel lives), not by calling the consumer from the test's thread.
"""

from __future__ import annotations

import os
import time
import warnings
from contextlib import ExitStack

import pytest

IDLE_TIMEOUT_S = 120     # a task a test left running (a load run's agents) gets this long to finish
CONTROL_TIMEOUT_S = 10


class WorkerPool:
    def __init__(self, app):
        self.app = app
        self.keep_browser = False   # hostile_targets' matrix keeps one Chromium for a path's cases
        self.started = 0
        self.stack = ExitStack()
        self.workers: dict[tuple, object] = {}
        self.consuming: dict[tuple, bool] = {}

    def get(self, queues, concurrency: int = 2):
        """The worker for this shape, consuming `queues` (every other pooled worker consuming nothing)."""
        from celery.contrib.testing.worker import start_worker

        key = (tuple(queues), int(concurrency))
        if self.workers and key not in self.workers:
            self.close()
        if key in self.workers and not self.consuming[key] and not self.control(key, "add_consumer"):
            self.close()
        if key not in self.workers:
            # Its own node name: control commands address one worker, and celery's default test name is
            # per process ("gen<pid>@host"), so every worker of the pool would obey every command.
            self.started += 1
            self.workers[key] = self.stack.enter_context(start_worker(
                self.app, pool="threads", concurrency=concurrency, perform_ping_check=False, queues=list(queues),
                shutdown_timeout=60, hostname=f"pool{self.started}.{os.getpid()}@tests"))
        self.consuming[key] = True
        return self.workers[key]

    def control(self, key, command: str) -> bool:
        """Run add_consumer / cancel_consumer for each of the worker's queues; False if it did not answer."""
        worker = self.workers[key]
        for queue in key[0]:
            replies = getattr(self.app.control, command)(queue, destination=[worker.hostname], reply=True,
                                                         timeout=CONTROL_TIMEOUT_S)
            if not replies:
                warnings.warn(f"worker {worker.hostname} did not answer {command} {queue}: restarting the pool")
                return False
        return True

    def pause_all(self, except_key=None) -> None:
        """Every worker but `except_key`'s stops consuming; one that does not answer stops the pool (a
        worker that might still consume must not outlive the test)."""
        for key, consuming in list(self.consuming.items()):
            if consuming and key != except_key:
                if not self.control(key, "cancel_consumer"):
                    self.close()
                    return
                self.consuming[key] = False

    def settle(self) -> None:
        """After a test: wait for the workers to hold nothing, stop consuming, empty the queues. A worker
        that stays busy longer than IDLE_TIMEOUT_S is a test's leak: every worker is stopped (their stop
        flag is process-wide), and the next test starts fresh ones."""
        if not self.workers:
            return
        if not wait_idle(IDLE_TIMEOUT_S):
            held = held_requests()
            self.close()
            raise RuntimeError(f"a worker was still busy {IDLE_TIMEOUT_S} s after its test ended: {held}")
        self.pause_all()
        if not wait_idle(CONTROL_TIMEOUT_S):   # a message taken just before its consumer was cancelled
            self.close()
            raise RuntimeError("a worker took a task while it was being paused")
        self.app.control.purge()
        if not self.keep_browser:
            close_browser()

    def close(self) -> None:
        close_browser()
        self.stack.close()
        self.stack = ExitStack()
        self.workers.clear()
        self.consuming.clear()


def close_browser() -> None:
    """The probe worker's Chromium (one per process, workers/browser/host.py): a stopped worker closes it
    (worker_shutdown), a paused one must too, or the next test would find a browser it did not start."""
    from workers.browser.host import HOST

    HOST.close()


def held_requests() -> list[str]:
    """What the workers of this process hold, in words (for a failure message)."""
    from celery.worker import state

    return [f"{r.name}[{r.id}] eta={r.eta}" for r in list(state.requests.values())]


def wait_idle(timeout_s: float) -> bool:
    """True once no worker of this process holds a task: running, prefetched or waiting out a countdown."""
    from celery.worker import state

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not state.active_requests and not state.reserved_requests and not state.requests:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="session")
def worker_pool():
    import workers.tasks  # noqa: F401  register the tasks in this process
    from workers.celery import app

    pool = WorkerPool(app)
    yield pool
    pool.close()


@pytest.fixture
def start_worker_on(worker_pool):
    """start_worker_on(queues, concurrency) makes a real Celery worker (threads pool, the real Redis)
    consume those queues until the test ends. Tests start it when they choose, e.g. after a page shows a
    queued audit: until then nothing consumes."""
    worker_pool.app.control.purge()
    yield worker_pool.get
    worker_pool.settle()
