"""The contract of the browser probe: what to load (ProbeSpec) and the JSON that comes back.

`run_probe(spec) -> dict` (workers/browser/probe.py) returns plain JSON:

    {
      "spec": {...},
      "loads": [                       # one per page load, in the order they ran (interleaved)
        {"variant": "https"|"http", "mode": "cold"|"warm", "run": 0..K-1, "ok": bool, "error": str,
         "url": str, "final_url": str, "redirect_chain": [url, ...],
         "timings_ms": {"redirect", "dns", "connect", "tls", "ttfb", "download", "dom_interactive",
                        "dom_content_loaded", "load"},
         "no_connect_phase": bool,     # Chromium reported connectStart == connectEnd on a cold HTTPS load
         "protocol": "h2"|"http/1.1"|..., "tls": {"protocol": str, "cipher": str} | None,
         "requests": int, "bytes": int, "from_cache": int, "not_modified": int,
         "statuses": {"200": n, ...}, "failed": int, "mixed_content": [url, ...],
         "waterfall": [{"url", "type", "status", "start_ms", "end_ms", "bytes", "from_cache", "protocol"}]}
      ],
      "summary": {"https_cold": {"requests": {"median", "min", "max", "p25", "p75"}, ...}, ...},
      "increase_pct": {"cold": {metric: pct}, "warm": {metric: pct}},   # HTTPS over HTTP, as Table VII
      "refused": [{"host", "port", "reason"}],  # connections the guard's proxy refused (guarded probes)
      "rtt": {"rtt_ms", "samples_ms", "address", "port", "error"} | None,   # TCP connects, see measure_rtt
      "browser": {"version": str}, "duration_s": float, "error": {"code", "message"} | None
    }
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tlsaudit.domain.probe_stats import MIN_ROUNDS  # noqa: F401 — the engine's contract names it

VARIANTS = ("https", "http")
MODES = ("cold", "warm")
TIMING_METRICS = ("redirect", "dns", "connect", "tls", "ttfb", "download", "dom_interactive",
                  "dom_content_loaded", "load")


@dataclass(frozen=True)
class ProbeSpec:
    host: str                        # ASCII host name (Host header, SNI, URL)
    https_port: int = 443
    http_port: int = 80
    path: str = "/"
    ip: str | None = None            # pinned: Chromium --host-resolver-rules maps host -> ip
    ca_pem: str | None = None        # the organization's CA, trusted for real (not ignore-errors)
    runs: int = 20                   # at most K repetitions of each variant x mode (a cap when `seconds` is set)
    timeout_s: float = 30.0          # per page load
    variants: tuple[str, ...] = VARIANTS
    deadline_s: float | None = None  # the whole probe: no load starts after it, none runs past it
    seconds: float | None = None     # time for the measured rounds: another starts while it fits (MIN_ROUNDS first)

    def to_dict(self) -> dict:
        return asdict(self)
