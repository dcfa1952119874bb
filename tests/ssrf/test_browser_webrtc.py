"""WebRTC cannot take a probed page around the guard (issue 14, item 2).

The guard sees only what Chromium sends through its SOCKS5 proxy, and WebRTC's UDP (STUN, TURN over
UDP, connectivity checks, mDNS announcements of host candidates) never goes through a proxy. Two
layers close it, each with its own test against canaries that must count nothing:
- the probe's init script removes every WebRTC interface before any page script runs, in every frame
  (test 1: the real guarded probe; every attempt finds no constructor);
- Chromium's `--webrtc-ip-handling-policy=disable_non_proxied_udp` keeps WebRTC off UDP and sends its
  TCP through the proxy, for a page that still holds a constructor (test 2: the probe's launch flags and
  proxy in a context without our init script; every attempt runs ICE).

The attack page (webrtc_attack.js) tries from its first script, the window, the prefixed name, the
prototype chain, about:blank children (nested too), srcdoc, sandboxed srcdoc, data: and blob: frames,
a cross-site frame, a scripted and a noopener popup, and from dedicated, shared and service workers
(WebTransport as well, the other page API that speaks UDP). Every attempt reports to the site, and the
page's load event waits for all reports, so a test cannot pass on an attempt that never happened.

Canaries: UDP on 127.0.0.1 (STUN, TURN/UDP and the remote candidate point there), a TCP trap on
127.0.0.2 (TURN/TCP, TURNS: a private address for the guard) and the mDNS group on every interface
(only Chromium's WebRTC names, `<uuid>.local`, are counted). The site is served on 127.0.0.1, which
stands for a public server (STAND_IN_POLICY); `http://127.0.0.1` is a secure context, so WebTransport
and service workers exist there as on an HTTPS site.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import threading
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from tests import hostile
from tests.support.ssrf import STAND_IN_POLICY
from workers.browser.chromium import ProbeBrowser
from workers.browser.guard import AddressGuard
from workers.browser.probe import run_probe
from workers.browser.proxy import GuardedProxy
from workers.browser.spec import ProbeSpec

ATTACK_JS = (Path(__file__).parent / "webrtc_attack.js").read_bytes()
CROSS_SITE = "www.hostile.test"     # the cross-site frame's host: the guard pins it to 127.0.0.1
KINDS = ("stun", "turn-udp", "turn-tcp", "turns", "remote-candidate")
WINDOWS = ("first-script", "window", "webkit-prefixed", "prototype-chain", "blank-iframe", "nested-blank-iframe",
           "blank-popup", "srcdoc-iframe", "sandboxed-srcdoc-iframe", "sandboxed-iframe", "data-iframe", "blob-iframe",
           "cross-site-iframe", "noopener-popup")
WORKERS = ("dedicated-worker", "shared-worker", "service-worker")
WEBRTC_ATTEMPTS = tuple(f"{where}:{kind}" for where in WINDOWS for kind in KINDS)
ATTEMPTS = (WEBRTC_ATTEMPTS + tuple(f"{where}:{what}" for where in WORKERS for what in ("webrtc", "webtransport"))
            + ("window:webtransport",))
REPORTS_WAIT_S = 25                  # the page's load event waits this long at most for every report
MDNS_GROUP, MDNS_PORT = "224.0.0.251", 5353
WEBRTC_MDNS_NAME = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\x05local", re.I)


class Canary:
    """Counts datagrams on a bound UDP socket in a thread; `match(payload)` decides which count."""

    def __init__(self, sock: socket.socket, match=lambda payload: True):
        self.sock, self.match = sock, match
        self.port = sock.getsockname()[1]
        self.datagrams = 0
        self.senders: set = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._count, daemon=True)
        sock.settimeout(0.05)
        self._thread.start()

    def _count(self) -> None:
        while not self._stop.is_set():
            try:
                payload, sender = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if self.match(payload):
                self.datagrams += 1
                self.senders.add(sender)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@contextmanager
def udp_canary(ip: str = "127.0.0.1"):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip, 0))
    canary = Canary(sock)
    try:
        yield canary
    finally:
        canary.close()


@contextmanager
def mdns_canary():
    """Listens to the mDNS group on every interface that can join it (only listens: nothing is sent)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("", MDNS_PORT))
    for index, _ in socket.if_nameindex():
        try:  # struct ip_mreqn: group, local address (any), interface index
            membership = struct.pack("4s4si", socket.inet_aton(MDNS_GROUP), socket.inet_aton("0.0.0.0"), index)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        except OSError:
            continue  # an interface without multicast (lo, a down one): nothing can be announced there
    canary = Canary(sock, lambda payload: WEBRTC_MDNS_NAME.search(payload) is not None)
    try:
        yield canary
    finally:
        canary.close()


class AttackSite:
    """The attack page and its helpers over plain HTTP; `reports` holds (attempt, outcome) in arrival order.
    The n-th `/hold` (an image of the n-th page load) is answered once every attempt reported n times."""

    def __init__(self, udp_port: int, tcp_port: int):
        self.udp_port, self.tcp_port = udp_port, tcp_port
        self.port = 0                                # set once the listener has one
        self.reports: list[tuple[str, str]] = []
        self.holds = 0
        self.changed = threading.Condition()

    @property
    def config(self) -> dict:
        return {"origin": f"http://127.0.0.1:{self.port}", "crossSiteOrigin": f"http://{CROSS_SITE}:{self.port}",
                "udpPort": self.udp_port, "tcpPort": self.tcp_port}

    def handle(self, conn, _state) -> None:
        request = hostile.read_request(conn)
        if request.count(b" ") < 2:
            return
        path, _, query = request.split(b" ", 2)[1].decode().partition("?")
        if path == "/report":
            self.record(json.loads(request.partition(b"\r\n\r\n")[2]))
            return answer(conn, "text/plain", b"")
        if path == "/hold":
            self.wait_for_round()
            return answer(conn, "image/svg+xml", b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>')
        pages = {"/": ("text/html", self.top_page), "/frame": ("text/html", lambda: self.frame_page(query)),
                 "/attack.js": ("text/javascript", lambda: ATTACK_JS), "/sw.js": ("text/javascript", self.service_worker)}
        content_type, render = pages.get(path, ("text/plain", lambda: b"not found"))
        answer(conn, content_type, render())

    def record(self, report: dict) -> None:
        with self.changed:
            self.reports.extend(report.items())
            self.changed.notify_all()

    def wait_for_round(self) -> None:
        with self.changed:
            self.holds += 1
            rounds = self.holds
            self.changed.wait_for(lambda: all(count >= rounds for count in self.counts().values()), REPORTS_WAIT_S)

    def counts(self) -> dict[str, int]:
        seen = Counter(name for name, _ in self.reports)
        return {name: seen[name] for name in ATTEMPTS}

    def outcomes(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for name, outcome in self.reports:
            found.setdefault(name, set()).add(outcome)
        return found

    def script_config(self) -> str:
        return f"<script>const CONFIG = {json.dumps(self.config)};</script>"

    def top_page(self) -> bytes:
        # The very first script grabs the constructor before anything else can run.
        return (f"<!doctype html><script>const GRABBED = window.RTCPeerConnection;</script>"
                f'<html><head><link rel="icon" href="data:,">{self.script_config()}<script src="/attack.js"></script>'
                f'</head><body><img src="/hold" alt=""><script>attackFromTopPage(GRABBED);</script></body></html>'
                ).encode()

    def frame_page(self, query: str) -> bytes:
        where = json.dumps(query.removeprefix("where="))
        return (f"<script>const GRABBED = window.RTCPeerConnection;</script>{self.script_config()}"
                f'<script src="{self.config["origin"]}/attack.js"></script>'
                f"<script>attackWith({where}, GRABBED);</script>").encode()

    def service_worker(self) -> bytes:
        return (f"const CONFIG = {json.dumps(self.config)}; importScripts('/attack.js');"
                "self.addEventListener('message', () => inWorker('service-worker'));").encode()


def answer(conn, content_type: str, body: bytes) -> None:
    conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-store\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


@contextmanager
def attack_site():
    """(site, UDP canary, TCP trap, mDNS canary), the site on 127.0.0.1."""
    with udp_canary() as udp, hostile.trap("127.0.0.2") as (tcp_port, trap), mdns_canary() as mdns:
        site = AttackSite(udp.port, tcp_port)
        with hostile.serve_listener(site.handle, "127.0.0.1") as (site.port, _):
            yield site, udp, trap, mdns


def guard() -> AddressGuard:
    return AddressGuard(allow_private=False, ip_map={CROSS_SITE: "127.0.0.1"}, refuse=STAND_IN_POLICY)


def assert_every_attempt_reported(site: AttackSite, times: int) -> None:
    missing = {name: count for name, count in site.counts().items() if count < times}
    unknown = {name for name, _ in site.reports} - set(ATTEMPTS)
    assert not missing and not unknown, f"attempts that did not report: {missing}; unexpected: {unknown}"


def assert_nothing_escaped(udp: Canary, trap, mdns: Canary) -> None:
    assert (udp.datagrams, trap.accepted, mdns.datagrams) == (0, 0, 0), (
        f"UDP datagrams {udp.datagrams} from {udp.senders}, TCP connections {trap.accepted}, "
        f"WebRTC mDNS datagrams {mdns.datagrams} from {mdns.senders}")


def test_a_probed_page_finds_no_webrtc_in_any_frame_and_sends_nothing_around_the_guard():
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # sync Playwright runs a loop in this thread
    with attack_site() as (site, udp, trap, mdns):
        spec = ProbeSpec(host="127.0.0.1", https_port=site.port, http_port=site.port,
                         path="/", runs=1, variants=("http",), timeout_s=REPORTS_WAIT_S + 15)
        result = run_probe(spec, guard=guard())

    # The probe measured the page as usual: a cold load and a warm reload
    assert result["error"] is None, result["error"]
    assert [(load["mode"], load["ok"]) for load in result["loads"]] == [("cold", True), ("warm", True)]
    # Both loads made every attempt, and every one of them found no WebRTC, the page's first script included
    assert_every_attempt_reported(site, times=2)
    outcomes = site.outcomes()
    assert {name: outcomes[name] for name in WEBRTC_ATTEMPTS} == {name: {"absent"} for name in WEBRTC_ATTEMPTS}
    assert {name: outcomes[f"{name}:webrtc"] for name in WORKERS} == {name: {"absent"} for name in WORKERS}
    # WebTransport (QUIC, UDP) exists on this secure page and in workers and was tried: the proxy cannot carry it
    assert all(outcome.startswith("tried") for name in ATTEMPTS if name.endswith(":webtransport")
               for outcome in outcomes[name]), {name: outcomes[name] for name in ATTEMPTS if "webtransport" in name}
    assert_nothing_escaped(udp, trap, mdns)


def test_chromium_sends_no_webrtc_udp_even_for_a_page_that_has_the_constructors():
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with attack_site() as (site, udp, trap, mdns):
        address_guard = guard()
        proxy = GuardedProxy(address_guard, connect_timeout_s=10)
        try:
            with ProbeBrowser() as browser:
                # Playwright's own context: the probe's launch flags and proxy, without the probe's init script
                context = browser.browser.new_context(proxy=proxy.playwright_proxy)
                context.new_page().goto(site.config["origin"] + "/", wait_until="load", timeout=(REPORTS_WAIT_S + 15) * 1000)
                context.close()
        finally:
            proxy.close()

    # Every window-like scope had a working RTCPeerConnection and ran ICE with it
    assert_every_attempt_reported(site, times=1)
    outcomes = site.outcomes()
    ran = {name: outcomes[name] for name in WEBRTC_ATTEMPTS
           if not all(outcome.startswith(("gathered", "checked")) for outcome in outcomes[name])}
    assert ran == {}, f"attempts that did not reach ICE: {ran}"
    # TURN over TCP and TLS asked the guard's proxy, which refused the private address
    assert ("127.0.0.2", site.tcp_port) in {(r["host"], r["port"]) for r in proxy.refusals}, proxy.refusals
    assert_nothing_escaped(udp, trap, mdns)

