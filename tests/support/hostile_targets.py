"""What the hostile-target tests count and start: the targets of tests/hostile.py behind real sites, and what
a worker holds (its file descriptors, its client sockets towards a port, its Chromium processes, sslyze's
threads)."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests import hostile
from tests.support.processes import process_table

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


CONNECTION_S = 6


PAGE_S = 5


def sslyze_threads() -> list[str]:
    """Threads of sslyze's scanner (its producer, job workers and connectivity testers) still alive."""
    import threading

    return [t.name for t in threading.enumerate() if type(t).__module__.startswith("sslyze")]


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
