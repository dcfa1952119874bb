"""The hostile-target matrix: the servers of tests/hostile.py behind real sites, a real Celery
worker (threads pool, concurrency 1, the real Redis) on one queue, and counts of what a worker
holds: its file descriptors, its client sockets towards a port, its Chromium processes.

The worker runs inside this test process (celery.contrib.testing), so "the worker's process" is
`os.getpid()`, and its Chromium is our descendant. The hostile servers run here too: they are
stopped before descriptors are counted, and client sockets are told from server ones by the
remote port in /proc/net/tcp.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import hostile
from tests.support.waiting import settled  # noqa: F401  (imported from here by other tests)

TARGETS = ("tarpit", "reset", "plain_http", "garbage", "drip", "drip_record", "drip_noise", "drip_server_hello",
           "trickle_every", "slow_http", "slow_subresource", "big_chain", "wrong_sni", "handshake_then_hang",
           "nxdomain", "blackhole")
NXDOMAIN_HOST = "nxdomain.hostile.test"


@dataclass(frozen=True)
class Target:
    name: str
    hostname: str
    port: int | None          # None: there is nothing to connect to (the name does not resolve)
    pinned_ip: str | None
    own_sockets: frozenset[str] = frozenset()   # inodes of the server's own client sockets (blackhole fillers)


@contextmanager
def hostile_target(name: str, pki, directory: Path, settings):
    """Start the server `name` (the TLS ones with leaves from `pki`, the lab's, so only their
    hostility shows); for nxdomain, point the app's resolver at a DNS server that knows no name."""
    if name == "nxdomain":
        with hostile.dns_server({}) as dns:
            settings.DNS_RESOLVER = dns.address
            yield Target(name, NXDOMAIN_HOST, None, None)
        return
    if name == "blackhole":
        with hostile.blackhole_with_fillers() as (port, fillers):
            yield Target(name, "localhost", port, "127.0.0.1", frozenset(str(os.fstat(f.fileno()).st_ino)
                                                                         for f in fillers))
        return
    servers = {
        "tarpit": hostile.tarpit, "reset": hostile.reset, "plain_http": hostile.plain_http,
        "garbage": hostile.garbage, "drip": hostile.drip, "drip_record": hostile.drip_record,
        "drip_noise": hostile.drip_noise, "drip_server_hello": hostile.drip_server_hello,
        "trickle_every": lambda: hostile.trickle_every(pki), "slow_http": lambda: hostile.slow_http(pki),
        "slow_subresource": lambda: hostile.slow_subresource(pki),
        "big_chain": lambda: hostile.big_chain(pki, directory), "wrong_sni": lambda: hostile.wrong_sni(pki),
        "handshake_then_hang": lambda: hostile.handshake_then_hang(pki),
    }
    with servers[name]() as port:
        yield Target(name, "localhost", port, "127.0.0.1")


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


CONNECTION_S = 6
PAGE_S = 5


def sslyze_threads() -> list[str]:
    """Threads of sslyze's scanner (its producer, job workers and connectivity testers) still alive."""
    import threading

    return [t.name for t in threading.enumerate() if type(t).__module__.startswith("sslyze")]


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


# --- what the worker holds ------------------------------------------------------------------

def open_fds(pid: int | None = None) -> dict[int, str]:
    """fd -> what it points to, for `pid` (default: this process, i.e. the worker)."""
    folder = Path(f"/proc/{pid or os.getpid()}/fd")
    found = {}
    for entry in folder.iterdir():
        try:
            found[int(entry.name)] = os.readlink(entry)
        except OSError:
            continue  # closed while we listed
    return found


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name)."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            table[int(entry.name)] = (int(stat[stat.rindex(")") + 2:].split()[1]),
                                      stat[stat.index("(") + 1:stat.rindex(")")])
    return table


def worker_tree() -> list[int]:
    """This process and its descendants (Playwright's driver, Chromium and its helpers)."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [os.getpid()]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def chromium_pids() -> list[int]:
    """Live (not zombie) Chromium processes under the worker."""
    from workers.browser.chromium import alive

    table = process_table()
    return sorted(pid for pid in worker_tree() if pid in table and re.match(r"chrom", table[pid][1]) and alive(pid))


def foreign_chromium(token: str) -> list[int]:
    """Chromium processes under the worker that are not the browser marked `token` (scanned on both
    sides of the process listing, so a helper born in between counts as the browser's)."""
    from workers.browser.chromium import marked_pids

    ours = set(marked_pids(token))
    found = chromium_pids()
    ours |= set(marked_pids(token))
    return [pid for pid in found if pid not in ours]


def client_sockets_to(port: int, exclude: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """(pid, connection state) of every TCP socket the worker or its children hold whose *remote*
    port is `port`: connections to the hostile server that were not closed (`exclude`: inodes)."""
    remote = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] not in exclude | {"0"}:
                remote[fields[9]] = fields[3]
    held = []
    for pid in worker_tree():
        try:
            targets = open_fds(pid).values()
        except OSError:
            continue
        held += [(pid, remote[t[8:-1]]) for t in targets if t.startswith("socket:[") and t[8:-1] in remote]
    return held


