"""Our timers split into the round trips the protocols cost, behind a 50 ms link (issue #15, item 2).

Every figure is divided by the RTT measured in the same run (its TCP connects,
tlsaudit.domain.round_trips) and compared with the round trips of /work/shared/measurement.md.
Tolerances, on the fastest sample of each phase of the handshake timer, the load engine and the browser
(a busy machine only adds time): at least N - 0.05 RTT (nothing beats the physics: the delay line may release
a packet up to ~0.3 ms early, and the RTT estimate is the low end of the connects), at most N + 0.9 RTT
(45 ms: the handshake's CPU on both ends, 1-5 ms here, plus scheduling on a shared 2-core machine: with
the whole suite and other work beside it, Chromium's cold TLS 1.3 handshake took 1.66 RTT). A phase of
N + 1 round trips can never measure less than N + 1 RTT, so one round trip too many still fails.
Chromium gets a wider lower band for its connect phase: see test_the_browser_probe_phases_split_into_round_trips.
"""

import os
import socket
import time

import pytest

from tests.support.probe_site import fastest
from tlsaudit.domain.handshake_stats import decode
from tlsaudit.domain.round_trips import estimate_rtt_from_histogram, estimate_rtt_ms, round_trips
from workers.load.client import run_load
from workers.load.handshake import run_handshakes
from workers.load.spec import HandshakeSpec, LoadSpec

RTT = 50
NOT_RESUMING, RESUMING, TLS12_ONLY = "load_no_resumption", "load_session_cache", "a_minus_tls12_only"
P384_ONLY = "a_plus_ecdsa_p384_only"  # offers only secp384r1: a client's default X25519 share gets a HelloRetryRequest


# A phase of k round trips can never take less than k RTT; what it takes beyond is CPU (a TLS handshake's
# signature and key exchange, Chromium's scheduling), which a loaded 2-core machine stretched to 0.66 RTT
# at 50 ms. The band's top stays below k + 1 so a phase that takes one round trip more (a HelloRetryRequest,
# a TLS 1.2 handshake) still fails, whatever the load.
ABOVE = 0.9


def assert_round_trips(measured_ms: float, rtt_ms: float, expected: int, what: str, low: float = 0.05) -> None:
    multiple = measured_ms / rtt_ms
    assert expected - low <= multiple <= expected + ABOVE, (
        f"{what}: {measured_ms:.1f} ms = {multiple:.2f} RTT at RTT {rtt_ms:.1f} ms, expected ~{expected}")


def assert_rtt_is_the_links(rtt_ms: float) -> None:
    # Two full runs (2026-11-29) measured 49.25 ms through the 50 ms link: the measurement's own spread.
    assert RTT - 1.5 <= rtt_ms <= RTT + 3, f"measured RTT {rtt_ms} ms through a {RTT} ms link"


@pytest.fixture(scope="module")
def link(wan_links):
    return wan_links[RTT]


# --- the handshake timer (workers/load/handshake*.py) ---------------------------------------------

@pytest.mark.parametrize("version, server, resume, expected", [
    ("1.2", NOT_RESUMING, False, 2),
    ("1.3", NOT_RESUMING, False, 1),
    ("1.2", RESUMING, True, 1),
    ("1.3", RESUMING, True, 1),
    ("1.3", P384_ONLY, False, 2),  # HelloRetryRequest: one more round trip for the key share
], ids=["tls12-full", "tls13-full", "tls12-resumed", "tls13-resumed", "tls13-hello-retry"])
def test_handshakes_take_the_round_trips_of_their_protocol(tls_lab, link, version, server, resume, expected):
    result = run_handshakes(HandshakeSpec(host="localhost", ip=link.host, port=tls_lab.port(server), version=version,
                                          agents=1, per_agent=6, resume=resume))
    assert (result["count"], result["failures"], result["flagged"]) == (6, {}, {})
    rtt = estimate_rtt_from_histogram(result["histograms"]["tcp"])
    assert_rtt_is_the_links(rtt)
    assert_round_trips(fastest_in(result, "tcp"), rtt, 1, "TCP connect")
    assert_round_trips(fastest_in(result, "tls"), rtt, expected, f"TLS {version} {'resumed' if resume else 'full'}")


def fastest_in(result: dict, phase: str) -> float:
    """The handshake timer's fastest sample of a phase, from its histogram (see fastest_ms: a quiet run of the
    whole suite read a HelloRetryRequest handshake's median at 2.92 RTT)."""
    return decode(result["histograms"][phase]).get_min_value() / 1000


# --- the load engine (workers/load/engine.py) -------------------------------------------------------

def fastest_ms(result, phase: str) -> float:
    """The phase's fastest sample. A phase can never take less than its round trips, and a busy machine only
    ever adds time (a TLS 1.3 handshake's median read 1.93 RTT with two busy tests beside it): the fastest of
    the run is the least disturbed, and one round trip too many still puts even it past k + 1 RTT."""
    return min(result.samples[phase]) / 1000


def load_run(tls_lab, link, scheme: str, keepalive: bool, tls_version: str | None = None, requests: int = 6):
    port = tls_lab.port(NOT_RESUMING) if scheme == "https" else tls_lab.http_port(NOT_RESUMING)
    result = run_load(LoadSpec(scheme=scheme, host="localhost", ip=link.host, port=port,
                               path="/" if scheme == "https" else "/health", requests=requests, concurrency=1,
                               keepalive=keepalive, tls_version=tls_version))
    assert (result.counters.complete, result.counters.failed) == (requests, 0)
    # a kept-alive run has one TCP connect: too few to estimate from, so measure 5 beside it
    rtt = estimate_rtt_from_histogram(result.histograms["tcp"]) if not keepalive else tcp_rtt(link.host, port)
    assert_rtt_is_the_links(rtt)
    return result, rtt


def tcp_rtt(host: str, port: int, count: int = 5) -> float:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        socket.create_connection((host, port), timeout=5).close()
        samples.append((time.perf_counter() - started) * 1000)
    return estimate_rtt_ms(samples)


@pytest.mark.parametrize("tls_version, handshake", [("1.2", 2), ("1.3", 1)])
def test_a_new_https_connection_costs_tcp_tls_and_one_request_round_trip(tls_lab, link, tls_version, handshake):
    result, rtt = load_run(tls_lab, link, "https", keepalive=False, tls_version=tls_version)
    assert_round_trips(fastest_ms(result, "tcp"), rtt, 1, "TCP connect")
    assert_round_trips(fastest_ms(result, "tls"), rtt, handshake, f"TLS {tls_version} handshake")
    assert_round_trips(fastest_ms(result, "connect"), rtt, 1 + handshake, "ab's Connect (TCP + TLS)")
    assert_round_trips(fastest_ms(result, "waiting"), rtt, 1, "request to first byte")
    assert_round_trips(fastest_ms(result, "total"), rtt, 2 + handshake, "whole request")


def test_a_new_http_connection_costs_tcp_and_one_request_round_trip(tls_lab, link):
    result, rtt = load_run(tls_lab, link, "http", keepalive=False)
    assert_round_trips(fastest_ms(result, "connect"), rtt, 1, "TCP connect")
    assert_round_trips(fastest_ms(result, "waiting"), rtt, 1, "request to first byte")
    assert_round_trips(fastest_ms(result, "total"), rtt, 2, "whole request")


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_a_kept_alive_request_costs_one_round_trip(tls_lab, link, scheme):
    result, rtt = load_run(tls_lab, link, scheme, keepalive=True, requests=8)
    assert result.counters.keepalive_requests == 8 and result.counters.connections_opened == 1
    reused = result.samples["total"][1:]  # the first request opened the connection
    assert_round_trips(min(reused) / 1000, rtt, 1, f"{scheme} keep-alive request")
    assert result.samples["connect"][1:] == [0] * 7


# --- the browser probe (workers/browser: Navigation Timing) ----------------------------------------

@pytest.fixture(scope="module")
def wan_probe_browser(probe_site, link):
    """A Chromium that reaches the probe site through the link (its host pinned to the link's address)."""
    from workers.browser.chromium import ProbeBrowser

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs a loop in this thread
    with ProbeBrowser(probe_site.ca_pem, {probe_site.host: link.host}) as browser:
        yield browser


def test_the_browser_probe_phases_split_into_round_trips(probe_site, link, wan_probe_browser):
    """Cold HTTPS: TCP 1, TLS 1.3 1, TTFB 1; cold HTTP: TCP 1, TTFB 1; warm: no connect, TTFB 1.
    Each TLS and TTFB phase is the fastest of five loads (see `fastest`); the medians the product shows carry
    the machine's scheduling too, and a full suite on two cores has put 2 of 3 cold HTTP loads 80 ms late.
    Chromium's connect phase gets a lower band of 0.6 RTT: on a cold navigation it opens the socket a
    few ms before the request's timing origin (3-8 ms on a quiet machine, 15 ms seen with the whole suite
    running on both cores), so part of the SYN's round trip falls outside the phase. The probe's own RTT
    (plain TCP connects) does not have that bias."""
    from workers.browser.probe import run_probe
    from workers.browser.spec import ProbeSpec

    spec = ProbeSpec(host=probe_site.host, https_port=probe_site.https_port, http_port=probe_site.http_port,
                     ip=link.host, ca_pem=probe_site.ca_pem, runs=5)
    result = run_probe(spec, browser=wan_probe_browser, allow_private=True)
    assert result["error"] is None
    rtt = result["rtt"]["rtt_ms"]
    assert_rtt_is_the_links(rtt)
    assert result["rtt"]["address"] == link.host and len(result["rtt"]["samples_ms"]) == 5
    summary = result["summary"]
    assert summary["https_cold"]["samples"] == 5 and result["loads"][0]["tls"]["protocol"] == "TLS 1.3"

    def phase(cell: str, metric: str) -> float:
        # The connect phase keeps the median: Chromium's timing-origin bias takes time off it (see above), so
        # its fastest load is the most biased one, not the least disturbed.
        return summary[cell][metric]["median"] if metric == "connect" else fastest(result, cell, metric)

    assert_round_trips(phase("https_cold", "connect"), rtt, 1, "cold HTTPS TCP connect", low=0.4)
    assert_round_trips(phase("https_cold", "tls"), rtt, 1, "cold HTTPS TLS 1.3 handshake")
    assert_round_trips(phase("https_cold", "ttfb"), rtt, 1, "cold HTTPS TTFB")
    assert_round_trips(phase("http_cold", "connect"), rtt, 1, "cold HTTP TCP connect", low=0.4)
    assert_round_trips(phase("http_cold", "ttfb"), rtt, 1, "cold HTTP TTFB")
    warm = [load for load in result["loads"] if load["mode"] == "warm"]
    # A reload reuses the cold load's connection: no connect, no handshake. With the machine loaded by a
    # Docker build beside the suite, a reload once opened a new connection (cause not established: the
    # server keeps connections 30 s); the product shows such a load's connect and TLS phases as measured.
    reused = [load for load in warm if load["timings_ms"]["connect"] == load["timings_ms"]["tls"] == 0]
    assert len(warm) == 10 and len(reused) >= 8, [load["timings_ms"] for load in warm]
    for cell in ("https_warm", "http_warm"):
        assert_round_trips(phase(cell, "ttfb"), rtt, 1, f"{cell} TTFB")  # on the reused connection
    assert round_trips(summary["https_cold"]["tls"]["median"], rtt) is not None
