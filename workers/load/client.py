"""An ApacheBench-style closed-loop HTTP/1.1 load generator (issue #4, "Load engine").

`run_load(LoadSpec)` runs `requests` requests over `concurrency` connections, like
`ab -n N -c C [-k] URL`, on uvloop with raw `asyncio.Protocol`s, the httptools response
parser and our own TLS over `ssl.MemoryBIO` (one layer less than asyncio's SSL transport,
and the handshake is timed exactly). See /work/shared/loadgen-notes.md §1 and §3.3.

Per request it takes `perf_counter_ns()` stamps: start, TCP connected, TLS done, request
written, first response byte, response complete. The phases (µs) are ab's:

    connect    = TLS done - start        (TCP + TLS; 0 on a reused keep-alive connection)
    tls        = TLS done - TCP done     (recorded once per TLS handshake, never for reuses)
    waiting    = first byte - written
    processing = done - TLS done         (= total - connect)
    total      = done - start

Failure columns follow ab: connect (TCP or TLS handshake failed), receive (read error or the
server closed mid-response), length (body length differs from the first response's; the
request still counts as complete), exceptions (timeouts, unparsable responses). Non-2xx
responses are complete and counted apart, not failed.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import queue as queue_module
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from time import perf_counter_ns

import httptools
import uvloop

from workers.load.merge import encode_histogram, merge_results, new_histogram, record_values, result_from_dict
from workers.load.spec import MAX_EXACT_SAMPLES, PHASES, LoadCounters, LoadResult, LoadSpec

__all__ = ["LoadError", "build_request", "merge_results", "run_load"]

USER_AGENT = "TLSAudit-loadtest/1.0 (ApacheBench-compatible)"
TICK_S = 0.05                 # timeout precision: deadlines are checked this often
CANCEL_POLL_S = 0.25          # cancel() is asked at most this often (it may hit a database)
PROGRESS_EVERY_S = 0.25       # on_progress at most 4 times a second
FLUSH_EVERY = 65_536          # past MAX_EXACT_SAMPLES, samples go to the histograms in batches
START_BARRIER_TIMEOUT_S = 60  # child processes wait for each other this long, then go anyway
TLS_READ_SIZE = 16_384       # one TLS record at most: read_tls() loops while more is pending
_FRAMING_HEADERS = frozenset({b"content-length", b"transfer-encoding"})
DAEMONIC_NOTE = ("Ran in one process instead of {asked}: the caller is a daemonic process (e.g. a Celery "
                 "prefork child), which cannot start child processes.")


class LoadError(Exception):
    """The run cannot start at all (bad spec, the host name does not resolve)."""


class ConnectFailed(Exception):
    """TCP connect or the TLS handshake failed: ab's Connect column."""


class ReceiveFailed(Exception):
    """A read error, or the server closed before the response was complete: ab's Receive column."""

    def __init__(self, reason: str, received: int):
        super().__init__(reason)
        self.received = received


class ResponseInvalid(Exception):
    """The response could not be parsed: ab's Exceptions column."""


# ---------------------------------------------------------------------------------------------
# Public entry point


def run_load(spec: LoadSpec, *, cancel: Callable[[], bool] | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> LoadResult:
    """Run `spec` and return what happened (partial, with cancelled=True, if `cancel()` said so).

    With spec.processes > 1 the run is split over that many OS processes (spawn context),
    each with its share of n and c, and their results are merged exactly. A daemonic caller
    (a Celery prefork child) cannot have children: it runs in-process and says so in `notes`.
    """
    check_spec(spec)
    processes = min(spec.processes, spec.concurrency)
    notes = []
    if processes > 1 and multiprocessing.current_process().daemon:
        notes.append(DAEMONIC_NOTE.format(asked=processes))
        processes = 1
    if processes <= 1:
        result = run_in_this_process(replace(spec, processes=1), cancel, on_progress)
        result.spec = spec
    else:
        result = run_in_processes(spec, processes, cancel, on_progress)
    result.notes = result.notes + notes
    return result


def check_spec(spec: LoadSpec) -> None:
    problems = []
    if spec.scheme not in ("http", "https"):
        problems.append(f"scheme must be http or https, got {spec.scheme!r}")
    if spec.requests < 1:
        problems.append("requests must be at least 1")
    if not 1 <= spec.concurrency <= spec.requests:
        problems.append("concurrency must be between 1 and the number of requests")
    if spec.timeout_s <= 0:
        problems.append("timeout_s must be positive")
    if spec.time_limit_s is not None and spec.time_limit_s <= 0:
        problems.append("time_limit_s must be positive")
    if spec.tls_version not in (None, "1.2", "1.3"):
        problems.append(f"tls_version must be 1.2 or 1.3, got {spec.tls_version!r}")
    if spec.processes < 1:
        problems.append("processes must be at least 1")
    if problems:
        raise LoadError("; ".join(problems))


def run_in_this_process(spec: LoadSpec, cancel, on_progress) -> LoadResult:
    address = resolve_once(spec)
    engine = Engine(spec, address, build_ssl_context(spec), cancel, on_progress)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner, quiet_gc():
        runner.run(engine.run())
    return engine.result()


class quiet_gc:
    """During a run, the cyclic GC has nothing of ours to find but keeps re-scanning every object
    the process already holds (modules, Django, ...): ~8 % of the CPU of a new-connection run.
    Freeze what exists before the run (gc.freeze: out of every later scan) and collect young
    objects less often; each connection's cycles (protocol <-> parser, transport) are still collected."""

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


def resolve_once(spec: LoadSpec) -> tuple[str, int]:
    """Like ab, look the name up once before the run (callers normally pass a checked spec.ip)."""
    if spec.ip:
        return spec.ip, spec.port
    try:
        infos = socket.getaddrinfo(spec.host, spec.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise LoadError(f"The name {spec.host} does not resolve: {exc}") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return infos[0][4][0], spec.port


def build_ssl_context(spec: LoadSpec) -> ssl.SSLContext | None:
    """Client context: no verification unless asked (like ab), forced version, TLS <= 1.2 ciphers, no tickets."""
    if spec.scheme != "https":
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if spec.ca_file or not spec.insecure:
        context.load_default_certs()
        if spec.ca_file:
            context.load_verify_locations(cafile=spec.ca_file)
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if spec.tls_version:
        version = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}[spec.tls_version]
        context.minimum_version = context.maximum_version = version
    if spec.ciphers:
        try:
            context.set_ciphers(spec.ciphers)
        except ssl.SSLError:
            raise LoadError(f"OpenSSL accepts no cipher of {spec.ciphers!r}") from None
    # Every connection is a full handshake: we never offer a session, and ask for no tickets.
    context.options |= ssl.OP_NO_TICKET
    return context


def build_request(spec: LoadSpec) -> bytes:
    """The GET request, built once. Custom headers replace ours of the same name (as ab's -H)."""
    default_port = 443 if spec.scheme == "https" else 80
    host = f"[{spec.host}]" if ":" in spec.host else spec.host
    headers = {"host": ("Host", host if spec.port == default_port else f"{host}:{spec.port}"),
               "user-agent": ("User-Agent", USER_AGENT), "accept": ("Accept", "*/*")}
    if not spec.keepalive:
        headers["connection"] = ("Connection", "close")
    for name, value in spec.headers:
        if any(c in name + value for c in "\r\n\0") or not name.strip() or ":" in name:
            raise LoadError(f"invalid header {name!r}: {value!r}")
        headers[name.strip().lower()] = (name.strip(), value.strip())
    lines = [f"GET {spec.path or '/'} HTTP/1.1"] + [f"{n}: {v}" for n, v in headers.values()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# ---------------------------------------------------------------------------------------------
# Several processes


def split_evenly(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_in_processes(spec: LoadSpec, processes: int, cancel, on_progress) -> LoadResult:
    """1. Start `processes` spawned children, each with its share of n and c.
    2. They wait at a barrier so that all start together, then run in-process.
    3. Meanwhile poll `cancel` (relayed through an Event) and sum the children's progress.
    4. Merge their result dicts exactly."""
    context = multiprocessing.get_context("spawn")
    shares = zip(split_evenly(spec.requests, processes), split_evenly(spec.concurrency, processes))
    specs = [replace(spec, requests=n, concurrency=max(1, min(c, n)), processes=1) for n, c in shares]
    stop = context.Event()
    barrier = context.Barrier(processes)
    progress = context.Array("q", processes, lock=False)
    results = context.Queue()
    children = [context.Process(target=child_main, args=(s.to_dict(), i, stop, barrier, progress, results),
                                name=f"loadgen-{i}", daemon=True) for i, s in enumerate(specs)]
    for child in children:
        child.start()
    try:
        parts = collect_children(children, results, stop, progress, spec.requests, cancel, on_progress)
    finally:
        stop.set()
        for child in children:
            child.join(timeout=5)
            if child.is_alive():
                child.kill()
    merged = result_from_dict(merge_results(parts))
    merged.spec = spec
    return merged


def child_main(spec_dict, index, stop, barrier, progress, results) -> None:
    spec = LoadSpec.from_dict(spec_dict)
    try:
        barrier.wait(timeout=START_BARRIER_TIMEOUT_S)
    except threading.BrokenBarrierError:
        pass  # a sibling failed to start: run anyway, the merge still adds up
    try:
        result = run_in_this_process(spec, stop.is_set, lambda done, _total: progress.__setitem__(index, done))
        results.put((index, result.to_dict()))
    except BaseException as exc:  # report, don't hang the parent
        results.put((index, {"error": f"{type(exc).__name__}: {exc}"}))


def collect_children(children, results, stop, progress, total, cancel, on_progress) -> list[dict]:
    parts: dict[int, dict] = {}
    throttle = Throttle()
    while len(parts) < len(children):
        try:
            index, payload = results.get(timeout=0.05)
            if "error" in payload:
                raise LoadError(f"load process {index} failed: {payload['error']}")
            parts[index] = payload
            continue
        except queue_module.Empty:
            pass
        if any(not c.is_alive() and c.exitcode not in (0, None) and i not in parts for i, c in enumerate(children)):
            raise LoadError("a load process died without a result")
        if cancel is not None and throttle.due("cancel", CANCEL_POLL_S) and cancel():
            stop.set()
        if on_progress is not None and throttle.due("progress", PROGRESS_EVERY_S):
            on_progress(sum(progress), total)
    return [parts[i] for i in sorted(parts)]


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


# ---------------------------------------------------------------------------------------------
# One process: the event-loop engine


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

    def add(self, connect: int, waiting: int, processing: int, total: int) -> None:
        self.append_connect(connect)
        self.append_waiting(waiting)
        self.append_processing(processing)
        self.append_total(total)
        self.requests += 1
        if self.requests > self.check_at:
            self.check()

    def check(self) -> None:
        """Past MAX_EXACT_SAMPLES: stop keeping exact samples, then flush every FLUSH_EVERY requests."""
        self.exact = False
        self.flush()
        self.check_at = self.requests + FLUSH_EVERY - 1

    def add_tls(self, tls: int) -> None:
        self.samples["tls"].append(tls)
        if not self.exact and len(self.samples["tls"]) >= FLUSH_EVERY:
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


class Slot:
    """One of the c closed-loop workers: its task and the deadline of its request in flight."""

    __slots__ = ("task", "deadline", "expired")

    def __init__(self):
        self.task: asyncio.Task | None = None
        self.deadline = 0
        self.expired = False


class Engine:
    """Runs one spec on the current event loop; `result()` afterwards."""

    def __init__(self, spec: LoadSpec, address: tuple[str, int], ssl_context, cancel, on_progress):
        self.spec = spec
        self.address = address
        self.ssl_context = ssl_context
        self.server_name = spec.host
        self.request = build_request(spec)
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
        self.first_start_ns = 0
        self.last_event_ns = 0
        self.document_length: int | None = None
        self.server_software: str | None = None
        self.protocol = ""
        self.cipher = ""
        self.slots: list[Slot] = []
        self.draining: set[Connection] = set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.slots = [Slot() for _ in range(self.spec.concurrency)]
        for slot in self.slots:
            slot.task = loop.create_task(self.run_slot(slot))
        ticker = loop.create_task(self.tick())
        outcomes = await asyncio.gather(*(s.task for s in self.slots), return_exceptions=True)
        ticker.cancel()
        if self.on_progress is not None:
            self.on_progress(self.finished, self.spec.requests)
        for connection in list(self.draining):
            connection.abort()
        await asyncio.sleep(0)  # let aborted transports call connection_lost
        bugs = [o for o in outcomes if isinstance(o, Exception)]
        if bugs:
            raise bugs[0]

    def reserve(self) -> bool:
        """Closed loop: a worker takes a request before connecting, so the last round never over-opens."""
        if self.stopping or self.reserved >= self.spec.requests:
            return False
        self.reserved += 1
        return True

    async def run_slot(self, slot: Slot) -> None:
        while self.reserve():
            await self.serve_connection(slot)

    async def serve_connection(self, slot: Slot) -> None:
        """1. Open a connection (TCP, then TLS, each timed) for the reserved request.
        2. Send it; the connection then serves as many requests as it may keep alive and the
           budget allows, from its own callbacks (no coroutine switch per kept-alive request).
        3. Count a failure in ab's column, or retire the connection when it is done."""
        start = perf_counter_ns()
        if not self.first_start_ns:
            self.first_start_ns = start
        slot.deadline = start + self.timeout_ns
        connection = Connection(self, slot)
        connection.start_ns = start
        # One future per connection: done when it has served its last request (or failed). The
        # request is sent (or the TLS handshake started) from connection_made itself, not after an
        # event-loop hop back to this coroutine.
        connection.waiter = self.loop.create_future()
        self.counters.connections_opened += 1
        try:
            try:
                await self.loop.create_connection(lambda: connection, *self.address)
            except OSError as exc:
                raise ConnectFailed(type(exc).__name__) from None
            await connection.waiter
        except ConnectFailed as exc:
            self.fail("failed_connect", f"connect: {exc}")
        except ReceiveFailed as exc:
            if connection.served and exc.received == 0:
                self.reserved -= 1  # the server closed an idle kept-alive connection: retry, as ab does
            else:
                self.fail("failed_receive", f"receive: {exc}")
        except ResponseInvalid as exc:
            self.fail("failed_exceptions", f"exception: {exc}")
        except asyncio.CancelledError:
            if not slot.expired:
                connection.abort()
                raise
            slot.expired = False
            asyncio.current_task().uncancel()
            self.counters.timeouts += 1
            self.fail("failed_exceptions", "timeout")
        finally:
            slot.deadline = 0
        self.retire(connection)

    def handshake_done(self, connection: Connection) -> None:
        """A TLS handshake finished: time it (stamped in the protocol callbacks: no event-loop hop
        in the phases), note the negotiated protocol once."""
        self.recorder.add_tls((connection.tls_done_ns - connection.tcp_done_ns) // 1000)
        if not self.protocol:
            self.protocol = connection.sslobj.version() or ""
            self.cipher = (connection.sslobj.cipher() or ("",))[0]

    def record(self, connection: Connection, done: int) -> None:
        start = connection.start_ns
        connected = connection.connected_ns
        recorder = self.recorder
        recorder.append_connect((connected - start) // 1000)
        recorder.append_waiting((connection.first_byte_ns - connection.written_ns) // 1000)
        recorder.append_processing((done - connected) // 1000)
        recorder.append_total((done - start) // 1000)
        recorder.requests += 1
        if recorder.requests > recorder.check_at:
            recorder.check()
        counters = self.counters
        counters.complete += 1
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

    def retire(self, connection: Connection) -> None:
        """Done with a connection. If the server said it closes, wait for its FIN (bounded) so that
        TIME_WAIT stays on its side, like ab; after a failure, abort; else close it ourselves."""
        if connection.closed:
            return
        if not connection.complete:
            connection.abort()
        elif not connection.keep_alive:
            connection.drain_deadline = perf_counter_ns() + self.timeout_ns
            self.draining.add(connection)
        else:
            connection.close()

    async def tick(self) -> None:
        """Every TICK_S: expire overdue requests, stop at the time limit, poll cancel, report progress."""
        throttle = Throttle()
        limit_ns = self.first_deadline_ns()
        while True:
            await asyncio.sleep(TICK_S)
            now = perf_counter_ns()
            self.expire_overdue(now)
            if limit_ns and now >= limit_ns and not self.stopping:
                self.stop(now, cancelled=False)
            if self.cancel is not None and throttle.due("cancel", CANCEL_POLL_S) and self.cancel():
                self.stop(now, cancelled=True)
            if self.on_progress is not None and throttle.due("progress", PROGRESS_EVERY_S):
                self.on_progress(self.finished, self.spec.requests)

    def first_deadline_ns(self) -> int:
        if self.spec.time_limit_s is None:
            return 0
        return perf_counter_ns() + int(self.spec.time_limit_s * 1e9)

    def expire_overdue(self, now: int) -> None:
        for slot in self.slots:
            if slot.deadline and now > slot.deadline and not slot.expired:
                slot.expired = True
                slot.task.cancel()
        for connection in [c for c in self.draining if now > c.drain_deadline]:
            connection.abort()

    def stop(self, now: int, cancelled: bool) -> None:
        """Time limit or cancel: no new requests, and requests in flight are abandoned (as ab -t / Ctrl-C)."""
        self.stopping = True
        self.cancelled = self.cancelled or cancelled
        self.last_event_ns = max(self.last_event_ns, now)
        for slot in self.slots:
            if slot.deadline and not slot.task.done():
                slot.task.cancel()

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
            errors=dict(self.errors), cancelled=self.cancelled, processes=1,
        )


class Connection(asyncio.Protocol):
    """One client connection: raw transport, optional TLS over MemoryBIO, httptools parser.

    `waiter` is the future its worker awaits: first the TLS handshake, then "this connection is
    done serving" (kept-alive requests are sent from `on_message_complete`, not by the worker).
    """

    def __init__(self, engine: Engine, slot: Slot):
        self.engine = engine
        self.slot = slot
        self.loop = engine.loop
        self.keepalive = engine.spec.keepalive
        self.timeout_ns = engine.timeout_ns
        self.request = engine.request
        self.transport = None
        self.parser = httptools.HttpResponseParser(self)
        self.sslobj: ssl.SSLObject | None = None
        self.incoming: ssl.MemoryBIO | None = None
        self.outgoing: ssl.MemoryBIO | None = None
        self.handshaking = False
        self.waiter: asyncio.Future | None = None
        self.closed = False
        self.drain_deadline = 0
        self.served = 0            # responses completed on this connection
        self.lean = False          # parsing without header callbacks (see use_lean_parser)
        self.start_ns = self.connected_ns = self.written_ns = self.tcp_done_ns = self.tls_done_ns = 0
        self.reset_response()

    def reset_response(self) -> None:
        self.first_byte_ns = 0
        self.received = 0
        self.body_bytes = 0
        self.status = 0
        self.framed = self.lean
        self.complete = False
        self.keep_alive = False

    # --- transport callbacks

    def connection_made(self, transport) -> None:
        """TCP is up: start the TLS handshake, or send the first request right away."""
        self.tcp_done_ns = tcp_done = perf_counter_ns()
        self.transport = transport
        engine = self.engine
        if engine.ssl_context is not None:
            self.start_tls(engine.ssl_context, engine.server_name)
        else:
            self.send_request(self.start_ns, tcp_done)

    def data_received(self, data: bytes) -> None:
        if self.sslobj is not None:
            self.incoming.write(data)
            if self.handshaking and not self.continue_handshake():
                return
            data = self.read_tls()
            if not data:
                return
        if not self.first_byte_ns:
            self.first_byte_ns = perf_counter_ns()
        self.received += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.settle(ResponseInvalid(f"unparsable response ({type(exc).__name__})"))
            self.abort()

    def eof_received(self):
        return False  # close our side too

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.engine.draining.discard(self)
        try:
            self.settle_on_close(exc)
        finally:
            # Break the reference cycles (parser -> our bound callbacks -> us; us <-> transport) so
            # that refcounting frees the connection now: left to the cyclic GC, freeing ~5 objects
            # per connection cost ~6 % of a new-connection run's CPU.
            self.parser = None
            self.transport = None

    def settle_on_close(self, exc) -> None:
        if self.waiter is None or self.waiter.done():
            return
        if self.handshaking:
            self.settle(ConnectFailed(f"TLS handshake: connection closed ({exc or 'EOF'})"))
        elif self.status and not self.framed and not self.complete:
            self.on_message_complete()  # a body delimited by the connection's end (no length, not chunked)
        else:
            reason = type(exc).__name__ if exc else "closed by the server"
            self.settle(ReceiveFailed(reason, self.received))

    # --- TLS over memory BIOs

    def start_tls(self, context: ssl.SSLContext, server_name: str) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.sslobj = context.wrap_bio(self.incoming, self.outgoing, server_hostname=server_name)
        self.handshaking = True
        self.continue_handshake()

    def continue_handshake(self) -> bool:
        """Advance the handshake; True once it is done (and the first request sent)."""
        try:
            self.sslobj.do_handshake()
        except ssl.SSLWantReadError:
            self.flush_tls()
            return False
        except (ssl.SSLError, ssl.CertificateError, OSError) as exc:
            self.flush_tls()
            self.settle(ConnectFailed(f"TLS handshake: {handshake_error(exc)}"))
            self.abort()
            return False
        self.flush_tls()
        self.tls_done_ns = tls_done = perf_counter_ns()
        self.handshaking = False
        self.engine.handshake_done(self)
        self.send_request(self.start_ns, tls_done)
        return True

    def read_tls(self) -> bytes:
        chunks = []
        sslobj, incoming = self.sslobj, self.incoming
        try:
            while True:
                chunk = sslobj.read(TLS_READ_SIZE)
                if not chunk:
                    break
                chunks.append(chunk)
                if not incoming.pending and not sslobj.pending():
                    break  # all consumed: skip the read that would only raise SSLWantReadError
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            pass  # close_notify: the FIN follows
        except ssl.SSLError as exc:
            self.settle(ReceiveFailed(f"TLS: {type(exc).__name__}", self.received))
            self.abort()
            return b""
        if self.outgoing.pending:
            self.flush_tls()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def flush_tls(self) -> None:
        if self.outgoing.pending and not self.closed:
            self.transport.write(self.outgoing.read())

    # --- requests

    def send_request(self, start: int, connected: int) -> None:
        """Write the request; `connected` = TLS done (= start on a reused connection, as ab)."""
        self.start_ns, self.connected_ns = start, connected
        self.slot.deadline = start + self.timeout_ns
        self.reset_response()
        if self.waiter is None or self.waiter.done():
            self.waiter = self.loop.create_future()
        request = self.engine.request
        if self.sslobj is not None:
            self.sslobj.write(request)
            self.transport.write(self.outgoing.read())
        else:
            self.transport.write(request)
        self.written_ns = perf_counter_ns()

    def settle(self, error: Exception | None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)

    # --- httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in _FRAMING_HEADERS:
            self.framed = True
        elif name == b"server" and self.engine.server_software is None:
            self.engine.server_software = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self.body_bytes += len(body)

    def on_message_complete(self) -> None:
        """Record the response; on a kept-alive connection send the next request right here."""
        done = perf_counter_ns()
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()
        self.served += 1
        engine = self.engine
        engine.record(self, done)
        if (self.keep_alive and self.keepalive and not self.closed and not engine.stopping
                and engine.reserved < engine.requests):
            # Next request on this connection, inlined (= engine.reserve() + send_request(now, now)).
            engine.reserved += 1
            if self.served == 1:
                self.use_lean_parser()
            now = perf_counter_ns()
            self.start_ns = self.connected_ns = now
            self.slot.deadline = now + self.timeout_ns
            self.first_byte_ns = self.received = self.body_bytes = self.status = 0
            self.framed = self.lean
            self.complete = self.keep_alive = False
            sslobj = self.sslobj
            if sslobj is None:
                self.transport.write(self.request)
            else:
                sslobj.write(self.request)
                self.transport.write(self.outgoing.read())
            self.written_ns = perf_counter_ns()
        else:
            self.slot.deadline = 0
            self.settle(None)

    def use_lean_parser(self) -> None:
        """After the first response of a kept-alive connection, parse without header callbacks
        (~5 Python calls less per response). httptools skips headers when `on_header` is None;
        the server software is known by now, and a response that keeps a connection alive is
        framed, so a later early close is a receive failure (see `connection_lost`)."""
        self.on_header = None
        self.parser = httptools.HttpResponseParser(self)
        self.lean = True

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.abort()


def handshake_error(exc: BaseException) -> str:
    """A bare SSLError says nothing: add OpenSSL's reason ("SSLError (WRONG_VERSION_NUMBER)").
    Subclasses (SSLCertVerificationError...) name the problem already."""
    reason = getattr(exc, "reason", None)
    return f"SSLError ({reason})" if type(exc) is ssl.SSLError and reason else type(exc).__name__
