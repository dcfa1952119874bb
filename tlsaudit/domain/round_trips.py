"""Round trips: the network's share of a timing, as a multiple of the measured RTT.

On a real network a new HTTPS request costs TCP (1 RTT) + TLS (2 RTT for a TLS 1.2 full handshake,
1 for TLS 1.3 or a resumed one) + the request (1 RTT); on loopback the same phases measure only CPU.
So a page that shows a phase time also says how many round trips it holds, when the RTT is known
and large enough for that to mean something.

The RTT comes from TCP connect times of the same run: a connect is one round trip (SYN, SYN-ACK)
plus whatever queueing the host adds, never less. The estimate is the 10th percentile (nearest
rank) of the connect samples: the low end is the path's propagation time, as TCP's own min-RTT
filters assume, and one sample below it (a clock quirk, a browser that stamped its start late)
cannot drag the estimate down alone. Pure: no Django, no sockets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tlsaudit.domain.handshake_stats import decode

# Below this RTT a phase's CPU (~1-3 ms per TLS handshake on both ends) is a large part of the phase,
# so "2.6 RTT" would mislead: multiples are shown only from 10 ms on (a LAN or loopback shows none).
MIN_MEANINGFUL_RTT_MS = 10.0
RTT_PERCENTILE = 10


def percentile_nearest_rank(values: list[float], percent: float) -> float:
    """The smallest value with at least `percent` % of the values at or below it (non-empty list)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]


def estimate_rtt_ms(connect_ms: Iterable[float | None]) -> float | None:
    """The RTT from TCP connect times (ms): their 10th percentile; None without a usable sample."""
    values = [float(v) for v in connect_ms if v is not None and v > 0]
    if not values:
        return None
    return round(percentile_nearest_rank(values, RTT_PERCENTILE), 3)


def estimate_rtt_from_histogram(encoded: str | bytes | None) -> float | None:
    """The same estimate from an encoded HdrHistogram of connect times in µs (load and handshake runs)."""
    if not encoded:
        return None
    histogram = decode(encoded)
    if not histogram.get_total_count():
        return None
    return round(histogram.get_value_at_percentile(RTT_PERCENTILE) / 1000, 3)


def is_meaningful(rtt_ms: float | None) -> bool:
    return rtt_ms is not None and rtt_ms >= MIN_MEANINGFUL_RTT_MS


def round_trips(value_ms: float | None, rtt_ms: float | None) -> float | None:
    """`value_ms` in RTTs, one decimal; None when either is unknown or the RTT is too small to matter."""
    if value_ms is None or not is_meaningful(rtt_ms):
        return None
    return round(value_ms / rtt_ms, 1)


def round_trips_label(value_ms: float | None, rtt_ms: float | None) -> str:
    """"≈ 2.1 RTT" (or "" when `round_trips` is None): what a page prints beside a phase time."""
    multiple = round_trips(value_ms, rtt_ms)
    return "" if multiple is None else f"≈ {multiple:g} RTT"


def phase_round_trips(phases_ms: dict[str, float | None], rtt_ms: float | None) -> dict[str, float | None]:
    """{phase: multiple} for every phase of `phases_ms` (all None when the RTT is not meaningful)."""
    return {phase: round_trips(value, rtt_ms) for phase, value in phases_ms.items()}


def combined_rtt_ms(estimates: Iterable[float | None]) -> float | None:
    """One RTT for a run of several cells to the same target: the median of their estimates."""
    values = sorted(v for v in estimates if v is not None)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else round((values[middle - 1] + values[middle]) / 2, 3)


def rtt_note(rtt_ms: float | None) -> str:
    """What a page says about the RTT it measured, in plain words."""
    if rtt_ms is None:
        return "No TCP connect was timed, so the round trip time is unknown."
    if not is_meaningful(rtt_ms):
        return (f"Measured round trip time {rtt_ms:.2f} ms (TCP connects): below {MIN_MEANINGFUL_RTT_MS:g} ms the "
                "times measure CPU more than round trips, so they are not shown as RTT multiples.")
    return (f"Measured round trip time {rtt_ms:.1f} ms (TCP connects). Expected on a real network: TCP connect 1 RTT, "
            "TLS 1.2 full handshake 2, TLS 1.3 or a resumed handshake 1, a request on an open connection 1.")


def with_round_trips(value_ms: float | None, rtt_ms: float | None) -> str:
    """"153.2 ms (≈ 3.1 RTT)", or just the milliseconds when no multiple applies ("–" when unknown)."""
    if value_ms is None:
        return "–"
    label = round_trips_label(value_ms, rtt_ms)
    return f"{value_ms:.1f} ms ({label})" if label else f"{value_ms:.1f} ms"
