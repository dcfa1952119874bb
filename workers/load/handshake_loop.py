"""Handshake agents on one epoll loop: what `workers.load.handshake.run_agents` runs.

Each agent does its handshakes one after another; the agents run at the same time, as connections
of one loop of non-blocking sockets (the load engine's technique, workers/load/engine.py) rather
than as threads: fifty threads fought over the GIL for every OpenSSL call and every timestamp,
which cost 20-30 % of h2load's rate and put their scheduling delays into the measured times.

Per connection:
1. t0, connect(); TCP is known to be up when a zero-length send() succeeds (one cheap syscall),
   else when the socket turns writable: t1. Only then is the ClientHello made, so the TLS time
   (t2 - t1) holds all of the handshake's work and none of TCP's wait.
2. do_handshake() on OpenSSL's C socket object until done: t2; then the connection is checked
   (version, suite, resumed or not: `mismatch`), and one that is not what was asked for is flagged
   and dropped, never timed.
3. With `http_probe` (and always for a resumed run's priming connection, to receive the TLS 1.3
   tickets) one small request, read to the end; then close.
A deadline of `timeout_s` applies to each step (as the blocking socket's timeout did), and the run
has two more: `time_limit_s` (its end) and `stall_s` (every attempt timed out for that long: a dead,
stalling or trickling server); past either, the handshakes in flight are abandoned, not counted.
All are instants compared with the clock every tick; no socket blocks, so no trickle extends them.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl
import time
from time import perf_counter_ns

from workers.load.engine import BROKEN, READ, SOCKET_TYPE, WRITE, Poller, RawSocket

TICK_S = 0.05
CANCEL_EVERY_S = 0.1
CONNECTING, HANDSHAKING, PROBING, CLOSED = range(4)


def resumable(tls) -> bool:
    """A session to resume: a TLS 1.3 ticket, or a TLS 1.2 session ID (or ticket)."""
    session = tls.session
    return session is not None and (session.has_ticket or (tls.version() == "TLSv1.2" and bool(session.id)))


class Loop:
    """The agents of one run, on one poller. `run()` returns when every agent is finished."""

    def __init__(self, spec, ctx: ssl.SSLContext, agents: list, stop, cancel, on_progress, http_probe: bool,
                 mismatch, failure_reason, iana_name, probe_request: bytes, sni: str | None):
        self.spec, self.agents, self.stop = spec, agents, stop
        self.cancel, self.on_progress, self.http_probe = cancel, on_progress, http_probe
        self.mismatch, self.failure_reason, self.iana_name = mismatch, failure_reason, iana_name
        self.probe_request = probe_request
        self.address = (spec.ip or spec.host, spec.port)
        self.family = socket.AF_INET6 if ":" in self.address[0] else socket.AF_INET
        self.wrap = ctx._wrap_socket  # OpenSSL's C object, as in engine.Connection.start_tls
        self.sni = ctx._encode_hostname(sni) if sni else None
        self.timeout_ns = int(spec.timeout_s * 1e9)
        self.limit_ns = int(spec.time_limit_s * 1e9) if spec.time_limit_s else 0
        self.stall_ns = int(spec.stall_s * 1e9) if spec.stall_s else 0
        self.last_done_ns = 0     # the last attempt that ended other than by a timeout, or the run's start
        self.stalled = False
        self.time_limited = False   # ended by its time limit: a complete run of that length, not a stop
        self.poller = Poller()
        self.by_fd: dict[int, Attempt] = {}
        self.busy = 0  # agents with a connection open

    def run(self, is_cancelled) -> None:
        now = time.perf_counter()
        self.last_done_ns = started_ns = perf_counter_ns()
        end_ns = started_ns + self.limit_ns if self.limit_ns else 0
        for agent in self.agents:
            agent.timed_from = now
            self.start_next(agent)
        next_tick = next_cancel = time.monotonic()
        reported = -1
        try:
            while self.busy:
                for fd, events in self.poller.wait(TICK_S):
                    attempt = self.by_fd.get(fd)
                    if attempt is not None:
                        attempt.ready(events)
                now = time.monotonic()
                if now >= next_tick:
                    next_tick = now + TICK_S
                    self.expire(perf_counter_ns(), end_ns)
                if now >= next_cancel:
                    next_cancel = now + CANCEL_EVERY_S
                    if is_cancelled(self.cancel):
                        self.stop.set()  # agents stop after their current handshake, as before
                    done = sum(a.done for a in self.agents)
                    if self.on_progress is not None and done != reported:
                        reported = done
                        self.on_progress(done, len(self.agents) * self.spec.per_agent)
        finally:
            for attempt in list(self.by_fd.values()):
                attempt.close()
            self.poller.close()

    def expire(self, now: int, end_ns: int = 0) -> None:
        for attempt in [a for a in self.by_fd.values() if now > a.deadline]:
            attempt.fail(TimeoutError("timed out"))
        if self.stall_ns and now - self.last_done_ns >= self.stall_ns:
            self.stalled = True
            self.abandon()
        elif end_ns and now >= end_ns:
            self.time_limited = True
            self.abandon()

    def abandon(self) -> None:
        """Stop every agent now (time limit, stall): connections in flight are closed uncounted."""
        self.stop.set()
        finished = time.perf_counter()
        for attempt in list(self.by_fd.values()):
            attempt.close()
            attempt.over = True
            attempt.agent.finished_at = finished
            self.busy -= 1
        for agent in self.agents:
            agent.finished_at = agent.finished_at or finished

    def start_next(self, agent) -> None:
        """Open the agent's next connection; one that fails at once is counted and the next tried
        here, in a loop (a refused port fails every attempt at once: no recursion)."""
        while agent.wants_more(self.stop):
            priming = agent.take_next()
            attempt = Attempt(self, agent, priming)
            if attempt.open():
                self.busy += 1
                return
        agent.finished_at = time.perf_counter()

    def attempt_over(self, attempt: "Attempt") -> None:
        self.busy -= 1
        self.start_next(attempt.agent)


class Attempt:
    """One connection of an agent: a timed handshake, or a resumed run's untimed priming one."""

    __slots__ = ("loop", "agent", "priming", "sock", "tls", "fd", "state", "deadline", "t0", "t1", "t2",
                 "opening", "over", "reason", "negotiated", "watching")

    def __init__(self, loop: Loop, agent, priming: bool):
        self.loop, self.agent, self.priming = loop, agent, priming
        self.sock = self.tls = None
        self.state = CONNECTING
        self.t0 = self.t1 = self.t2 = 0
        self.opening = True   # inside open(): an outcome is returned, not chained to the next attempt
        self.over = False
        self.reason = self.negotiated = None
        self.watching = 0

    def open(self) -> bool:
        """Start the connection; False if it already ended (counted)."""
        loop = self.loop
        self.t0 = perf_counter_ns()
        self.deadline = self.t0 + loop.timeout_ns
        try:
            self.sock = sock = RawSocket(loop.family, SOCKET_TYPE)
        except OSError as exc:
            self.fail(exc)
            return False
        # As browsers (and the load engine) do: OpenSSL writes TLS 1.3's compatibility ChangeCipherSpec and the
        # second ClientHello after a HelloRetryRequest as two writes, and with Nagle the second waited for the
        # server's ACK of the first: one more round trip on a real link, some of the time (tests/wan).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fd = sock.fileno()
        code = sock.connect_ex(loop.address)
        if code not in (0, errno.EINPROGRESS):
            self.fail(OSError(code, os.strerror(code)))
            return False
        loop.by_fd[self.fd] = self
        try:
            sock.send(b"")  # 0 once TCP is up; EAGAIN while the SYN is unanswered
        except BlockingIOError:
            self.watch(WRITE)
        except OSError as exc:  # refused (on loopback the refusal arrives as connect() returns)
            self.fail(exc)
        else:
            self.tcp_up()
        self.opening = False
        return not self.over

    def ready(self, events: int) -> None:
        if self.state == CONNECTING:
            if events & BROKEN:
                code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    self.fail(OSError(code, os.strerror(code)))
                    return
            self.tcp_up()
        elif self.state == HANDSHAKING:
            self.handshake()
        elif self.state == PROBING:
            self.read_probe()

    def tcp_up(self) -> None:
        loop = self.loop
        self.t1 = perf_counter_ns()
        self.deadline = self.t1 + loop.timeout_ns
        session = self.agent.session if not self.priming else None
        self.tls = loop.wrap(self.sock, False, loop.sni, session=session)
        self.state = HANDSHAKING
        self.handshake()

    def handshake(self) -> None:
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            self.watch(READ)
            return
        except ssl.SSLWantWriteError:
            self.watch(WRITE)
            return
        except OSError as exc:  # ssl.SSLError included
            self.fail(exc)
            return
        self.t2 = perf_counter_ns()
        loop = self.loop
        want_resumed = self.agent.session is not None and not self.priming
        self.reason = loop.mismatch(self.tls, loop.spec, want_resumed)
        self.negotiated = loop.iana_name(self.tls.cipher()[0])
        if self.priming and not loop.http_probe and resumable(self.tls):
            self.finish()   # TLS 1.2: the session (ID or ticket) came with the handshake
        elif loop.http_probe or self.priming:
            self.start_probe()
        else:
            self.finish()

    def start_probe(self) -> None:
        self.state = PROBING
        self.deadline = perf_counter_ns() + self.loop.timeout_ns
        try:
            self.tls.write(self.loop.probe_request)  # small: one TLS record, taken whole or not at all
        except ssl.SSLWantWriteError:  # pragma: no cover - a fresh connection's send buffer is empty
            self.fail(TimeoutError("probe request not sent"))
            return
        except OSError as exc:
            self.fail(exc)
            return
        self.watch(READ)

    def read_probe(self) -> None:
        """Read the probe's response to the end (the TLS 1.3 tickets come with it). A priming connection
        ends as soon as it holds a resumable session: a server that never answers HTTP (or answers
        slowly) still hands out its tickets, and resumption is measured, not the server's pages."""
        try:
            while self.tls.read(65536):
                pass
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            if self.priming and resumable(self.tls):
                self.finish()
            return
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            pass  # the server's close (with or without close_notify) ends the response
        except OSError as exc:
            self.fail(exc)
            return
        self.finish()

    def watch(self, events: int) -> None:
        if self.watching == 0:
            self.loop.poller.register(self.fd, events)
        elif events != self.watching:
            self.loop.poller.modify(self.fd, events)
        self.watching = events

    # --- outcomes

    def finish(self) -> None:
        """A handshake that completed (and its probe): timed, flagged, or a priming one."""
        self.loop.last_done_ns = perf_counter_ns()
        agent = self.agent
        if self.priming:
            agent.primed(self.tls, self.reason)
        else:
            agent.timed(self.t0, self.t1, self.t2, self.reason, self.negotiated)
        self.end()

    def fail(self, exc: BaseException) -> None:
        if not isinstance(exc, TimeoutError):  # an answer, if a failing one (refused, alert): not a stall
            self.loop.last_done_ns = perf_counter_ns()
        self.agent.failed(self.loop.failure_reason(exc), priming=self.priming)
        self.end()

    def end(self) -> None:
        self.close()
        self.over = True
        if not self.opening:
            self.loop.attempt_over(self)

    def close(self) -> None:
        if self.state == CLOSED:
            return
        self.state = CLOSED
        if self.sock is not None:
            self.loop.by_fd.pop(self.fd, None)
            if self.watching:
                self.loop.poller.forget(self.fd)  # poll() off Linux keeps closed fds; epoll drops them
            self.sock.close()
