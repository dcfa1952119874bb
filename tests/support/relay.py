"""A relay that counts, at the server's side, how many of our connections are open at once (the
per-address politeness tests: tests/tls/test_scan_pool.py, tests/tls/test_shared_address.py)."""

from __future__ import annotations

import selectors
import socket
import threading
from contextlib import contextmanager


class CountingRelay:
    """A TCP relay to several upstream ports, one listening port each, in ONE selector thread that
    handles a wake-up's closes before its other events. A connection counts as open from its client's
    first bytes to its first EOF. Seen from the server, a connection the client just closed can still
    look open when its next one's first bytes arrive (the FIN and the next SYN cross the kernel on
    different CPUs): measured, the relay saw at most one more than the client's own count, never two."""

    def __init__(self, upstreams: list[int], groups: list | None = None):
        """`groups`: a key per upstream (e.g. the address its sites stand behind); each key's connections
        are also counted apart, in `by_group[key]` = {"open", "peak", "total"}."""
        self.selector = selectors.DefaultSelector()
        self.listeners = []   # (upstream, listener), one per upstream given, in order (repeats allowed)
        for upstream, group in zip(upstreams, groups or [None] * len(upstreams), strict=True):
            listener = socket.create_server(("127.0.0.1", 0), backlog=256)
            listener.setblocking(False)
            self.selector.register(listener, selectors.EVENT_READ, ("accept", (upstream, group)))
            self.listeners.append((upstream, listener))
        self.open = self.peak = self.total = 0
        self.by_group = {group: {"open": 0, "peak": 0, "total": 0} for group in set(groups or [None])}
        self.stop = threading.Event()

    def port(self, upstream: int) -> int:
        """The first listening port relayed to `upstream`."""
        return next(listener for port, listener in self.listeners if port == upstream).getsockname()[1]

    def ports(self) -> list[int]:
        """Every listening port, in the order of the upstreams given."""
        return [listener.getsockname()[1] for _, listener in self.listeners]

    def serve(self) -> None:
        while not self.stop.is_set():
            events = self.selector.select(0.05)
            for key, _ in sorted(events, key=lambda event: not self.at_eof(event[0])):  # closes first
                if key.data[0] == "accept":
                    self.accept(key.fileobj, key.data[1])
                else:
                    self.pipe(key.fileobj, key.data[1])

    def accept(self, listener, target) -> None:
        upstream, group = target
        try:
            client, _ = listener.accept()
        except BlockingIOError:
            return
        server = socket.create_connection(("127.0.0.1", upstream))
        pair = {"client": client, "server": server, "open": True, "counted": False, "group": self.by_group[group]}
        for sock, other in ((client, server), (server, client)):
            sock.setblocking(True)
            self.selector.register(sock, selectors.EVENT_READ, ("pipe", (other, pair)))

    @staticmethod
    def at_eof(key) -> bool:
        if key.data[0] == "accept":
            return False
        try:
            return key.fileobj.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def pipe(self, sock, data) -> None:
        other, pair = data
        try:
            chunk = sock.recv(65536)
            if chunk:
                if sock is pair["client"] and not pair["counted"]:
                    pair["counted"] = True
                    self.open += 1
                    self.total += 1
                    self.peak = max(self.peak, self.open)
                    group = pair["group"]
                    group["open"] += 1
                    group["total"] += 1
                    group["peak"] = max(group["peak"], group["open"])
                other.sendall(chunk)
                return
        except OSError:
            pass
        self.close(pair)

    def close(self, pair) -> None:
        if not pair["open"]:
            return
        pair["open"] = False
        self.open -= pair["counted"]
        pair["group"]["open"] -= pair["counted"]
        for side in ("client", "server"):
            self.selector.unregister(pair[side])
            pair[side].close()


@contextmanager
def counting_relay(upstreams: list[int], groups: list | None = None):
    relay = CountingRelay(upstreams, groups)
    thread = threading.Thread(target=relay.serve, daemon=True)
    thread.start()
    try:
        yield relay
    finally:
        relay.stop.set()
        thread.join(2)
