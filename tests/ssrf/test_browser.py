"""The browser probe in guarded mode: every connection Chromium makes goes through the guard's SOCKS5
proxy, so subresources and redirects to private addresses are refused before any connection, and a
host is resolved once per probe (the checked address is the connected one).

The page is served by a plain-HTTP server on 127.0.0.1, which stands for the public site
(STAND_IN_POLICY: the real rules, except 127.0.0.1 counts as public); every private address the
page points at is 127.0.0.2 (or a name resolving to it) on the same port, where a trap counts
connections. Each probe launches and closes its own Chromium (as the CLI does).
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager

import pytest

from tests import hostile
from tests.support.hostile_targets import open_fds
from tests.support.ssrf import REBIND, STAND_IN_POLICY, route_handler
from tests.support.waiting import settled
from workers.browser.guard import AddressGuard
from workers.browser.probe import run_probe
from workers.browser.spec import ProbeSpec

SITE = "www.hostile.test"
SVG = (200, {"Content-Type": "image/svg+xml", "Cache-Control": "no-store"},
       b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>')
# Subresources on private addresses, spelled every way a page can: an IP, a name, a decimal
# number, an IPv4-mapped IPv6 address, localhost; and fetch() and a WebSocket, which are not images.
PRIVATE_SUBRESOURCES = ("http://127.0.0.2:{port}/a.svg", "http://loopback.hostile.test:{port}/b.svg",
                        "http://2130706434:{port}/c.svg", "http://[::ffff:127.0.0.2]:{port}/d.svg",
                        "http://localhost:{port}/e.svg")


def page(body: str) -> tuple[int, dict, bytes]:
    html = f'<!doctype html><html><head><link rel="icon" href="data:,"></head><body>{body}</body></html>'
    return 200, {"Content-Type": "text/html", "Cache-Control": "no-store"}, html.encode()


def site_routes(port: int) -> dict:
    images = "".join(f'<img src="{url.format(port=port)}">' for url in PRIVATE_SUBRESOURCES)
    scripts = (f'<script>fetch("http://loopback.hostile.test:{port}/f").catch(() => 0);'
               f'try {{ new WebSocket("ws://127.0.0.2:{port}/g"); }} catch (e) {{}}</script>')
    return {
        "/sub.html": page(f'<img src="/ok.svg">{images}{scripts}'),
        "/ok.svg": SVG,
        "/redirect-literal": (302, {"Location": f"http://127.0.0.2:{port}/"}, b""),
        "/redirect-name": (302, {"Location": f"http://loopback.hostile.test:{port}/"}, b""),
        "/rebind.html": page(f'<img src="http://{REBIND}:{port}/ok.svg">'),
    }


@contextmanager
def public_site():
    """(port, site listener, trap listener): the page server on 127.0.0.1 and a trap on 127.0.0.2."""
    port = hostile.twin_port()
    with hostile.serve_listener(route_handler(site_routes(port)), "127.0.0.1", port) as (_, site), \
            hostile.trap("127.0.0.2", port) as (_, trap):
        yield port, site, trap


def probe(port: int, path: str, dns, runs: int = 1) -> dict:
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # sync Playwright runs a loop in this thread
    guard = AddressGuard(allow_private=False, refuse=STAND_IN_POLICY, resolver=dns.address)
    spec = ProbeSpec(host=SITE, https_port=port, http_port=port, path=path, ip="127.0.0.1", runs=runs,
                     variants=("http",), timeout_s=15)
    return run_probe(spec, guard=guard)


def requested_paths(site) -> list[str]:
    return [request.split(b" ", 2)[1].decode() for request in site.requests if request.count(b" ") >= 2]


def test_subresources_on_private_addresses_are_refused_and_the_page_still_loads(rebinding_dns):
    with public_site() as (port, site, trap):
        probe(port, "/ok.svg", rebinding_dns)   # the process's one-time state (Playwright's first start)
    before = open_fds()
    with public_site() as (port, site, trap):
        result = probe(port, "/sub.html", rebinding_dns)
    # The proxy (its loop, its listener, every relayed connection) is gone with the probe (a socket that
    # only the garbage collector still holds would be closed by its next pass: collect first)
    after = settled(lambda: (gc.collect(), open_fds())[1], lambda fds: len(fds) <= len(before))
    assert len(after) <= len(before), {fd: what for fd, what in after.items() if before.get(fd) != what}

    # The page and its same-site image loaded, through the proxy
    assert result["error"] is None, result["error"]
    assert [load["ok"] for load in result["loads"]] == [True, True]
    assert requested_paths(site).count("/ok.svg") >= 1
    # Every private subresource, in every spelling, was refused before a connection
    assert trap.accepted == 0
    refused = {(r["host"], r["port"]) for r in result["refused"]}
    assert {("127.0.0.2", port), ("loopback.hostile.test", port), ("::ffff:7f00:2", port),
            ("localhost", port)} <= refused, result["refused"]
    assert all(r["reason"].endswith("TLS Audit only probes servers on the public internet.")
               for r in result["refused"])


@pytest.mark.parametrize("path, hop", [("/redirect-literal", "http://127.0.0.2:{port}/"),
                                       ("/redirect-name", "http://loopback.hostile.test:{port}/")])
def test_a_redirect_to_a_private_address_fails_the_probe_before_connecting(rebinding_dns, path, hop):
    with public_site() as (port, _, trap):
        result = probe(port, path, rebinding_dns)

    assert result["error"]["code"] == "private_target", result["error"]
    assert "127.0.0.2" in result["error"]["message"] and "a loopback address" in result["error"]["message"]
    assert result["loads"][0]["redirect_chain"][-1] == hop.format(port=port)
    assert trap.accepted == 0


def test_a_rebinding_host_is_resolved_once_per_probe_and_always_connected_at_that_address(rebinding_dns):
    with public_site() as (port, site, trap):
        result = probe(port, "/rebind.html", rebinding_dns, runs=2)

    # Four loads (2 runs x cold, warm) and the discarded warm-up load, each fetching the image from REBIND:
    # only 127.0.0.1 answered
    assert result["error"] is None and len(result["loads"]) == 4
    assert requested_paths(site).count("/ok.svg") == 5
    assert trap.accepted == 0
    assert rebinding_dns.asked(REBIND, "A") == 1
