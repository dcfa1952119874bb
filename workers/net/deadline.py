"""Absolute deadlines for every socket of an audit, so that a trickle cannot stretch it.

A per-operation timeout starts again with every read: a server that sends one byte a second never
trips it, and a scan of ~600 connections then takes hours. Here every socket an audit opens (sslyze's
through `workers/tls/sslyze_sockets.py`, and ours) belongs to a `Deadline`, the audit's end (or a
phase's), and has a lifetime of its own (`connection_s`, counted from its connect). Before each read
and write its timeout is set to what is left of the nearer of the two, at most the per-operation
timeout; past the deadline no socket opens. So nothing that sends bytes slowly can hold a read, a
connection or the audit past those instants, and no thread blocked in a read has to be reached
from outside: its read ends by itself, at the latest at the deadline.
"""

from __future__ import annotations

import socket
import threading
import time
import weakref
from collections import defaultdict
from contextlib import contextmanager

# A TLS handshake, or any one exchange of an audit, slower than this is broken whatever the network:
# at 300 ms RTT a handshake takes ~1 s and sslyze's longest exchange (10 renegotiations) ~6 s.
MIN_CONNECTION_S = 10.0


def connection_limit(network_timeout: float, lifetime_s: float | None = None) -> float:
    """How long one connection may live: `lifetime_s` (10 s by default), or three per-operation timeouts when
    those are longer."""
    return max(MIN_CONNECTION_S if lifetime_s is None else lifetime_s, 3 * network_timeout)


def one_connection(network_timeout: float, within: "Deadline | None" = None) -> "Deadline":
    """The limit of one new connection: its lifetime from now, inside `within` (an audit's deadline)
    when there is one."""
    if within is not None:
        return within.connection()
    limit = connection_limit(network_timeout)
    return Deadline(limit, connection_s=limit, lifetime=True)


class Gates:
    """Politeness and bounds for one process running many audits at once (the scan pool): at most
    `per_ip` open connections to one IP address, whatever the port or the audit, and at most `total`
    open connections in all. Every socket an audit opens under a Deadline takes a slot of each
    before its connect and gives them back when it closes (or is garbage-collected, for a socket a
    library dropped). A connection waits for its slots only until its deadline: a full gate delays
    an audit, never hangs it. sslyze's own per-server limit still holds inside one audit."""

    def __init__(self, per_ip: int = 5, total: int = 256):
        self.per_ip, self.total = per_ip, total
        self._open: dict[str, int] = defaultdict(int)
        self._all = 0
        self.peak_per_ip: dict[str, int] = defaultdict(int)   # for tests and the bench
        self.peak_total = 0
        self._changed = threading.Condition()

    def enter(self, ip: str, wait_s: float) -> bool:
        """Take a slot for `ip`, waiting at most `wait_s`; False when none came free in time."""
        end = time.monotonic() + wait_s
        with self._changed:
            while self._open[ip] >= self.per_ip or self._all >= self.total:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            self._open[ip] += 1
            self._all += 1
            self.peak_per_ip[ip] = max(self.peak_per_ip[ip], self._open[ip])
            self.peak_total = max(self.peak_total, self._all)
            return True

    @contextmanager
    def held(self, ip: str, wait_s: float):
        """A slot for `ip` for the duration of the block (a connection not opened under a Deadline,
        such as the pre-flight handshake); raises DeadlineExceeded if none came free within `wait_s`."""
        if not self.enter(ip, wait_s):
            raise DeadlineExceeded(f"no connection to {ip} could open within {wait_s:.0f} s: this process's "
                                   f"{self.per_ip} connections to that address were all in use")
        try:
            yield
        finally:
            self.leave(ip)

    def leave(self, ip: str) -> None:
        with self._changed:
            self._open[ip] -= 1
            self._all -= 1
            if not self._open[ip]:
                del self._open[ip]
            self._changed.notify_all()

    def open_now(self, ip: str | None = None) -> int:
        with self._changed:
            return self._all if ip is None else self._open.get(ip, 0)


_gates = Gates()


def gates() -> Gates:
    return _gates


def configure_gates(per_ip: int, total: int) -> Gates:
    """Set this process's limits (the worker and the CLI call this from settings at start-up)."""
    global _gates
    if per_ip < 1 or total < 1:
        raise ValueError(f"connection limits must be at least 1, got per_ip={per_ip}, total={total}")
    _gates = Gates(per_ip, total)
    return _gates


class _Slot:
    """One socket's hold on the gates, given back exactly once (on close or by the finalizer)."""

    def __init__(self, gate: Gates, ip: str):
        self.gate, self.ip, self.held = gate, ip, True
        self.lock = threading.Lock()

    def release(self) -> None:
        with self.lock:
            if not self.held:
                return
            self.held = False
        self.gate.leave(self.ip)


class DeadlineExceeded(socket.timeout):
    """A socket operation reached its connection's limit or its deadline (a TimeoutError, so every
    `except socket.timeout` treats it as the timeout it is); the message says which."""


class Deadline:
    """An instant on the monotonic clock, what was cut by it, and the sockets opened under it."""

    def __init__(self, seconds: float, *, connection_s: float = MIN_CONNECTION_S, parent: "Deadline | None" = None,
                 lifetime: bool = False):
        now = time.monotonic()
        self.seconds = seconds
        self.at = min(now + seconds, parent.at) if parent is not None else now + seconds
        self.connection_s = connection_s
        self.parent = parent
        self.lifetime = lifetime      # this is one connection's limit (its end may be its parent's)
        self.cut_connections = 0      # operations stopped by their connection's lifetime
        self.overran = 0              # operations stopped or refused because this deadline had passed
        self._sockets: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def phase(self, end_before_s: float = 0.0) -> "Deadline":
        """A deadline `end_before_s` before this one: a phase that must leave time to the next."""
        return Deadline(max(0.0, self.at - end_before_s - time.monotonic()), connection_s=self.connection_s,
                        parent=self)

    def connection(self) -> "Deadline":
        """One connection's limit: its lifetime from now, never past this deadline."""
        return Deadline(self.connection_s, connection_s=self.connection_s, parent=self, lifetime=True)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0

    def timeout(self, per_op: float, until: float | None = None) -> float:
        """The timeout of one operation: at most `per_op`, ending no later than `until` (a connection's
        end) nor this deadline. Raises DeadlineExceeded when either has passed."""
        left = self.at - time.monotonic()
        if until is not None and until - time.monotonic() < left:
            if until - time.monotonic() <= 0:
                raise self.exceeded(by_deadline=False)
            return min(per_op, until - time.monotonic())
        if left <= 0:
            raise self.exceeded(by_deadline=True)
        return min(per_op, left)

    def exceeded(self, by_deadline: bool) -> DeadlineExceeded:
        """Count a cut operation (here and in every enclosing deadline) and the error to raise."""
        if by_deadline and self.lifetime:
            if self.parent is not None and self.parent.at <= self.at:
                return self.parent.exceeded(by_deadline=True)
            by_deadline = False  # a connection's limit that is its own lifetime
        deadline = self
        while deadline is not None:
            with deadline._lock:
                if by_deadline:
                    deadline.overran += 1
                else:
                    deadline.cut_connections += 1
            deadline = deadline.parent
        if by_deadline:
            return DeadlineExceeded(f"the time budget of {self.seconds:.0f} s ran out")
        return DeadlineExceeded(f"the connection was still unfinished after {self.connection_s:g} s")

    def run(self, sock: socket.socket, per_op: float, operation, *args, until: float | None = None):
        """`operation(*args)` on `sock` (a read or a write) with the timeout `timeout()` gives; a wait
        that a limit shortened and that then timed out raises DeadlineExceeded, counted."""
        timeout = self.timeout(per_op, until)
        sock.settimeout(timeout)
        try:
            return operation(*args)
        except socket.timeout:
            if timeout < per_op:  # the wait was shortened by a limit: that limit has come
                raise self.exceeded(by_deadline=until is None or self.at <= until) from None
            raise

    def connect(self, ip: str, port: int, per_op: float) -> "DeadlineSocket":
        """A TCP connection to ip:port whose every operation obeys this deadline and its own lifetime."""
        gate = _gates
        if not gate.enter(ip, max(0.0, self.remaining())):
            raise self.exceeded(by_deadline=True)  # the audit's time ran out while others held every slot
        slot = _Slot(gate, ip)
        try:
            sock = DeadlineSocket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
        except BaseException:
            slot.release()
            raise
        sock.hold(slot)
        try:
            sock.bound_by(self, per_op)
            sock.settimeout(self.timeout(per_op))
            sock.connect((ip, port))
        except BaseException:
            sock.close()
            raise
        with self._lock:
            self._sockets.add(sock)
        return sock

    def close_sockets(self) -> int:
        """Close the sockets opened here that are still open (a library dropped them on an error
        path: the garbage collector would close them, later); how many."""
        with self._lock:
            left = [s for s in self._sockets if s.fileno() != -1]
        for sock in left:
            sock.close()
        return len(left)


class DeadlineSocket(socket.socket):
    """A socket whose reads and writes never outlast its Deadline nor its own lifetime."""

    def hold(self, slot: _Slot) -> None:
        self._slot = slot
        self._finalizer = weakref.finalize(self, slot.release)  # dropped without close(): the slot comes back

    def pass_slot_to(self, wrapper: socket.socket) -> None:
        """After `ssl.wrap_socket(self)` (which detaches this object from the connection): the slot
        belongs to the TLS socket now and comes back when that one is collected (its `with` ends)."""
        slot = getattr(self, "_slot", None)
        if slot is None:
            return
        self._finalizer.detach()
        self._slot = None
        weakref.finalize(wrapper, slot.release)

    def _real_close(self, *args) -> None:
        # Not close(): while a makefile() reader holds the socket, close() leaves the connection open.
        super()._real_close(*args)
        slot = getattr(self, "_slot", None)
        if slot is not None:
            slot.release()

    def bound_by(self, deadline: Deadline, per_op: float) -> None:
        self._deadline, self._per_op = deadline, per_op
        self._until = time.monotonic() + deadline.connection_s

    def _bounded(self, operation, *args):
        return self._deadline.run(self, self._per_op, operation, *args, until=self._until)

    def recv(self, *args):
        return self._bounded(super().recv, *args)

    def recv_into(self, *args):
        return self._bounded(super().recv_into, *args)

    def send(self, *args):
        return self._bounded(super().send, *args)

    def sendall(self, *args):
        return self._bounded(super().sendall, *args)
