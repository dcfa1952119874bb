"""The contract of the load engines: what to run (specs) and what comes back (results).

Results are plain JSON-able dicts on the wire (Celery agents return them, the coordinator
merges them, the database stores them). Latency distributions travel as encoded HdrHistograms
(µs, 1 µs .. 60 s, 3 significant digits: `hdrh` V2 + zlib + base64), which merge exactly
across processes and hosts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

HISTOGRAM_RANGE_US = (1, 60_000_000)
HISTOGRAM_DIGITS = 3
# The phases recorded per request, each into its own histogram (µs). "tls" and "tcp" are recorded
# once per new connection (TCP connect alone: the run's RTT estimate, tlsaudit/domain/round_trips.py).
PHASES = ("connect", "tls", "waiting", "processing", "total", "tcp")


@dataclass(frozen=True)
class LoadSpec:
    """One closed-loop run like `ab -n requests -c concurrency [-k] URL`."""
    scheme: str                      # "http" | "https"
    host: str                        # Host header and SNI (ASCII)
    port: int
    path: str = "/"
    ip: str | None = None            # connect here instead of resolving host (pinned, SSRF-checked)
    requests: int = 500              # n; with time_limit_s, the upper bound
    concurrency: int = 1             # c: connections in flight
    keepalive: bool = False          # False = a new connection (full TLS handshake) per request, ab's default
    timeout_s: float = 30.0          # per request: connect + handshake + response
    time_limit_s: float | None = None
    # End the run once every request has timed out for this long (none completed or failed otherwise,
    # from the start or the last one that did): a dead, stalling or trickling server, whatever n and c.
    # Longer than timeout_s.
    stall_s: float | None = None
    headers: tuple[tuple[str, str], ...] = ()
    ca_file: str | None = None       # verify against this CA (plus system roots)
    insecure: bool = True            # like ab: no certificate verification (timing, not trust, is measured)
    tls_version: str | None = None   # "1.2" | "1.3" to force one version
    ciphers: str | None = None       # OpenSSL cipher string for TLS <= 1.2
    processes: int = 1               # engine-level parallelism on this host; 0 = automatic (one per usable core)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "LoadSpec":
        return cls(**{**data, "headers": tuple(tuple(h) for h in data.get("headers", ()))})


@dataclass
class LoadCounters:
    complete: int = 0
    failed: int = 0
    failed_connect: int = 0
    failed_receive: int = 0
    failed_length: int = 0
    failed_exceptions: int = 0
    timeouts: int = 0                # also counted in failed_exceptions
    non_2xx: int = 0
    keepalive_requests: int = 0
    connections_opened: int = 0
    total_bytes: int = 0             # headers + body, decrypted (as ab)
    html_bytes: int = 0              # body only
    write_errors: int = 0


@dataclass
class LoadResult:
    """One run (or the merge of several agents' runs) — see `to_dict()` for the wire form."""
    spec: LoadSpec
    started_at: float                # epoch seconds
    time_taken_s: float              # last event - first connect start, as ab
    counters: LoadCounters = field(default_factory=LoadCounters)
    histograms: dict[str, str] = field(default_factory=dict)   # phase -> encoded HdrHistogram
    # Exact per-request samples (µs) for ab-identical min/mean/sd/median and the percentage
    # table; kept only while small (see MAX_EXACT_SAMPLES), else the histograms are used.
    samples: dict[str, list[int]] | None = None
    server_software: str = ""
    document_length: int | None = None
    protocol: str = ""               # negotiated, e.g. "TLSv1.3"
    cipher: str = ""                 # e.g. "TLS_AES_256_GCM_SHA384"
    status_codes: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)       # error class -> count (for the UI)
    cancelled: bool = False
    stalled: bool = False            # ended by spec.stall_s: every request timed out for that long
    agents: int = 1
    # Added for the client (optional, defaulted): OS processes that actually ran (after the
    # daemonic-process fallback) and plain-words notes about how the run deviated from its spec.
    processes: int = 1
    notes: list[str] = field(default_factory=list)
    # End to end: from entering run_load to its return, set-up included (resolving, the TLS context,
    # child processes), on the epoch clock so agents' runs merge into one span. Rates divide by this.
    wall_started_at: float | None = None
    wall_s: float | None = None
    # Which loop ran it: "c" (workers/load/_fastloop.c) or "python" (workers/load/engine.py).
    engine: str = "python"

    def to_dict(self) -> dict:
        """The wire form. Not dataclasses.asdict: it deep-copies every exact sample one by one (~40 ms
        for 20,000 requests, a third of what ab spends on the whole run); lists of ints copy flat."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["spec"] = self.spec.to_dict()
        data["counters"] = asdict(self.counters)
        data["histograms"] = dict(self.histograms)
        data["samples"] = None if self.samples is None else {k: list(v) for k, v in self.samples.items()}
        data["status_codes"] = dict(self.status_codes)
        data["errors"] = dict(self.errors)
        data["notes"] = list(self.notes)
        return data


MAX_EXACT_SAMPLES = 200_000


@dataclass(frozen=True)
class HandshakeSpec:
    """`agents` concurrent clients, each doing `per_agent` full handshakes (TCP connect + TLS)."""
    host: str
    port: int
    ip: str | None = None
    version: str = "1.3"             # "1.2" | "1.3"
    suite: str | None = None         # IANA name (TLS_AES_128_GCM_SHA256 / TLS_ECDHE_RSA_WITH_...); None = default
    agents: int = 10
    per_agent: int = 10
    resume: bool = False             # True = measure resumed handshakes (session IDs / tickets)
    timeout_s: float = 10.0          # per step of a connection: TCP connect, TLS handshake, probe request
    time_limit_s: float | None = None   # the whole run ends by then, handshakes in flight abandoned
    stall_s: float | None = None     # ... and once every handshake has timed out for this long
    ca_file: str | None = None       # verify the certificate and name against this CA (plus system roots)
    insecure: bool = True            # like ab and the load engine: timing, not trust (exclusive with ca_file)

    def to_dict(self) -> dict:
        return asdict(self)
