"""The load engine's hot loop in C (workers/load/_fastloop.c), behind the Python engine's interface.

`FastEngine(spec, address, ssl_context, cancel, on_progress, request).run()` then `result()`, like
workers.load.engine.Engine: same closed loop, phases, ab failure columns, draining, timeouts, cancel
and progress cadence (engine.py's docstring is the contract). The C loop runs with the GIL released;
per-request samples come back in batches of int32 µs through `ChunkRecorder.sink`, which keeps exact
samples up to MAX_EXACT_SAMPLES and fills the HdrHistograms as the Python engine's Recorder does.

`choose_engine(spec)` picks it automatically when it can run the spec; the Python engine serves the
rest (see `why_not_fast`). TLSAUDIT_LOAD_ENGINE=python|c forces one (tests run both; "c" fails
loudly when the C loop cannot run the spec rather than falling back).
"""

from __future__ import annotations

import _ssl
import functools
import ipaddress
import os
import ssl
import sys
import time
from array import array
from collections import Counter

from workers.load.engine import Engine
from workers.load.merge import encode_histogram, new_histogram, record_sorted_values, record_values
from workers.load.spec import MAX_EXACT_SAMPLES, PHASES, LoadCounters, LoadResult, LoadSpec
from workers.load.tls13 import linked_libssl

try:  # built in place by `make setup` (`make fastloop`); absent on a fresh clone before that
    from workers.load import _fastloop
except ImportError:  # pragma: no cover - exercised by the fallback test with the module hidden
    _fastloop = None

ENGINE_VARIABLE = "TLSAUDIT_LOAD_ENGINE"
TOTAL = PHASES.index("total")


class EngineUnavailable(Exception):
    """TLSAUDIT_LOAD_ENGINE=c asked for the C loop where it cannot run the spec."""


def why_not_fast(spec: LoadSpec) -> str | None:
    """Why the C loop cannot run `spec` here (None: it can)."""
    if _fastloop is None:
        return "the C load engine is not built (make fastloop)"
    if not sys.platform.startswith("linux"):
        return "the C load engine needs Linux (epoll)"
    if spec.scheme == "https":
        return openssl_not_shared()
    return None


@functools.lru_cache(maxsize=1)
def openssl_not_shared() -> str | None:
    """The C loop runs TLS on the `SSL_CTX*` inside Python's SSLContext: only safe when both link the same
    libssl (a Python with its own or a static OpenSSL, as python-build-standalone or conda ship, would hand
    it a foreign struct). None when shared; else why the Python engine runs HTTPS. Asked once per process."""
    ours, pythons = _fastloop.OPENSSL_VERSION_NUMBER, ssl.OPENSSL_VERSION_NUMBER
    if ours != pythons:
        return f"the C load engine's OpenSSL ({ours:#x}) is not Python's ssl's ({pythons:#x})"
    # Other extensions may map their own copy (psycopg's wheel does): what counts is that both link one.
    theirs, mine = linked_libssl(_ssl.__file__), linked_libssl(_fastloop.__file__)
    if not theirs or theirs != mine:
        return (f"Python's ssl links {', '.join(theirs) or 'no shared libssl'} and the C load engine "
                f"{', '.join(mine) or 'none'}: not one OpenSSL")
    return None


def choose_engine(spec: LoadSpec) -> type:
    """FastEngine when it can run `spec`, else the Python Engine; TLSAUDIT_LOAD_ENGINE forces one."""
    forced = os.environ.get(ENGINE_VARIABLE, "").strip().lower()
    if forced == "python":
        return Engine
    reason = why_not_fast(spec)
    if forced == "c" and reason:
        raise EngineUnavailable(f"{ENGINE_VARIABLE}=c: {reason}")
    return Engine if reason else FastEngine


class ChunkRecorder:
    """Samples from the C loop, a batch at a time: exact int32 arrays while the run has at most
    MAX_EXACT_SAMPLES complete requests, the histograms always (as engine.Recorder). The exact
    samples stay in completion order; the histograms are filled from a copy sorted in C, run by run."""

    def __init__(self):
        self.samples: dict[str, array] = {phase: array("i") for phase in PHASES}
        self.histograms = {phase: new_histogram() for phase in PHASES}
        self.exact = True
        self.requests = 0

    def sink(self, phase: int, data: bytes) -> None:
        name = PHASES[phase]
        if phase == TOTAL:
            self.requests += len(data) // self.samples[name].itemsize
            if self.exact and self.requests > MAX_EXACT_SAMPLES:
                self.exact = False
                self.flush()
        if self.exact:
            self.samples[name].frombytes(data)
        else:
            record_values(self.histograms[name], array("i", data).tolist())

    def flush(self) -> None:
        for phase, values in self.samples.items():
            record_values(self.histograms[phase], values.tolist())
            del values[:]

    def finish(self) -> tuple[dict[str, str], dict[str, list[int]] | None]:
        exact = None
        if self.exact:
            exact = {}
            for phase, values in self.samples.items():
                exact[phase] = values.tolist()
                _fastloop.sort_int32(values)
                record_sorted_values(self.histograms[phase], values)  # bisect reads the array as is
        histograms = {phase: encode_histogram(h) for phase, h in self.histograms.items()}
        return histograms, exact


class FastEngine:
    """Runs one spec in this thread on the C loop; `result()` afterwards."""

    name = "c"

    def __init__(self, spec: LoadSpec, address: tuple[str, int], ssl_context, cancel, on_progress, request: bytes):
        reason = why_not_fast(spec)
        if reason:
            raise EngineUnavailable(reason)
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise TypeError("ssl_context must be an ssl.SSLContext")
        self.spec = spec
        self.address = address
        self.ssl_context = ssl_context
        self.server_name = self.verify_host = None
        if ssl_context is not None:
            # As CPython's _ssl: SNI unless the host is an IP literal; the name (or IP) checked when
            # check_hostname is on (the certificate itself is checked by OpenSSL, on the context).
            host = spec.host.strip("[]")
            if not is_ip_literal(host):
                self.server_name = ssl_context._encode_hostname(host)  # IDNA, as wrap_socket does
            if ssl_context.check_hostname:
                self.verify_host = host if is_ip_literal(host) else self.server_name
        self.cancel = cancel
        self.on_progress = on_progress
        self.request = request
        self.recorder = ChunkRecorder()
        self.outcome: dict | None = None

    def run(self) -> None:
        spec = self.spec
        self.outcome = _fastloop.run(
            ip=self.address[0], port=self.address[1], request=self.request, requests=spec.requests,
            concurrency=spec.concurrency, keepalive=spec.keepalive, timeout_s=spec.timeout_s,
            time_limit_s=spec.time_limit_s or 0.0, stall_s=spec.stall_s or 0.0, ssl_context=self.ssl_context,
            server_name=self.server_name, verify_host=self.verify_host, verify_ip=is_ip_literal(spec.host.strip("[]")),
            cancel=self.cancel, on_progress=self.on_progress, sink=self.recorder.sink)

    def result(self) -> LoadResult:
        out = self.outcome
        histograms, samples = self.recorder.finish()
        counters = LoadCounters(**{name: out[name] for name in LoadCounters.__dataclass_fields__})
        now = time.perf_counter_ns()  # the C loop's stamps are CLOCK_MONOTONIC, perf_counter's clock here
        started = out["first_start_ns"] or now
        time_taken_s = max(0, (out["last_event_ns"] or started) - started) / 1e9
        return LoadResult(
            spec=self.spec, started_at=time.time() - (now - started) / 1e9, time_taken_s=time_taken_s,
            counters=counters, histograms=histograms, samples=samples,
            server_software=out["server_software"] or "", document_length=out["document_length"],
            protocol=out["protocol"], cipher=out["cipher"],
            status_codes={str(code): n for code, n in sorted(Counter(out["status_codes"]).items())},
            errors=dict(out["errors"]), cancelled=out["cancelled"], stalled=out["stalled"], processes=1,
            engine=self.name)


def is_ip_literal(host: str) -> bool:
    """SNI is never sent for an IP literal (as CPython's _ssl and ab)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
