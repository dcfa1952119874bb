"""An ApacheBench-style closed-loop HTTP/1.1 load generator.

`run_load(LoadSpec)` runs `requests` requests over `concurrency` connections, like
`ab -n N -c C [-k] URL`: the spec is checked, the name resolved once, the TLS context and the
request built once, then an engine runs it on one epoll loop of non-blocking sockets: the C loop
(workers.load.fast_engine over _fastloop.c) when it is built, else workers.load.engine (httptools
parses, OpenSSL's SSLSocket does TLS). Split over several loops (`spec.processes`, merged exactly):
threads for the C loop, which releases the GIL; processes for the Python one. The phases, failure columns and their ab semantics are
described in workers/load/engine.py. See /work/shared/loadgen-notes.md §1 and §3.3.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from workers.load.engine import CANCEL_POLL_S, PROGRESS_EVERY_S, Engine, Throttle, quiet_gc
from workers.load.fast_engine import EngineUnavailable, choose_engine
from workers.load.merge import merge_results, result_from_dict
from workers.load.spec import LoadResult, LoadSpec

__all__ = ["LoadError", "automatic_processes", "build_request", "merge_results", "run_load"]

USER_AGENT = "TLSAudit-loadtest/1.0 (ApacheBench-compatible)"
# Automatic processes: one per core this process may run on, each with at least this many connections
# (fewer and a process mostly waits: it cannot fill a core, and the split only adds its own cost).
MIN_CONNECTIONS_PER_PROCESS = 8
START_BARRIER_TIMEOUT_S = 60  # child processes wait for each other this long, then go anyway
DAEMONIC_NOTE = ("Ran in one process instead of {asked}: the caller is a daemonic process (e.g. a Celery "
                 "prefork child), which cannot start child processes.")


class LoadError(Exception):
    """The run cannot start at all (bad spec, the host name does not resolve)."""


# ---------------------------------------------------------------------------------------------
# Public entry point


def run_load(spec: LoadSpec, *, cancel: Callable[[], bool] | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> LoadResult:
    """Run `spec` and return what happened (partial, with cancelled=True, if `cancel()` said so).

    With spec.processes > 1 the run is split over that many OS processes (see start_method),
    each with its share of n and c, and their results are merged exactly. A daemonic caller
    (a Celery prefork child) cannot have children: it runs in-process and says so in `notes`.
    `wall_s` is the whole call, set-up included: the time the rates are honest about.
    """
    started_at, started = time.time(), time.perf_counter()
    check_spec(spec)
    processes = min(spec.processes or automatic_processes(spec.concurrency), spec.concurrency)
    notes = []
    threads = processes > 1 and threads_suffice(spec)
    if processes > 1 and not threads and is_daemonic():
        notes.append(DAEMONIC_NOTE.format(asked=processes))
        processes = 1
    if processes <= 1:
        result = run_in_this_process(replace(spec, processes=1), cancel, on_progress)
        result.spec = spec
    elif threads:
        result = run_in_threads(spec, processes, cancel, on_progress)
    else:
        result = run_in_processes(spec, processes, cancel, on_progress)
    result.notes = result.notes + notes
    result.wall_started_at, result.wall_s = started_at, round(time.perf_counter() - started, 6)
    return result


def automatic_processes(concurrency: int) -> int:
    """How many processes a run of `concurrency` connections uses when not told: the cores this
    process may run on (its CPU affinity: `taskset` and cgroup cpusets count), but no more than
    concurrency / MIN_CONNECTIONS_PER_PROCESS. One process is one core: where the client is what
    limits a run (TLS handshakes cost it more CPU than the server; or a server on a bigger host), a
    host's other cores are the only way up; where it is not, the extra processes mostly sleep."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, concurrency // MIN_CONNECTIONS_PER_PROCESS))


def is_daemonic() -> bool:
    import multiprocessing  # only runs of several processes need it (~1 ms of every CLI start otherwise)

    return multiprocessing.current_process().daemon


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
    if spec.stall_s is not None and not spec.stall_s > spec.timeout_s:
        problems.append("stall_s must be longer than timeout_s (one timed-out request must not end a run)")
    if spec.tls_version not in (None, "1.2", "1.3"):
        problems.append(f"tls_version must be 1.2 or 1.3, got {spec.tls_version!r}")
    if spec.processes < 0:
        problems.append("processes must be at least 1 (or 0: automatic)")
    if problems:
        raise LoadError("; ".join(problems))


def run_in_this_process(spec: LoadSpec, cancel, on_progress) -> LoadResult:
    try:
        engine_class = choose_engine(spec)
    except EngineUnavailable as exc:
        raise LoadError(str(exc)) from None
    address = resolve_once(spec)
    engine = engine_class(spec, address, build_ssl_context(spec), cancel, on_progress, build_request(spec))
    if engine_class is Engine:
        with quiet_gc():
            engine.run()
    else:  # the C loop makes no Python objects per request: nothing for the GC to quiet
        engine.run()
    return engine.result()


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
# Several loops: threads of the C loop, or processes of the Python one


def threads_suffice(spec: LoadSpec) -> bool:
    """The C loop releases the GIL for its whole run: its loops run in parallel as threads of this
    process (no fork, no pickling; possible in a daemonic Celery child too). Python loops need processes."""
    try:
        return choose_engine(spec) is not Engine
    except EngineUnavailable:
        return False  # run_in_this_process says why


def run_in_threads(spec: LoadSpec, loops: int, cancel, on_progress) -> LoadResult:
    """1. Build the address, TLS context and request once; one FastEngine per share of n and c.
    2. Run each in its own thread; this thread polls `cancel` (relayed through an Event, at the
    engines' cadence) and sums their progress. 3. Merge their results exactly, as for processes."""
    address, context, request = resolve_once(spec), build_ssl_context(spec), build_request(spec)
    shares = zip(split_evenly(spec.requests, loops), split_evenly(spec.concurrency, loops))
    specs = [replace(spec, requests=n, concurrency=max(1, min(c, n)), processes=1) for n, c in shares]
    stop = threading.Event()
    progress = [0] * loops
    engines = [choose_engine(s)(s, address, context, stop.is_set, progress_setter(progress, i), request)
               for i, s in enumerate(specs)]
    failures: list[BaseException] = []
    threads = [threading.Thread(target=run_engine, args=(engine, failures), name=f"loadgen-{i}", daemon=True)
               for i, engine in enumerate(engines)]
    for thread in threads:
        thread.start()
    throttle = Throttle()
    while alive := [thread for thread in threads if thread.is_alive()]:
        alive[0].join(timeout=0.05)
        if cancel is not None and throttle.due("cancel", CANCEL_POLL_S) and cancel():
            stop.set()
        if on_progress is not None and throttle.due("progress", PROGRESS_EVERY_S):
            on_progress(sum(progress), spec.requests)
    if failures:
        raise LoadError(f"a load thread failed: {type(failures[0]).__name__}: {failures[0]}")
    if on_progress is not None:
        on_progress(sum(progress), spec.requests)
    merged = result_from_dict(merge_results([engine.result().to_dict() for engine in engines]))
    merged.spec = spec
    return merged


def progress_setter(progress: list[int], index: int):
    def report(done: int, _total: int) -> None:
        progress[index] = done
    return report


def run_engine(engine, failures: list[BaseException]) -> None:
    try:
        engine.run()
    except BaseException as exc:  # reported by run_in_threads, not lost in a thread
        failures.append(exc)


def split_evenly(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_in_processes(spec: LoadSpec, processes: int, cancel, on_progress) -> LoadResult:
    """1. Start `processes` children, each with its share of n and c.
    2. They wait at a barrier so that all start together, then run in-process.
    3. Meanwhile poll `cancel` (relayed through an Event) and sum the children's progress.
    4. Merge their result dicts exactly."""
    import multiprocessing

    context = multiprocessing.get_context(start_method())
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


def start_method() -> str:
    """fork where it is safe: a single-threaded caller (the CLI) has no lock another thread could hold
    at the fork, and a forked child starts with the engine imported (~1 ms of CPU; a spawned child
    starts a new interpreter and imports it again, ~60 ms of CPU, as much as ab's whole 5,000-request
    new-connection run). Callers with threads (a Celery agent's monitor) get spawn."""
    import multiprocessing

    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


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
    import queue as queue_module

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
