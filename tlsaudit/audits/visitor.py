"""Security and speed side by side: this site's own measurements, read for
tlsaudit.domain.visitor_time, and each recommendation's effect on a visitor's time.

The latest finished browser probe gives the RTT (its TCP connects), the HTTP → HTTPS redirect and the
page's requests; the latest finished handshake run gives TLS 1.2 and 1.3 full handshake times (its
fewest agents: the closest to one visitor) and, without a probe, the RTT; else the latest load run.
"""

from __future__ import annotations

from tlsaudit.domain.visitor_time import SiteTimings, effects_of
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.loadtests.presenters import round_trips
from tlsaudit.loadtests.summaries import summary_of
from tlsaudit.probes.models import Probe


def site_timings(site) -> SiteTimings:
    fields: dict = {}
    probe = site.probes.filter(status=Probe.Status.DONE).order_by("-finished_at").first()
    if probe is not None:
        fields.update(probe_timings(probe))
    handshakes = latest_run(site, PerfRun.Kind.HANDSHAKES)
    if handshakes is not None:
        fields.update(handshake_timings(handshakes))
    if fields.get("rtt_ms") is None:
        fields.update(run_rtt(handshakes or latest_run(site)))
    return SiteTimings(**fields)


def latest_run(site, kind: str | None = None) -> PerfRun | None:
    runs = site.perf_runs.filter(status=PerfRun.Status.DONE)
    return (runs.filter(kind=kind) if kind else runs).order_by("-finished_at").first()


def probe_timings(probe: Probe) -> dict:
    source = f"browser probe #{probe.pk}"
    cells = (probe.summary or {}).get("summary") or {}
    https_cold, http_cold = cells.get("https_cold") or {}, cells.get("http_cold") or {}
    rtt = ((probe.result or {}).get("rtt") or {}).get("rtt_ms")
    return {"rtt_ms": rtt, "rtt_source": source if rtt is not None else "",
            "redirect_ms": median(http_cold, "redirect"), "page_requests": median(https_cold, "requests"),
            "page_protocol": https_cold.get("protocol", ""), "probe_source": source}


def median(cell: dict, metric: str):
    return (cell.get(metric) or {}).get("median")


def handshake_timings(run: PerfRun) -> dict:
    rows = [r for r in summary_of(run).get("versions") or [] if r.get("family") == "all"]
    if not rows:
        return {}
    row = min(rows, key=lambda r: r.get("agents") or 0)
    return {"tls12_full_ms": row.get("tls12_p50_ms"), "tls13_full_ms": row.get("tls13_p50_ms"),
            "handshake_source": f"handshake run #{run.pk}, {row.get('agents')} agents"}


def run_rtt(run: PerfRun | None) -> dict:
    if run is None:
        return {}
    figures = round_trips(run) or {}
    rtt = figures.get("rtt_ms")
    kind = "handshake run" if run.kind == PerfRun.Kind.HANDSHAKES else "load run"
    return {"rtt_ms": rtt, "rtt_source": f"{kind} #{run.pk}"} if rtt is not None else {}


def with_visitor_effects(recommendations: list[dict], site) -> list[dict]:
    """The recommendations, each with `visitor` (tlsaudit.domain.visitor_time.VisitorEffect as a dict)."""
    if not recommendations:
        return recommendations
    effects = effects_of([r["id"] for r in recommendations], site_timings(site))
    return [{**r, "visitor": effects[r["id"]]} for r in recommendations]
