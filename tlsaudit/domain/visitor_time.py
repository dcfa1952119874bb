"""What each recommendation does to a visitor's time, beside what it does to the grade.

Round trips are the unit (tlsaudit/domain/round_trips.py): a TLS 1.2 full handshake takes 2, TLS 1.3
or a resumed TLS 1.2 handshake 1, a TCP connect 1, a request 1. A change's effect is a number of
round trips (or server CPU) per event (a new connection, a visit typed as http://, a handshake),
turned into milliseconds at this site's RTT as our worker measured it (a browser probe's TCP connects,
else a load or handshake run's). Where the site's own runs measured the part a change removes (the
redirect HSTS skips, the TLS 1.2 handshake TLS 1.3 shortens, the requests HTTP/1.1 queues), the
figure says so and uses it; where they did not, it is an estimate and says so, with what would
measure it. Negative milliseconds are time saved. Pure: no Django, no sockets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tlsaudit.domain.round_trips import is_meaningful

MEASURED, ESTIMATED, NONE = "measured", "estimated", "none"
# Beside an RTT too small to matter (loopback, a LAN), what a visitor this far away would see.
REFERENCE_RTT_MS = 100.0
HTTP1_CONNECTIONS = 6            # browsers' HTTP/1.1 connections per host
# Server CPU per full handshake, nginx with OpenSSL on one core, measured in this project:
# ECDSA P-256 about 620 µs, RSA-2048 about 770 µs (the RSA signature is most of the difference).
ECDSA_SAVING_MS = 0.15


@dataclass(frozen=True)
class SiteTimings:
    """What this site's own runs measured (every field optional; `*_source` names the run)."""
    rtt_ms: float | None = None
    rtt_source: str = ""
    tls12_full_ms: float | None = None     # median TLS 1.2 full handshake (TLS only, TCP apart)
    tls13_full_ms: float | None = None
    handshake_source: str = ""
    redirect_ms: float | None = None       # median of the cold http:// loads' redirect phase (probe)
    page_requests: int | None = None       # requests of a cold HTTPS page load (probe)
    page_protocol: str = ""                # that load's protocol: "h2", "http/1.1"
    probe_source: str = ""


@dataclass(frozen=True)
class VisitorEffect:
    text: str                   # in words, with the figure and where it comes from
    ms: float | None            # signed: negative = the visitor saves time; None: no figure
    per: str                    # the event it applies to
    basis: str                  # MEASURED, ESTIMATED or NONE (no effect on a visitor's time)

    def to_dict(self) -> dict:
        return {"text": self.text, "ms": self.ms, "per": self.per, "basis": self.basis}


def effect_of(rec_id: str, timings: SiteTimings) -> VisitorEffect:
    """The visitor-time effect of the recommendation `rec_id` at this site."""
    rule = RULES.get(rec_id)
    if rule is None:
        return no_effect("It changes which clients connect and how safely, not how many round trips they wait for.")
    return rule(timings)


def effects_of(rec_ids: list[str], timings: SiteTimings) -> dict[str, dict]:
    return {rec_id: effect_of(rec_id, timings).to_dict() for rec_id in rec_ids}


# --- words -----------------------------------------------------------------------------------------

def ms_text(ms: float) -> str:
    sign = "−" if ms < 0 else "+"
    return f"{sign}{abs(ms):.0f} ms" if abs(ms) >= 10 else f"{sign}{abs(ms):.1f} ms"


def at_rtt(round_trips: float, timings: SiteTimings) -> tuple[float | None, str]:
    """(ms, words) for `round_trips` (signed) at the site's measured RTT, with a reference visitor when
    that RTT is too small to matter; (None, words) when no RTT was measured."""
    trips = f"{abs(round_trips):g} round trip{'s' if abs(round_trips) != 1 else ''}"
    rtt = timings.rtt_ms
    if rtt is None:
        reference = round_trips * REFERENCE_RTT_MS
        return None, (f"{'−' if round_trips < 0 else '+'}{trips} (estimated: {ms_text(reference)} for a visitor "
                      f"{REFERENCE_RTT_MS:.0f} ms away; a browser probe measures this site's round trip time)")
    ms = round_trips * rtt
    words = f"{ms_text(ms)}: {trips} at the {rtt:.1f} ms RTT measured by {timings.rtt_source}"
    if not is_meaningful(rtt):
        words += (f" (from our worker, next to the site; a visitor {REFERENCE_RTT_MS:.0f} ms away: "
                  f"{ms_text(round_trips * REFERENCE_RTT_MS)})")
    return ms, words


def no_effect(why: str) -> VisitorEffect:
    return VisitorEffect(f"No change to a visitor's time. {why}", 0.0, "", NONE)


# --- the rules -------------------------------------------------------------------------------------

def enable_tls13(t: SiteTimings) -> VisitorEffect:
    ms, words = at_rtt(-1, t)
    text = f"{words} per new connection: a TLS 1.3 full handshake takes 1 round trip, TLS 1.2's takes 2."
    if t.tls12_full_ms is not None:
        text += (f" Measured now: TLS 1.2 full handshakes take {t.tls12_full_ms:.1f} ms (median, "
                 f"{t.handshake_source}).")
        return VisitorEffect(text, ms, "new connection", MEASURED if ms is not None else ESTIMATED)
    return VisitorEffect(text, ms, "new connection", ESTIMATED)


def session_resumption(t: SiteTimings) -> VisitorEffect:
    ms, words = at_rtt(-1, t)
    text = (f"{words} per new connection of a returning TLS 1.2 visitor (a resumed handshake takes 1 round trip, "
            "a full one 2); TLS 1.3 visitors keep 1 round trip and the server skips the certificate signature.")
    return VisitorEffect(text, ms, "returning visitor's new connection", ESTIMATED)


def ecdsa(t: SiteTimings) -> VisitorEffect:
    text = (f"About {ms_text(-ECDSA_SAVING_MS)} of server CPU per full handshake (estimated: nginx spent about 620 µs "
            "per ECDSA P-256 handshake and 770 µs per RSA-2048 one in our measurements), more on a busy server; and "
            "a certificate about 400 bytes smaller, which keeps the server's first flight within fewer packets.")
    if t.tls12_full_ms is not None or t.tls13_full_ms is not None:
        now = t.tls13_full_ms if t.tls13_full_ms is not None else t.tls12_full_ms
        text += f" This site's full handshakes take {now:.1f} ms now (median, {t.handshake_source})."
    return VisitorEffect(text, -ECDSA_SAVING_MS, "full handshake", ESTIMATED)


def ocsp_stapling(t: SiteTimings) -> VisitorEffect:
    text = ("For a browser that checks OCSP itself (Chrome does not; Firefox for some certificates), the first visit "
            "waits for the CA's responder: a connection and a request, about 2 round trips to the CA, typically "
            "50–200 ms (estimated: the CA's distance is not this site's). Stapling removes that wait.")
    return VisitorEffect(text, None, "first visit, browsers that check OCSP", ESTIMATED)


def hsts(t: SiteTimings) -> VisitorEffect:
    if t.redirect_ms is not None and t.redirect_ms > 0:
        text = (f"{ms_text(-t.redirect_ms)} per visit that starts on plain HTTP (a typed name, an old link), after the "
                f"first: the browser goes straight to HTTPS instead of following the redirect, which took "
                f"{t.redirect_ms:.1f} ms (median of the cold HTTP loads, {t.probe_source}).")
        return VisitorEffect(text, -t.redirect_ms, "visit that starts on plain HTTP", MEASURED)
    ms, words = at_rtt(-2, t)
    text = f"{words} per visit that starts on plain HTTP, after the first: no connection to port 80 and no redirect "
    if t.probe_source and t.redirect_ms is not None:
        text += (f"({t.probe_source} saw HTTP answer without redirecting to HTTPS: the saving applies once it "
                 "redirects, which HSTS needs).")
    else:
        text += "(a browser probe of this site measures the redirect itself)."
    return VisitorEffect(text, ms, "visit that starts on plain HTTP", ESTIMATED)


def hsts_preload(t: SiteTimings) -> VisitorEffect:
    effect = hsts(t)
    return VisitorEffect(effect.text.replace("after the first", "the first one included"), effect.ms,
                         "first visit that starts on plain HTTP", effect.basis)


def http2(t: SiteTimings) -> VisitorEffect:
    if not t.page_requests:
        ms, words = at_rtt(-1, t)
        text = (f"One connection instead of up to {HTTP1_CONNECTIONS}: fewer handshakes, and requests no longer wait "
                f"for a free connection (estimated {words} per {HTTP1_CONNECTIONS} requests beyond the first "
                f"{HTTP1_CONNECTIONS}; a browser probe counts this page's requests).")
        return VisitorEffect(text, ms, "page load", ESTIMATED)
    queued = max(0, math.ceil((t.page_requests - 1) / HTTP1_CONNECTIONS) - 1)
    if not queued:
        return no_effect(f"This page makes {t.page_requests} requests ({t.probe_source}): HTTP/1.1's "
                         f"{HTTP1_CONNECTIONS} connections carry them without queueing; HTTP/2 saves handshakes "
                         "on the extra connections (server CPU), not visitor time.")
    ms, words = at_rtt(-queued, t)
    text = (f"{words} per cold page load: this page makes {t.page_requests} requests ({t.probe_source}); over "
            f"HTTP/1.1 they wait in {queued + 1} waves of {HTTP1_CONNECTIONS}, over HTTP/2 they go together.")
    return VisitorEffect(text, ms, "page load", ESTIMATED)


def post_quantum(t: SiteTimings) -> VisitorEffect:
    return VisitorEffect("About the same time: the hybrid key share adds about 1.1 KB to each side's first message "
                         "and well under a millisecond of CPU, and no round trip (estimated).", 0.0, "new connection",
                         ESTIMATED)


def fix_chain(t: SiteTimings) -> VisitorEffect:
    text = ("A client that fetches the missing intermediate itself (AIA) waits about 2 round trips to the CA's server "
            "on its first visit, typically 50–200 ms (estimated); clients that do not fetch it fail outright today.")
    return VisitorEffect(text, None, "first visit", ESTIMATED)


def dh_2048(t: SiteTimings) -> VisitorEffect:
    return VisitorEffect("Slightly slower DHE handshakes (a 2048-bit group costs the server about 1 ms more CPU than "
                         "1024 bits; estimated), for the few clients that still use DHE: ECDHE clients see no change.",
                         1.0, "DHE handshake", ESTIMATED)


RULES = {
    "proto.enable_tls13": enable_tls13,
    "perf.session_resumption": session_resumption,
    "perf.ecdsa": ecdsa,
    "cert.ocsp_stapling": ocsp_stapling,
    "hsts.enable": hsts,
    "perf.hsts_preload": hsts_preload,
    "perf.http2": http2,
    "kx.post_quantum": post_quantum,
    "cert.fix_chain": fix_chain,
    "kx.dh_2048": dh_2048,
}
