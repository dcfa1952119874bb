"""Fixtures of the hostile-target matrix: a real Celery worker (threads pool, concurrency 1, the real Redis)
on one queue, chained from case to case, and the limits and deadlines it runs with. The targets and the
counts of what a worker holds are in tests/support/hostile_targets.py.

The worker runs inside this test process (celery.contrib.testing), so "the worker's process" is
`os.getpid()`, and its Chromium is our descendant. The hostile servers run here too: they are
stopped before descriptors are counted, and client sockets are told from server ones by the
remote port in /proc/net/tcp.
"""

from __future__ import annotations

import pytest

from tests.support.hostile_targets import CONNECTION_S, PAGE_S


@pytest.fixture
def generous_limits(settings):
    """Rate limits out of the way: a matrix case queues three tasks against one target."""
    for name in ("AUDIT_LIMIT_PER_ORG_HOUR", "AUDIT_LIMIT_PER_TARGET", "PROBE_LIMIT_PER_ORG_HOUR",
                 "PROBE_LIMIT_PER_TARGET"):
        setattr(settings, name, 1000)


@pytest.fixture
def short_deadlines(settings):
    """The engines' deadlines shortened through their settings (the code path is the same): an audit in
    20 s, each of its connections in 6 s (three 2 s operations), a run that completes nothing in 4 s (and
    at least its requests' timeout + 5 s), a measured handshake's step in 3 s, a page in 5 s. Each is still
    tens of times what the lab's normal servers take on loopback, so the normal task after each case passes
    on a loaded machine."""
    settings.AUDIT_DEADLINE_SECONDS = 20
    settings.SCAN_NETWORK_TIMEOUT = 2
    settings.SCAN_CONNECTION_LIFETIME_SECONDS = CONNECTION_S
    settings.LOAD_STALL_SECONDS = 4
    settings.HANDSHAKE_STEP_TIMEOUT_SECONDS = 3
    settings.PROBE_LOAD_TIMEOUT = PAGE_S
    return settings


@pytest.fixture
def one_worker(start_worker_on):
    """one_worker(queue): the session's real worker on that queue with one thread, so the descriptors it
    holds after a normal task (one database connection, its broker connections) are all it needs."""
    return lambda queue: start_worker_on((queue,), concurrency=1)


@pytest.fixture(scope="module")
def chained(worker_pool):
    """What each path's worker held after its last normal task: {path: {worker, Chromium pids}}, so
    the next case of the path starts from there instead of warming up a new worker (the matrix runs its
    cases path by path). The module's end closes the process's Chromium."""
    held: dict = {}
    worker_pool.keep_browser = True
    yield held
    worker_pool.keep_browser = False
    from workers.browser.host import HOST

    HOST.close()
