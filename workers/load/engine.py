"""The single-process core of the load generator: non-blocking sockets on one epoll loop.

`Engine(spec, address, ssl_context, cancel, on_progress).run()` keeps `spec.concurrency`
requests in flight until `spec.requests` are done (closed loop, like ab), then `result()`.

Why not asyncio: measured on this 2-vCPU host (docs/decisions.md, "load engine on a bare epoll
loop"), uvloop's `create_connection` + Protocol path cost ~1.45x the client CPU of this loop per
new connection, and `loop.add_reader`/`add_writer` were slower still; ab itself is one epoll loop
over non-blocking sockets. Every request here costs a handful of Python calls: the socket calls
(C), httptools' parser (C) and our `on_message_complete`.

Connections move through: CONNECTING (only if TCP is not up when connect() returns: the first
write is tried at once, see `Connection.begin`) -> HANDSHAKING (TLS; wait for what OpenSSL wants)
-> SENDING (only while a write is partial) -> RECEIVING -> (next request on a kept-alive
connection | DRAINING: wait for the server's FIN, so TIME_WAIT stays on its side, like ab).
A draining connection keeps its slot, as in ab (which counts a request done at the server's
close): never more than c connections are open, and at c=1 the next connect does not race the
server's close of the previous one (that race added ~50 µs to every c=1 request here).

Per request it takes `perf_counter_ns()` stamps: start, TCP connected, TLS done, request
written, first response byte, response complete. The phases (µs) are ab's:

    connect    = TLS done - start        (TCP + TLS; 0 on a reused keep-alive connection)
    tls        = TLS done - TCP done     (recorded once per TLS handshake, never for reuses)
    tcp        = TCP done - start        (once per connection that served a response: one RTT on a
                                          real network, since TCP is known up only when the SYN-ACK is in)
    waiting    = first byte - written
    processing = done - TLS done         (= total - connect)
    total      = done - start

Failure columns follow ab: connect (TCP or TLS handshake failed), receive (read error or the
server closed mid-response), length (body length differs from the first response's; the
request still counts as complete), exceptions (timeouts, unparsable responses). Non-2xx
responses are complete and counted apart, not failed.
"""

from __future__ import annotations

import _socket
import errno
import gc
import select
import socket
import ssl
import time
from collections import Counter
from time import perf_counter_ns

import httptools

from workers.load.merge import encode_histogram, new_histogram, record_values
from workers.load.spec import MAX_EXACT_SAMPLES, PHASES, LoadCounters, LoadResult, LoadSpec

TICK_S = 0.05                 # timeout precision: deadlines are checked this often
CANCEL_POLL_S = 0.25          # cancel() is asked at most this often (it may hit a database)
PROGRESS_EVERY_S = 0.25       # on_progress at most 4 times a second
FLUSH_EVERY = 65_536          # past MAX_EXACT_SAMPLES, samples go to the histograms in batches
READ_SIZE = 65_536
DRAIN_GRACE_S = 1.0           # how long a "Connection: close" response's FIN is waited for, at most
_FRAMING_HEADERS = (b"\ncontent-length:", b"\ntransfer-encoding:")

# Linux makes the socket non-blocking in socket() itself: one syscall less per connection.
SOCK_NONBLOCK = getattr(socket, "SOCK_NONBLOCK", 0)
SOCKET_TYPE = socket.SOCK_STREAM | SOCK_NONBLOCK
# poll() and epoll() share these bit values on Linux; poll() is the fallback elsewhere.
READ, WRITE = select.POLLIN, select.POLLOUT
BROKEN = select.POLLERR | select.POLLHUP
# "The peer sent its FIN" in the same event as the data (Linux): a plain-HTTP response that ends
# the connection is then closed at once, without one more read for the EOF.
PEER_CLOSED = getattr(select, "EPOLLRDHUP", 0) if hasattr(select, "epoll") else 0
# Errors that mean the TCP connect itself failed, when they surface at the first write.
CONNECT_ERRNOS = {errno.ECONNREFUSED, errno.ETIMEDOUT, errno.EHOSTUNREACH, errno.ENETUNREACH}
CONNECTING, HANDSHAKING, SENDING, RECEIVING, DRAINING, CLOSED = range(6)


class RawSocket(_socket.socket):
    """The C socket type, plus the weak reference OpenSSL's socket object keeps to it; without
    socket.socket's Python layer (its __init__ and close cost per connection)."""

    __slots__ = ("__weakref__",)


class ConnectFailed(Exception):
    """TCP connect or the TLS handshake failed: ab's Connect column."""


class ReceiveFailed(Exception):
    """A read error, or the server closed before the response was complete: ab's Receive column."""


class ResponseInvalid(Exception):
    """The response could not be parsed: ab's Exceptions column."""


class Poller:
    """Level-triggered readiness: epoll on Linux, poll() elsewhere (timeouts in seconds for both)."""

    def __init__(self):
        if hasattr(select, "epoll"):
            self.impl = select.epoll()
            self.wait = self.impl.poll
            # Closing a socket takes it out of the epoll set (no fd is shared): one syscall less.
            self.forget = lambda fd: None
        else:  # pragma: no cover - not Linux
            self.impl = select.poll()
            self.wait = lambda timeout: self.impl.poll(timeout * 1000)
            self.forget = self.impl.unregister
        self.register = self.impl.register
        self.modify = self.impl.modify

    def close(self) -> None:
        if hasattr(self.impl, "close"):
            self.impl.close()


class Throttle:
    """`due(name, every_s)` is True at most once per `every_s` for each name."""

    def __init__(self):
        self.last: dict[str, float] = {}

    def due(self, name: str, every_s: float) -> bool:
        now = time.monotonic()
        if now - self.last.get(name, 0.0) < every_s:
            return False
        self.last[name] = now
        return True


class quiet_gc:
    """During a run, the cyclic GC has nothing of ours to find but keeps re-scanning every object
    the process already holds (modules, Django, ...): ~8 % of the CPU of a new-connection run.
    Freeze what exists before the run (gc.freeze: out of every later scan) and collect young
    objects less often; each connection's cycles (connection <-> parser) are broken on close."""

    def __enter__(self):
        self.threshold = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 50, 1_000)
        return self

    def __exit__(self, *exc):
        gc.set_threshold(*self.threshold)
        gc.unfreeze()
        return False


class Recorder:
    """Per-phase µs samples: exact lists while small, HdrHistograms always (filled in batches)."""

    def __init__(self):
        self.samples: dict[str, list[int]] = {phase: [] for phase in PHASES}
        self.histograms = {phase: new_histogram() for phase in PHASES}
        self.exact = True
        self.requests = 0
        # Hot path (Engine.record): bound appends (flush() clears the lists in place, so they stay
        # valid) and one comparison per request: `check()` is due once requests > check_at.
        self.append_connect = self.samples["connect"].append
        self.append_waiting = self.samples["waiting"].append
        self.append_processing = self.samples["processing"].append
        self.append_total = self.samples["total"].append
        self.check_at = MAX_EXACT_SAMPLES

    def check(self) -> None:
        """Past MAX_EXACT_SAMPLES: stop keeping exact samples, then flush every FLUSH_EVERY requests."""
        self.exact = False
        self.flush()
        self.check_at = self.requests + FLUSH_EVERY - 1

    def add_tls(self, tls: int) -> None:
        self.add_per_connection("tls", tls)

    def add_per_connection(self, phase: str, value: int) -> None:
        """A phase recorded per connection rather than per request (tls, tcp)."""
        self.samples[phase].append(value)
        if not self.exact and len(self.samples[phase]) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        for phase, values in self.samples.items():
            record_values(self.histograms[phase], values)
            values.clear()

    def finish(self) -> tuple[dict[str, str], dict[str, list[int]] | None]:
        if self.exact:
            for phase, values in self.samples.items():
                record_values(self.histograms[phase], values)
            exact = self.samples
        else:
            self.flush()
            exact = None
        return {phase: encode_histogram(h) for phase, h in self.histograms.items()}, exact


class Engine:
    """Runs one spec in this thread; `result()` afterwards."""

    def __init__(self, spec: LoadSpec, address: tuple[str, int], ssl_context, cancel, on_progress, request: bytes):
        self.spec = spec
        self.address = address
        self.family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.ssl_context = ssl_context
        self.server_name = spec.host
        self.wrap_tls = getattr(ssl_context, "_wrap_socket", None)  # see Connection.start_tls
        if self.wrap_tls is not None:
            self.server_name = ssl_context._encode_hostname(spec.host)  # IDNA, as wrap_socket does
        self.request = request
        self.cancel = cancel
        self.on_progress = on_progress
        self.timeout_ns = int(spec.timeout_s * 1e9)
        self.keepalive = spec.keepalive
        self.requests = spec.requests
        self.counters = LoadCounters()
        self.recorder = Recorder()
        self.status_codes: Counter = Counter()
        self.errors: Counter = Counter()
        self.reserved = 0
        self.finished = 0
        self.stopping = False
        self.cancelled = False
        self.stalled = False
        self.stall_ns = int(spec.stall_s * 1e9) if spec.stall_s else 0
        self.first_start_ns = 0
        self.last_event_ns = 0
        self.last_progress_ns = 0    # the last request that ended other than by a timeout, or the start
        self.document_length: int | None = None
        self.server_software: str | None = None
        self.protocol = ""
        self.cipher = ""
        self.headers_seen = False  # after the first response, parsers skip header callbacks
        self.poller = Poller()
        self.by_fd: dict[int, Connection] = {}
        self.in_flight = 0        # open connections (each holds one of the c slots, draining ones too)
        self.drain_grace_ns = int(min(spec.timeout_s, DRAIN_GRACE_S) * 1e9)

    # --- the loop

    def run(self) -> None:
        """1. Open c connections. 2. Dispatch readiness events until every request is done (or the
        run is stopped). 3. Every TICK_S: expire overdue requests, end a stalled or timed-out run,
        poll cancel, report progress. Every limit is an absolute instant compared with the clock
        here, and sockets never block: a server that trickles bytes extends none of them."""
        throttle = Throttle()
        self.last_progress_ns = perf_counter_ns()
        limit_ns = perf_counter_ns() + int(self.spec.time_limit_s * 1e9) if self.spec.time_limit_s else 0
        try:
            for _ in range(self.spec.concurrency):
                self.open_next()
            by_fd, wait = self.by_fd, self.poller.wait  # the loop's hot path: locals
            next_tick = perf_counter_ns() + int(TICK_S * 1e9)
            while self.in_flight:
                for fd, events in wait(TICK_S):
                    connection = by_fd.get(fd)
                    if connection is not None:
                        connection.ready(events)
                now = perf_counter_ns()
                if now >= next_tick:
                    next_tick = now + int(TICK_S * 1e9)
                    self.tick(now, limit_ns, throttle)
            if self.on_progress is not None:
                self.on_progress(self.finished, self.requests)
        finally:
            for connection in list(self.by_fd.values()):
                connection.abort()
            self.poller.close()

    def tick(self, now: int, limit_ns: int, throttle: Throttle) -> None:
        for connection in [c for c in self.by_fd.values() if now > c.deadline]:
            if connection.state == DRAINING:
                connection.close()  # no FIN within the grace: the response was complete, move on
                self.slot_freed()
            else:
                self.counters.timeouts += 1
                connection.fail("failed_exceptions", "timeout")
        if limit_ns and now >= limit_ns and not self.stopping:
            self.stop(now, cancelled=False)
        if self.stall_ns and now - self.last_progress_ns >= self.stall_ns and not self.stopping:
            self.stalled = True
            self.stop(now, cancelled=False)
        if self.cancel is not None and throttle.due("cancel", CANCEL_POLL_S) and self.cancel():
            self.stop(now, cancelled=True)
        if self.on_progress is not None and throttle.due("progress", PROGRESS_EVERY_S):
            self.on_progress(self.finished, self.requests)

    def stop(self, now: int, cancelled: bool) -> None:
        """Time limit or cancel: no new requests, and requests in flight are abandoned (as ab -t / Ctrl-C)."""
        self.stopping = True
        self.cancelled = self.cancelled or cancelled
        self.last_event_ns = max(self.last_event_ns, now)
        for connection in list(self.by_fd.values()):
            connection.abort()

    # --- slots

    def open_next(self) -> None:
        """Closed loop: reserve a request before connecting, so the last round never over-opens.
        A connection that fails at once (refused, no local port left...) is counted and the next
        one tried, in this loop rather than by recursion."""
        while not self.stopping and self.reserved < self.requests:
            self.reserved += 1
            start = perf_counter_ns()
            if not self.first_start_ns:
                self.first_start_ns = start
            self.counters.connections_opened += 1
            failure = Connection(self, start).connect()
            if failure is None:
                self.in_flight += 1
                return
            self.fail(*failure)

    def slot_freed(self) -> None:
        self.in_flight -= 1
        self.open_next()

    # --- outcomes

    def handshake_done(self, connection: Connection) -> None:
        self.recorder.add_tls((connection.tls_done_ns - connection.tcp_done_ns) // 1000)
        if not self.protocol:
            self.protocol = connection.tls.version() or ""
            self.cipher = (connection.tls.cipher() or ("",))[0]

    def record(self, connection: Connection, done: int) -> None:
        start = connection.start_ns
        connected = connection.connected_ns
        recorder = self.recorder
        recorder.append_connect((connected - start) // 1000)
        recorder.append_waiting((connection.first_byte_ns - connection.written_ns) // 1000)
        recorder.append_processing((done - connected) // 1000)
        recorder.append_total((done - start) // 1000)
        if connection.served == 1:  # the connection's first response: its TCP connect is this request's
            recorder.add_per_connection("tcp", (connection.tcp_done_ns - start) // 1000)
        recorder.requests += 1
        if recorder.requests > recorder.check_at:
            recorder.check()
        counters = self.counters
        counters.complete += 1
        self.last_progress_ns = done
        counters.total_bytes += connection.received
        body_bytes = connection.body_bytes
        counters.html_bytes += body_bytes
        status = connection.status
        self.status_codes[status] += 1
        if not 200 <= status < 300:
            counters.non_2xx += 1
        if body_bytes != self.document_length:
            if self.document_length is None:
                self.document_length = body_bytes
            else:
                counters.failed_length += 1
                counters.failed += 1
        if connection.keep_alive and self.keepalive:
            counters.keepalive_requests += 1
        self.finished += 1
        self.last_event_ns = done

    def fail(self, column: str, error: str) -> None:
        setattr(self.counters, column, getattr(self.counters, column) + 1)
        self.counters.failed += 1
        self.errors[error] += 1
        self.finished += 1
        self.last_event_ns = perf_counter_ns()
        if error != "timeout":  # an answer, if a failing one (refused, reset, closed): not a stall
            self.last_progress_ns = self.last_event_ns

    def result(self) -> LoadResult:
        histograms, samples = self.recorder.finish()
        started = self.first_start_ns or perf_counter_ns()
        time_taken_s = max(0, (self.last_event_ns or started) - started) / 1e9
        started_at = time.time() - (perf_counter_ns() - started) / 1e9
        return LoadResult(
            spec=self.spec, started_at=started_at, time_taken_s=time_taken_s, counters=self.counters,
            histograms=histograms, samples=samples, server_software=self.server_software or "",
            document_length=self.document_length, protocol=self.protocol, cipher=self.cipher,
            status_codes={str(code): n for code, n in sorted(self.status_codes.items())},
            errors=dict(self.errors), cancelled=self.cancelled, stalled=self.stalled, processes=1,
        )


class Connection:
    """One client connection: a non-blocking socket, OpenSSL's C object for TLS, and httptools."""

    __slots__ = ("engine", "sock", "fd", "state", "parser", "deadline", "pending", "served", "head",
                 "start_ns", "connected_ns", "written_ns", "tcp_done_ns", "tls_done_ns", "first_byte_ns",
                 "received", "body_bytes", "status", "complete", "keep_alive", "on_header", "recv", "send", "tls",
                 "watching")

    def __init__(self, engine: Engine, start: int):
        self.engine = engine
        self.start_ns = start
        self.deadline = start + engine.timeout_ns
        self.served = 0
        self.pending = b""
        self.connected_ns = self.written_ns = self.tcp_done_ns = self.tls_done_ns = 0
        # httptools calls on_header once per header line: a Python call each, ~6 per response. Only
        # the run's first responses need them (the Server header); the status is read from the
        # parser at the end, and framing only matters at an early EOF (see `framed`).
        self.on_header = None if engine.headers_seen else self.header
        self.parser = httptools.HttpResponseParser(self)
        self.tls = None
        self.watching = 0  # the epoll events asked for: a change of interest costs a syscall
        self.reset_response()
        self.state = CONNECTING

    def connect(self) -> tuple[str, str] | None:
        """Open the connection and start the exchange. A failure found at once comes back as
        (ab's column, error) for the caller to count; later ones arrive as events."""
        engine = self.engine
        try:
            self.sock = sock = RawSocket(engine.family, SOCKET_TYPE)
        except OSError as exc:  # out of file descriptors
            self.state, self.parser = CLOSED, None
            return "failed_connect", f"connect: {type(exc).__name__}"
        if not SOCK_NONBLOCK:  # pragma: no cover - not Linux
            sock.setblocking(False)
        self.recv, self.send = sock.recv, sock.send
        self.fd = sock.fileno()
        if engine.ssl_context is not None:
            # TLS 1.3: the request follows the client's Finished at once; with Nagle it waited for
            # the server's ACK of that Finished, one more RTT per new connection on a real link
            # (tests/wan). Plain HTTP's request is the first write, so Nagle never holds it.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # ab stamps a request's start here too: after making the socket, right before connect().
        self.start_ns = start = perf_counter_ns()
        self.deadline = start + engine.timeout_ns
        code = sock.connect_ex(engine.address)
        if code not in (0, errno.EINPROGRESS):
            self.close()
            return "failed_connect", f"connect: {type(OSError(code, '')).__name__}"
        engine.by_fd[self.fd] = self
        try:
            self.begin()
        except (ConnectFailed, ReceiveFailed, ResponseInvalid) as exc:
            self.close()
            return failure_of(exc)
        return None

    def begin(self) -> None:
        """Write at once instead of waiting for "writable": on loopback and on fast links the
        kernel has usually finished TCP's handshake inside connect() (its SYN-ACK is handled as
        connect releases the socket), which saves an epoll change and a wake-up per connection.
        If TCP is not up yet, the write says so (EAGAIN, nothing sent) and we wait as ab does.
        Over TLS the probe is a zero-length send, so that the ClientHello is made only once TCP is
        up: its key generation belongs in the TLS time, whatever the network's round trip."""
        self.tcp_done_ns = tcp_done = perf_counter_ns()
        engine = self.engine
        if engine.ssl_context is None:
            self.state = RECEIVING
            self.connected_ns = tcp_done
            if self.write_first(engine.request):
                self.written_ns = perf_counter_ns()
                self.watch(READ | PEER_CLOSED, first=True)
            return
        if self.write_first(b""):
            self.start_tls()
            self.state = HANDSHAKING
            self.continue_handshake(first=True)

    def write_first(self, data: bytes) -> bool:
        """The first write: plain HTTP's request, or the zero-length TCP probe before TLS. True if
        all of it went out; else the connection waits for "writable"."""
        try:
            sent = self.send(data)
        except BlockingIOError:  # TCP is not up yet
            self.state = CONNECTING
            self.watch(WRITE, first=True)
            return False
        except OSError as exc:
            if exc.errno in CONNECT_ERRNOS or not data:  # refused, or the TLS handshake cannot start
                raise ConnectFailed(type(exc).__name__) from None
            self.engine.counters.write_errors += 1
            raise ReceiveFailed(type(exc).__name__) from None
        if sent < len(data):  # a request larger than the socket's buffer (long custom headers)
            self.pending = data[sent:]
            self.state = SENDING
            self.watch(WRITE, first=True)
            return False
        return True

    def reset_response(self) -> None:
        self.first_byte_ns = 0
        self.received = 0
        self.body_bytes = 0
        self.status = 0
        self.head = b""
        self.complete = False
        self.keep_alive = False

    # --- readiness

    def ready(self, events: int) -> None:
        state = self.state
        try:
            if state == RECEIVING or state == DRAINING:
                self.receive(events)
            elif state == CONNECTING:
                self.connected(events)
            elif state == HANDSHAKING:
                self.continue_handshake()
            elif state == SENDING:
                self.write_pending()
        except (ConnectFailed, ReceiveFailed, ResponseInvalid) as exc:
            self.close()
            self.report(exc)

    def connected(self, events: int) -> None:
        """TCP came up (or was refused) after the first write found it not ready."""
        self.tcp_done_ns = tcp_done = perf_counter_ns()
        if events & BROKEN:
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:  # else: accepted, then closed at once; the request's read will say so
                raise ConnectFailed(type(OSError(code, "")).__name__)
        if self.engine.ssl_context is None:
            self.send_request(self.start_ns, tcp_done)
            return
        self.start_tls()
        self.state = HANDSHAKING
        self.continue_handshake()

    def start_tls(self) -> None:
        """OpenSSL's C socket object straight from the context: SSLContext.wrap_socket's Python
        layer costs 4 syscalls (getsockopt, getsockname, getpeername, ioctl) and ~10 µs per
        connection. Private since Python 3.7 (as SSLSocket._sslobj); the public path otherwise."""
        engine = self.engine
        if engine.wrap_tls is not None:
            self.tls = engine.wrap_tls(self.sock, False, engine.server_name)
        else:  # pragma: no cover - a Python without SSLContext._wrap_socket
            self.sock = engine.ssl_context.wrap_socket(socket.socket(fileno=self.sock.detach()),
                                                       server_hostname=engine.server_name,
                                                       do_handshake_on_connect=False)
            self.tls = self.sock

    def continue_handshake(self, first: bool = False) -> None:
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            self.watch(READ, first)
            return
        except ssl.SSLWantWriteError:
            self.watch(WRITE, first)
            return
        except OSError as exc:
            raise ConnectFailed(handshake_failure(exc)) from None
        self.tls_done_ns = tls_done = perf_counter_ns()
        self.use_tls_record_layer()
        self.engine.handshake_done(self)
        if first:  # pragma: no cover - a TLS handshake needs the server's answer
            self.watch(READ, first=True)
        self.send_request(self.start_ns, tls_done)

    def use_tls_record_layer(self) -> None:
        tls = self.tls
        if isinstance(tls, ssl.SSLSocket):  # pragma: no cover - the public path
            tls = self.tls = getattr(tls, "_sslobj", None) or tls
        self.recv = tls.read
        self.send = tls.write

    def watch(self, events: int, first: bool = False) -> None:
        if first:
            self.engine.poller.register(self.fd, events)
        elif events != self.watching:
            self.engine.poller.modify(self.fd, events)
        self.watching = events

    # --- requests

    def send_request(self, start: int, connected: int) -> None:
        """Write the request; `connected` = TLS done (= start on a reused connection, as ab)."""
        self.start_ns, self.connected_ns = start, connected
        self.deadline = start + self.engine.timeout_ns
        self.state = RECEIVING
        self.write(self.engine.request)
        self.written_ns = perf_counter_ns()
        if self.state == RECEIVING:
            self.watch(READ | PEER_CLOSED if self.tls is None else READ)

    def write(self, data: bytes) -> None:
        """Send all of `data` now if the socket takes it, else keep the rest for when it is writable."""
        try:
            sent = self.send(data)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            sent = 0
        except OSError as exc:
            self.engine.counters.write_errors += 1
            raise ReceiveFailed(type(exc).__name__) from None
        if sent < len(data):
            self.pending = data[sent:]
            self.state = SENDING
            self.watch(WRITE)

    def write_pending(self) -> None:
        data, self.pending = self.pending, b""
        self.state = RECEIVING
        self.write(data)
        if self.state == RECEIVING:
            self.written_ns = perf_counter_ns()
            self.watch(READ | PEER_CLOSED if self.tls is None else READ)

    def receive(self, events: int) -> None:
        try:
            data = self.recv(READ_SIZE)
        except (BlockingIOError, ssl.SSLWantReadError):
            return  # e.g. only a TLS 1.3 session ticket arrived
        except ssl.SSLWantWriteError:
            return
        except ssl.SSLEOFError:
            data = b""  # EOF without close_notify: most servers end HTTP/1.1 connections so
        except (ssl.SSLError, OSError) as exc:
            if self.state == DRAINING:
                self.close()  # e.g. a reset instead of a FIN: the response was complete
                self.engine.slot_freed()
                return
            raise ReceiveFailed(f"TLS: {type(exc).__name__}" if isinstance(exc, ssl.SSLError)
                                else type(exc).__name__) from None
        if not data:
            self.end_of_stream()
            return
        if self.state == DRAINING:
            return  # bytes after a complete "Connection: close" response: ignore, wait for the FIN
        if len(data) == READ_SIZE and self.tls is not None and self.tls.pending():
            data += self.recv(self.tls.pending())  # a full buffer: decrypted bytes may be left over
        if not self.first_byte_ns:
            self.first_byte_ns = perf_counter_ns()
            self.head = data  # kept (a reference) in case the server ends the body with its FIN
        elif b"\r\n\r\n" not in self.head:
            self.head += data  # headers longer than one read
        self.received += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, (ReceiveFailed, ConnectFailed)):
                raise exc.__context__ from None  # a write of the next kept-alive request failed
            raise
        except httptools.HttpParserError as exc:
            raise ResponseInvalid(f"unparsable response ({type(exc).__name__})") from None
        if events & PEER_CLOSED and self.state == DRAINING:
            # The response is complete and the server's FIN came with it (plain HTTP only: a TLS
            # server's close_notify would still be unread, and closing over unread bytes sends a
            # reset): the FIN ab waits for is here already.
            self.close()
            self.engine.slot_freed()

    def end_of_stream(self) -> None:
        """The server closed its side: the FIN we waited for, a close-delimited body, or a failure."""
        if self.head and not self.complete and self.parser.get_status_code() and not framed(self.head):
            self.on_message_complete()  # a body delimited by the connection's end (no length, not chunked)
        if self.state == DRAINING:
            self.close()
            self.engine.slot_freed()
            return
        if self.served and self.received == 0:
            # The server closed an idle kept-alive connection: not the request's fault; retry, as ab does.
            self.close()
            self.engine.reserved -= 1
            self.engine.slot_freed()
            return
        raise ReceiveFailed("closed by the server")

    # --- httptools callbacks (on_header is a slot: None once the run has seen a response)

    def header(self, name: bytes, value: bytes) -> None:
        if self.engine.server_software is None and name.lower() == b"server":
            self.engine.server_software = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self.body_bytes += len(body)

    def on_message_complete(self) -> None:
        """Record the response; on a kept-alive connection send the next request right here."""
        done = perf_counter_ns()
        parser = self.parser
        self.status = parser.get_status_code()
        self.complete = True
        self.keep_alive = keep_alive = parser.should_keep_alive()
        self.served += 1
        engine = self.engine
        engine.headers_seen = True
        engine.record(self, done)
        if keep_alive and engine.keepalive and not engine.stopping and engine.reserved < engine.requests:
            engine.reserved += 1
            if self.on_header is not None:
                self.use_lean_parser()
            # Next request on this connection, inlined (= send_request(now, now) + reset_response()).
            self.start_ns = self.connected_ns = now = perf_counter_ns()
            self.deadline = now + engine.timeout_ns
            self.first_byte_ns = self.received = self.body_bytes = self.status = 0
            self.head = b""
            self.complete = self.keep_alive = False
            self.write(engine.request)
            self.written_ns = perf_counter_ns()
        elif keep_alive:
            self.close()
            engine.slot_freed()
        else:
            # The server closes: wait for its FIN (bounded) so that TIME_WAIT stays on its side, like ab.
            self.state = DRAINING
            self.deadline = perf_counter_ns() + engine.drain_grace_ns

    def use_lean_parser(self) -> None:
        """A kept-alive connection opened before the run's first response: parse on without header
        callbacks (httptools reads them once, when the parser is made)."""
        self.on_header = None
        self.parser = httptools.HttpResponseParser(self)

    # --- endings

    def report(self, exc: Exception) -> None:
        """Count a failure in ab's column (the connection is closed already) and free the slot."""
        self.engine.fail(*failure_of(exc))
        self.engine.slot_freed()

    def fail(self, column: str, error: str) -> None:
        """A failure found outside the socket's own events (a timeout): count it, free the slot."""
        self.close()
        self.engine.fail(column, error)
        self.engine.slot_freed()

    def close(self) -> None:
        """Close now (after a failure too: ab closes and moves on). Breaks the connection <-> parser
        cycle, so refcounting frees it at once rather than the cyclic GC."""
        if self.state == CLOSED:
            return
        self.state = CLOSED
        engine = self.engine
        if engine.by_fd.pop(self.fd, None) is not None:
            engine.poller.forget(self.fd)
        self.sock.close()
        self.parser = None

    def abort(self) -> None:
        """Abandon (stop, cancel, end of run): no count, and its slot is not refilled."""
        if self.state == CLOSED:
            return
        self.close()
        self.engine.in_flight -= 1


def failure_of(exc: Exception) -> tuple[str, str]:
    """ab's failure column for one of our exceptions, and the error class counted under it."""
    if isinstance(exc, ConnectFailed):
        return "failed_connect", f"connect: {exc}"
    if isinstance(exc, ReceiveFailed):
        return "failed_receive", f"receive: {exc}"
    return "failed_exceptions", f"exception: {exc}"


def handshake_failure(exc: OSError) -> str:
    """Why a TLS handshake failed: TCP refused (the optimistic ClientHello is the first write),
    the server closed, or what OpenSSL said."""
    if exc.errno in CONNECT_ERRNOS and not isinstance(exc, ssl.SSLError):
        return type(exc).__name__
    if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError)):
        return f"TLS handshake: connection closed ({type(exc).__name__})"
    return f"TLS handshake: {handshake_error(exc)}"


def handshake_error(exc: BaseException) -> str:
    """A bare SSLError says nothing: add OpenSSL's reason ("SSLError (WRONG_VERSION_NUMBER)").
    Subclasses (SSLCertVerificationError...) name the problem already."""
    reason = getattr(exc, "reason", None)
    return f"SSLError ({reason})" if type(exc) is ssl.SSLError and reason else type(exc).__name__


def framed(head: bytes) -> bool:
    """Does this response head say where its body ends (Content-Length or Transfer-Encoding)?
    If not, the body ends with the connection (RFC 9112 §6.3), and an EOF completes it."""
    end = head.find(b"\r\n\r\n")
    lowered = (head if end < 0 else head[:end + 2]).lower()
    return any(name in lowered for name in _FRAMING_HEADERS)
