"""Time TLS handshakes: `agents` concurrent clients, each doing `per_agent` handshakes in turn.

The agents are connections of one epoll loop (workers/load/handshake_loop.py), not threads: see
there for why, and for what is timed. Resumed handshakes pass the primed session to OpenSSL's
socket object directly (`session=`).
Every connection is checked (version, suite, resumed or not); a sample that is not what was asked
for is dropped and counted under `flagged`, never mixed in. Results are plain dicts (see
`run_handshakes`); histograms are encoded HdrHistograms in µs that merge exactly across agents.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import replace
from typing import Callable

from hdrh.histogram import HdrHistogram

from tlsaudit.domain.handshake_stats import histogram_summary
from workers.load import tls13
from workers.load.engine import quiet_gc
from workers.load.handshake_loop import Loop
from workers.load.spec import HISTOGRAM_DIGITS, HISTOGRAM_RANGE_US, HandshakeSpec

VERSIONS = {"1.2": (ssl.TLSVersion.TLSv1_2, "TLSv1.2"), "1.3": (ssl.TLSVersion.TLSv1_3, "TLSv1.3")}
TLS13_STANDARD_SUITES = tls13.TLS13_SUITES
# IANA -> OpenSSL names of the TLS 1.2 suites worth timing (OpenSSL reports TLS <= 1.2 suites by these).
TLS12_SUITES = {
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
}
OPENSSL_TO_IANA = {v: k for k, v in TLS12_SUITES.items()}
# What the matrix probes on TLS 1.2 when no suites are given: ECDHE AEAD with either certificate type.
TLS12_MATRIX_CANDIDATES = tuple(k for k in TLS12_SUITES if k.startswith("TLS_ECDHE_") and "CBC" not in k)
DEFAULT_REPEATS = 3      # rounds of the matrix: every cell once per round, versions interleaved
WARMUP_AGENTS, WARMUP_PER_AGENT = 2, 5   # per version before the first round, discarded
PROGRESS_POLL_S = 0.1
HTTP_PROBE = "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nUser-Agent: tlsaudit-handshakes\r\n\r\n"

Cancel = Callable[[], bool] | threading.Event | None


class HandshakeError(ValueError):
    """The spec cannot be run as asked (unknown version or suite)."""


# --- names -----------------------------------------------------------------------------------------

def suite_version(suite: str) -> str:
    """"1.3" for TLS 1.3 suite names, "1.2" for everything else (IANA or OpenSSL names)."""
    return "1.3" if suite in TLS13_STANDARD_SUITES or suite.startswith(("TLS_AES_", "TLS_CHACHA20_")) else "1.2"


def iana_name(suite: str) -> str:
    """The IANA name of `suite` given either naming (OpenSSL reports TLS <= 1.2 suites by OpenSSL name)."""
    return OPENSSL_TO_IANA.get(suite, suite)


def openssl_name(suite: str) -> str:
    if suite in TLS12_SUITES:
        return TLS12_SUITES[suite]
    if suite in OPENSSL_TO_IANA:
        return suite
    raise HandshakeError(f"unknown TLS 1.2 cipher suite {suite!r} (give an IANA name such as "
                         "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or its OpenSSL name)")


def check_spec(spec: HandshakeSpec) -> None:
    if spec.version not in VERSIONS:
        raise HandshakeError(f"TLS version must be one of {', '.join(VERSIONS)}, got {spec.version!r}")
    if spec.suite is not None and suite_version(spec.suite) != spec.version:
        raise HandshakeError(f"{spec.suite} is not a TLS {spec.version} cipher suite")
    if spec.suite is not None and spec.version == "1.2":
        openssl_name(spec.suite)
    if spec.agents < 1 or spec.per_agent < 1:
        raise HandshakeError("agents and per_agent must be at least 1")
    if spec.stall_s is not None and not spec.stall_s > spec.timeout_s:
        raise HandshakeError("stall_s must be longer than timeout_s (one timed-out handshake must not end a run)")
    if spec.time_limit_s is not None and spec.time_limit_s <= 0:
        raise HandshakeError("time_limit_s must be positive")


# --- one context, one connection -----------------------------------------------------------------

def build_context(spec: HandshakeSpec, *, tls13_via_ctypes: bool = True) -> ssl.SSLContext:
    """A client context forcing spec.version (min = max) and spec.suite; tickets off unless resuming.
    Certificates are not checked (timing, not trust, like ab) unless spec.ca_file or not spec.insecure:
    then chain and name are verified against the system roots plus spec.ca_file."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if spec.ca_file or not spec.insecure:
        ctx.load_default_certs()
        if spec.ca_file:
            ctx.load_verify_locations(cafile=spec.ca_file)
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = VERSIONS[spec.version][0]
    if not spec.resume:
        ctx.options |= ssl.OP_NO_TICKET
    if spec.suite and spec.version == "1.2":
        ctx.set_ciphers(openssl_name(spec.suite))
    elif spec.suite and tls13_via_ctypes:
        tls13.set_tls13_suites(ctx, spec.suite)
    return ctx


def server_name(host: str) -> str | None:
    """SNI is a DNS name; none for IP literals (as every client does)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return None
    except ValueError:
        return host


def failure_reason(exc: BaseException) -> str:
    """A short, stable key for the failures dict."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timeout"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate not trusted: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        reason = (exc.reason or exc.__class__.__name__).lower().replace("sslv3_alert_", "alert ")
        return f"tls error: {reason.replace('_', ' ')}"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, OSError) and exc.errno:
        return f"network error: {errno.errorcode.get(exc.errno, exc.errno)}"
    return f"error: {exc.__class__.__name__}"


def mismatch(tls: ssl.SSLSocket, spec: HandshakeSpec, want_resumed: bool) -> str | None:
    """Why this connection is not the handshake that was asked for (None when it is)."""
    version = tls.version()
    if version != VERSIONS[spec.version][1]:
        return f"version {version} instead of {VERSIONS[spec.version][1]}"
    if spec.suite and iana_name(tls.cipher()[0]) != spec.suite and tls.cipher()[0] != spec.suite:
        return f"suite {tls.cipher()[0]} instead of {spec.suite}"
    if tls.session_reused and not want_resumed:
        return "session resumed (a full handshake was asked for)"
    if want_resumed and not tls.session_reused:
        return "not resumed (full handshake)"
    return None


class Agent:
    """One agent's handshakes, made one after another on its own connection at a time (they run on
    workers/load/handshake_loop.py's loop, beside the other agents'); samples kept in lists."""

    def __init__(self, spec: HandshakeSpec):
        self.spec = spec
        self.tcp_us: list[int] = []
        self.tls_us: list[int] = []
        self.failures: Counter = Counter()
        self.flagged: Counter = Counter()
        self.suites: Counter = Counter()
        self.resumption = None     # resumed mode: "supported" | "unsupported" | None (not learned)
        self.session = None        # resumed mode: the primed session every timed connection offers
        self.done = 0              # timed attempts finished (for progress)
        self.left = spec.per_agent
        self.prime_pending = spec.resume
        self.ended = False         # resumed mode: no session, or the server stopped resuming
        self.finished_at = 0.0
        self.timed_from = 0.0

    def wants_more(self, stop: threading.Event) -> bool:
        return not self.ended and not stop.is_set() and (self.prime_pending or self.left > 0)

    def take_next(self) -> bool:
        """Claim the next connection; True if it is the (untimed) priming one of a resumed run:
        1. one full handshake for a session; 2. resume it on every following connection;
        3. the first connection that is not resumed ends the agent: the server does not resume."""
        if self.prime_pending:
            self.prime_pending = False
            return True
        self.left -= 1
        return False

    def primed(self, tls, reason: str | None) -> None:
        self.timed_from = time.perf_counter()  # the priming handshake is not in the wall time
        if reason:
            self.flagged[f"first handshake: {reason}"] += 1
            self.ended = True
            return
        session = tls.session
        if session is None or not (session.has_ticket or session.id):
            self.resumption = "unsupported"
            self.ended = True
            return
        self.session = session

    def timed(self, t0: int, t1: int, t2: int, reason: str | None, negotiated: str) -> None:
        self.done += 1
        if reason:
            self.flagged[reason] += 1
            if self.spec.resume:
                self.resumption = self.resumption or "unsupported"
                self.ended = True
            return
        self.tcp_us.append(max(1, (t1 - t0) // 1000))
        self.tls_us.append(max(1, (t2 - t1) // 1000))
        self.suites[negotiated] += 1
        if self.spec.resume:
            self.resumption = "supported"

    def failed(self, reason: str, *, priming: bool) -> None:
        self.failures[reason] += 1
        if priming:
            self.timed_from = time.perf_counter()
            self.ended = True
        else:
            self.done += 1


# --- a run -----------------------------------------------------------------------------------------

def new_histogram() -> HdrHistogram:
    return HdrHistogram(HISTOGRAM_RANGE_US[0], HISTOGRAM_RANGE_US[1], HISTOGRAM_DIGITS)


def is_cancelled(cancel: Cancel) -> bool:
    if cancel is None:
        return False
    return cancel.is_set() if isinstance(cancel, threading.Event) else bool(cancel())


def run_handshakes(spec: HandshakeSpec, *, cancel: Cancel = None, on_progress=None,
                   http_probe: bool = False) -> dict:
    """Run spec.agents threads x spec.per_agent handshakes against spec.ip (or host):spec.port.

    `cancel`: an Event or a callable polled every 0.1 s (agents stop after their current handshake).
    `on_progress(done, total)`: called from the calling thread. `http_probe`: send one tiny HTTP
    request after each timed handshake (verification: nginx logs only requests).
    Returns: version, suite (negotiated, IANA), requested_suite, mode ("full"|"resumed"), resumption,
    agents, per_agent, count, failures {reason: n}, flagged {reason: n}, histograms {"tls","tcp"},
    mean_ms, sd_ms, p50_ms, p95_ms, p99_ms, tcp_mean_ms, handshakes_per_s, wall_s, loop_s, cancelled, method.
    `wall_s` is this whole call, set-up included (context, priming handshakes, a child process): the
    rate is count / wall_s. `loop_s` is the agents' time on the loop alone.
    """
    started_at, started = time.time(), time.perf_counter()
    check_spec(spec)
    if spec.version == "1.3" and spec.suite and not tls13.ctypes_path_available():
        return run_in_subprocess(spec, cancel=cancel, http_probe=http_probe)
    result = run_agents(spec, build_context(spec), cancel, on_progress, http_probe)
    return with_wall(result, started_at, started)


def with_wall(result: dict, started_at: float, started: float) -> dict:
    """The end-to-end wall time since `started` (perf_counter; `started_at` on the epoch clock), then the statistics."""
    result.update(wall_started_at=started_at, wall_s=round(time.perf_counter() - started, 6))
    return summarise(result)


def run_agents(spec: HandshakeSpec, ctx: ssl.SSLContext, cancel: Cancel, on_progress, http_probe: bool,
               method: str = "ctypes") -> dict:
    """spec.agents agents at once on one event loop (workers/load/handshake_loop.py), each doing
    spec.per_agent handshakes in turn; cancel is polled every 0.1 s."""
    stop = threading.Event()
    agents = [Agent(spec) for _ in range(spec.agents)]
    loop = Loop(spec, ctx, agents, stop, cancel, on_progress, http_probe, mismatch=mismatch,
                failure_reason=failure_reason, iana_name=iana_name,
                probe_request=HTTP_PROBE.format(host=spec.host).encode("ascii"), sni=server_name(spec.host))
    with quiet_gc():  # as the load engine: no GC passes over the caller's heap mid-run
        loop.run(is_cancelled)
    loop_s = max(a.finished_at for a in agents) - min(a.timed_from for a in agents)
    # A run that reached its time limit is whole (as ab -t's): only a stop or a stall cuts it short.
    return collect(spec, agents, loop_s, stop.is_set() and not loop.time_limited, method, stalled=loop.stalled)


def collect(spec: HandshakeSpec, agents: list[Agent], loop_s: float, cancelled: bool, method: str,
            stalled: bool = False) -> dict:
    tls_h, tcp_h = new_histogram(), new_histogram()
    failures, flagged, suites = Counter(), Counter(), Counter()
    for a in agents:
        for v in a.tls_us:
            tls_h.record_value(v)
        for v in a.tcp_us:
            tcp_h.record_value(v)
        failures.update(a.failures)
        flagged.update(a.flagged)
        suites.update(a.suites)
    result = {
        "host": spec.host, "port": spec.port, "ip": spec.ip,
        "version": spec.version, "requested_suite": spec.suite,
        "suite": suites.most_common(1)[0][0] if suites else None,
        "mode": "resumed" if spec.resume else "full",
        "resumption": (verdict := resumption_verdict(spec, agents)),
        "resumption_note": RESUMPTION_NOTES.get(verdict),
        "agents": spec.agents, "per_agent": spec.per_agent,
        "failures": dict(failures), "flagged": dict(flagged),
        "histograms": {"tls": tls_h.encode().decode("ascii"), "tcp": tcp_h.encode().decode("ascii")},
        "loop_s": round(loop_s, 6), "cancelled": cancelled, "stalled": stalled, "method": method,
    }
    return result  # run_handshakes adds the wall time, then the statistics (summarise)


RESUMPTION_NOTES = {
    "unsupported": "The server did not resume the session (no session cache and no tickets): "
                   "resumed handshakes cannot be measured, and no full handshakes were counted instead.",
    "unknown": "No resumption attempt completed (see failures).",
}


def resumption_verdict(spec: HandshakeSpec, agents: list[Agent]) -> str | None:
    if not spec.resume:
        return None
    verdicts = {a.resumption for a in agents}
    if "supported" in verdicts:
        return "supported"
    return "unsupported" if "unsupported" in verdicts else "unknown"


def summarise(result: dict) -> dict:
    """Fill count/mean/SD/percentiles/hs per s from the histograms (after a run or a merge)."""
    tls = histogram_summary(result["histograms"]["tls"])
    tcp = histogram_summary(result["histograms"]["tcp"])
    result.update(count=tls["count"], mean_ms=tls["mean_ms"], sd_ms=tls["sd_ms"], p50_ms=tls["p50_ms"],
                  p95_ms=tls["p95_ms"], p99_ms=tls["p99_ms"], tcp_mean_ms=tcp["mean_ms"], tcp_p50_ms=tcp["p50_ms"])
    result["handshakes_per_s"] = round(tls["count"] / result["wall_s"], 1) if result["wall_s"] > 0 else 0.0
    return result


def merge_handshake_results(results: list[dict], *, sequential: bool = False) -> dict:
    """Merge results of the same cell: histograms and counters add exactly.

    Default: distributed agents that ran at the same time (agents add up; wall time = the span from
    the first agent's start to the last one's end, so an agent that started late counts).
    `sequential=True`: rounds of one cell run one after another (per_agent and wall times add up).
    """
    if not results:
        raise ValueError("nothing to merge")
    first = results[0]
    tls_h, tcp_h = new_histogram(), new_histogram()
    failures, flagged = Counter(), Counter()
    for r in results:
        tls_h.decode_and_add(r["histograms"]["tls"])
        tcp_h.decode_and_add(r["histograms"]["tcp"])
        failures.update(r["failures"])
        flagged.update(r["flagged"])
    suites = Counter(r["suite"] for r in results if r.get("suite"))
    verdicts = {r.get("resumption") for r in results}
    merged = {
        **{k: first.get(k) for k in ("host", "port", "ip", "version", "requested_suite", "mode", "method")},
        "suite": suites.most_common(1)[0][0] if suites else None,
        "resumption": (verdict := next((v for v in ("supported", "unsupported", "unknown") if v in verdicts), None)),
        "resumption_note": RESUMPTION_NOTES.get(verdict),
        "agents": first["agents"] if sequential else sum(r["agents"] for r in results),
        "per_agent": sum(r["per_agent"] for r in results) if sequential else first["per_agent"],
        "failures": dict(failures), "flagged": dict(flagged),
        "histograms": {"tls": tls_h.encode().decode("ascii"), "tcp": tcp_h.encode().decode("ascii")},
        "wall_s": merged_wall(results, sequential),
        "wall_started_at": min((r["wall_started_at"] for r in results if r.get("wall_started_at")), default=None),
        "loop_s": round((sum if sequential else max)(r.get("loop_s") or r["wall_s"] for r in results), 6),
        "cancelled": any(r["cancelled"] for r in results),
        "stalled": any(r.get("stalled") for r in results),
        "merged_from": len(results),
    }
    return summarise(merged)


def merged_wall(results: list[dict], sequential: bool) -> float:
    if sequential:
        return round(sum(r["wall_s"] for r in results), 6)
    if all(r.get("wall_started_at") for r in results):
        start = min(r["wall_started_at"] for r in results)
        return round(max(r["wall_started_at"] + r["wall_s"] for r in results) - start, 6)
    return round(max(r["wall_s"] for r in results), 6)


# --- fallback: TLS 1.3 suites through OPENSSL_CONF in a child process -----------------------------

def run_in_subprocess(spec: HandshakeSpec, *, cancel: Cancel = None, http_probe: bool = False) -> dict:
    """Run the spec in `python -m workers.load.handshake` with an OPENSSL_CONF forcing spec.suite
    (the child's start-up is part of the wall time: it is what this cell costs)."""
    started_at, started = time.time(), time.perf_counter()
    env = tls13.openssl_conf_env(spec.suite)
    payload = json.dumps({"spec": spec.to_dict(), "http_probe": http_probe})
    try:
        child = subprocess.Popen([sys.executable, "-m", "workers.load.handshake"], env=env, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        child.stdin.write(payload)
        child.stdin.close()
        deadline = time.monotonic() + spec.timeout_s * (spec.per_agent + 2) + 30
        while child.poll() is None:
            if is_cancelled(cancel) or time.monotonic() > deadline:
                child.terminate()
            time.sleep(PROGRESS_POLL_S)
        out, err = child.stdout.read(), child.stderr.read()
    finally:
        os.unlink(env["OPENSSL_CONF"])
    if child.returncode != 0:
        raise RuntimeError(f"handshake subprocess failed ({child.returncode}): {err[-500:]}")
    return with_wall(json.loads(out), started_at, started)


def _child_main() -> None:
    request = json.loads(sys.stdin.read())
    spec = HandshakeSpec(**request["spec"])
    ctx = build_context(spec, tls13_via_ctypes=False)  # OPENSSL_CONF already restricts the TLS 1.3 suites
    json.dump(run_agents(spec, ctx, None, None, request["http_probe"], method="openssl_conf"), sys.stdout)


# --- the matrix ------------------------------------------------------------------------------------

def probe_suite(host: str, port: int, ip: str | None, version: str, suite: str, timeout_s: float = 5.0,
                time_limit_s: float | None = None, **verify) -> dict:
    """One quick handshake: the result says whether the server negotiated exactly this version and suite.
    `verify`: ca_file / insecure, as for the cells (an untrusted certificate fails here already)."""
    return run_handshakes(HandshakeSpec(host=host, port=port, ip=ip, version=version, suite=suite,
                                        agents=1, per_agent=1, timeout_s=timeout_s, time_limit_s=time_limit_s,
                                        **verify))


def matrix_suites(host, port, ip, versions, suites, timeout_s: float = 5.0, deadline: float | None = None,
                  **verify) -> tuple[dict[str, list[str]], dict]:
    """Suites per version, and why a version has none: the given suites (by their version), else TLS 1.3's
    three standard ones and the TLS 1.2 ECDHE AEAD suites the server accepts (one probe each, each
    within what is left until `deadline`, a time.monotonic() instant)."""
    if suites:
        chosen = {v: [iana_name(s) for s in suites if suite_version(iana_name(s)) == v] for v in versions}
        for s in chosen.get("1.2", []):
            openssl_name(s)
        return chosen, {v: f"none of the given suites is a TLS {v} suite" for v in versions if not chosen[v]}
    plan, why_none = {}, {}
    for v in versions:
        if v == "1.3":
            plan[v] = list(TLS13_STANDARD_SUITES)
            continue
        probes = {s: probe_suite(host, port, ip, v, s, timeout_s, time_left(deadline), **verify)
                  for s in TLS12_MATRIX_CANDIDATES}
        plan[v] = [s for s, r in probes.items() if r["count"] == 1]
        if not plan[v]:
            seen = Counter()
            for r in probes.values():
                seen.update(r["failures"])
                seen.update(r["flagged"])
            detail = ", ".join(f"{reason} x{n}" for reason, n in seen.most_common())
            why_none[v] = f"the server accepted none of the ECDHE AEAD suites over TLS {v} (probes: {detail})"
    return plan, why_none


def time_left(deadline: float | None) -> float | None:
    """Seconds until `deadline` (a time.monotonic() instant), at least a moment; None without one."""
    return None if deadline is None else max(0.001, deadline - time.monotonic())


def handshake_matrix(host: str, port: int, *, ip: str | None, versions=("1.2", "1.3"), suites=None,
                     agents_levels=(10, 25, 50), per_agent: int = 10, resume: bool = False,
                     timeout_s: float = 10.0, repeats: int = DEFAULT_REPEATS, warmup: bool = True,
                     ca_file: str | None = None, insecure: bool = True, cancel: Cancel = None,
                     on_progress=None, deadline_s: float | None = None, stall_s: float | None = None,
                     cell_s: float | None = None) -> list[dict]:
    """Every (version, suite, agents) cell `repeats` times, plus full-vs-resumed cells when `resume`;
    each cell ends after `cell_s` seconds (like ab -t) or at agents x per_agent handshakes.

    1. Suites: given, or TLS 1.3's three standard ones and the TLS 1.2 ECDHE AEAD suites the server
       accepts (one probe handshake each). A version with no usable suite yields one "skipped" cell.
    2. Warm-up (discarded): per version, WARMUP_AGENTS x WARMUP_PER_AGENT handshakes with its first
       suite before the first round; returned with "warmup": True, never summarised.
    3. `repeats` rounds: each runs every cell once in full (agents x per_agent), the versions' order
       alternating by round (1.2 first, then 1.3 first, ...) so drift and order hit both alike; each
       result carries its "repeat". A cell's rate is its count over the wall time of its own run,
       set-up included (workers.load.handshake.run_handshakes).
    4. With `resume`, each version gets a resumed cell (first suite, first agents level) per round; a
       server that does not resume says so in round one (`resumption: "unsupported"`) and is not asked again.
    5. The whole matrix ends within `deadline_s` (the run in flight abandoned, `cancelled`) and after a run
       in which every handshake timed out for `stall_s` (`stalled`): later runs are not started.
    """
    for v in versions:
        if v not in VERSIONS:
            raise HandshakeError(f"TLS version must be one of {', '.join(VERSIONS)}, got {v!r}")
    if repeats < 1:
        raise HandshakeError("repeats must be at least 1")
    verify = {"ca_file": ca_file, "insecure": insecure}
    deadline = time.monotonic() + deadline_s if deadline_s else None
    plan, why_none = matrix_suites(host, port, ip, versions, suites, min(timeout_s, 5.0), deadline, **verify)
    base = HandshakeSpec(host=host, port=port, ip=ip, per_agent=per_agent, timeout_s=timeout_s, stall_s=stall_s,
                         **verify)
    usable = [v for v in versions if plan.get(v)]
    skipped = [skipped_cell(host, port, ip, v, why_none[v]) for v in versions if not plan.get(v)]
    warmups = [replace(base, version=v, suite=plan[v][0], agents=min(WARMUP_AGENTS, agents_levels[0]),
                       per_agent=min(WARMUP_PER_AGENT, per_agent)) for v in usable] if warmup else []
    rounds = [round_specs(base, plan, usable, agents_levels, resume, r) for r in range(repeats)]
    return run_rounds(warmups, rounds, cancel, on_progress, deadline, cell_s) + skipped


def round_specs(base: HandshakeSpec, plan: dict, versions: list[str], agents_levels, resume: bool,
                repeat: int) -> list[HandshakeSpec]:
    order = versions if repeat % 2 == 0 else list(reversed(versions))
    specs = [replace(base, version=v, suite=s, agents=a) for a in agents_levels for v in order for s in plan[v]]
    if resume:
        specs += [replace(base, version=v, suite=plan[v][0], agents=agents_levels[0], resume=True) for v in order]
    return specs


def skipped_cell(host, port, ip, version, why) -> dict:
    return {"host": host, "port": port, "ip": ip, "version": version, "suite": None, "requested_suite": None,
            "mode": "full", "skipped": why, "count": 0, "failures": {}, "flagged": {}}


def run_rounds(warmups: list[HandshakeSpec], rounds: list[list[HandshakeSpec]], cancel: Cancel,
               on_progress, deadline: float | None = None, cell_s: float | None = None) -> list[dict]:
    """Run the warm-ups, then round after round; progress counts every handshake of every run. Stops when
    cancelled, past `deadline` (time.monotonic()), or after a run that stalled."""
    total = sum(s.agents * s.per_agent for s in warmups) + sum(s.agents * s.per_agent for r in rounds for s in r)
    done, results, unsupported, stalled = 0, [], set(), False
    runs = [(spec, {"warmup": True}) for spec in warmups]
    runs += [(spec, {"repeat": r}) for r, specs in enumerate(rounds) for spec in specs]
    for spec, tags in runs:
        key = (spec.version, spec.suite, spec.agents)
        if stalled or is_cancelled(cancel):
            break
        if deadline is not None and time.monotonic() >= deadline:
            if results:
                results[-1]["cancelled"] = True   # runs left undone: the matrix did not finish in time
            break
        if spec.resume and key in unsupported:
            continue
        offset = done
        report = (lambda d, _t: on_progress(offset + d, total)) if on_progress is not None else None
        limit = min((x for x in (cell_s, time_left(deadline)) if x is not None), default=None)
        result = {**run_handshakes(replace(spec, time_limit_s=limit), cancel=cancel, on_progress=report), **tags}
        stalled = result.get("stalled", False)
        if spec.resume and result["resumption"] == "unsupported":
            unsupported.add(key)  # the server does not resume: no point in asking again
        done += spec.agents * spec.per_agent
        if on_progress is not None:
            on_progress(done, total)
        results.append(result)
    return results


if __name__ == "__main__":
    _child_main()
