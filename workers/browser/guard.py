"""SSRF guard for the browser probe: which hosts Chromium may connect to, and at which address.

Chromium resolves names itself, so the guard works in three layers:
1. Before launch: the target is resolved here (or its pinned IP taken), every address checked
   with `tlsaudit.domain.netguard`, and the checked address pinned with
   `--host-resolver-rules=MAP host ip`, so Chromium never looks the target up again (no rebinding).
2. Every connection: the guarded browser context sends all its traffic (documents, subresources,
   redirects, fetch/XHR, WebSockets, loopback included) through this process's SOCKS5 proxy
   (proxy.py). SOCKS5 hands the proxy the *name*; the proxy asks this guard for the checked address
   (`checked_address`) and connects to exactly that address, or refuses. Chromium never resolves
   nor connects on its own, so the address checked is the address connected to. WebRTC, whose UDP
   no proxy carries, is removed from every page and kept off UDP by launch flag (chromium.py).
3. Documents (the navigation, each redirect hop, iframes) are also paused through CDP `Fetch` and
   checked here before Chromium sends them, so a refused redirect fails with the guard's reason
   (`BlockedByClient`) rather than a proxy error.
A host is resolved once per probe (cached), so layers 2 and 3 always agree, even against a DNS
server that answers differently each time (rebinding). The same rules as workers.net.target, applied
to every host a page loads, with a per-probe cache and the probe's own words.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from urllib.parse import urlsplit

from tlsaudit.domain.netguard import parse_ip_literal, refused_kind
from workers.net.errors import INVALID_TARGET, PRIVATE_TARGET, TargetError
from workers.net.target import lookup_addresses, refuse_non_public

_PUBLIC_ONLY = "TLS Audit only probes servers on the public internet."


class AddressGuard:
    """Decides whether a host may be loaded; `refuse(address) -> reason | None` is the address policy."""

    def __init__(self, allow_private: bool = False, ip_map: dict[str, str] | None = None,
                 refuse: Callable = refused_kind, dns_timeout_s: float = 5.0,
                 resolver: tuple[str, int] | None = None):
        self.allow_private = allow_private
        self.ip_map = {k.lower(): v for k, v in (ip_map or {}).items()}
        self.refuse = refuse
        self.dns_timeout_s = dns_timeout_s
        self.resolver = resolver           # (ip, port) of the DNS server to ask; None: getaddrinfo
        self._cache: dict[str, list[str]] = {}
        self._lock = threading.Lock()      # the proxy's thread and the browser's share the cache

    def check_target(self, host: str, pinned_ip: str | None) -> str | None:
        """The address to pin `host` to (None: let Chromium resolve); raises TargetError when refused."""
        if pinned_ip is not None:
            address = parse_ip_literal(pinned_ip)
            if address is None:
                raise TargetError(INVALID_TARGET, f"{pinned_ip!r} is not an IP address.")
            self._refuse_any(host, [str(address)])
            return str(address)
        if self.allow_private:
            return None
        addresses = self.resolve(host)
        self._refuse_any(host, addresses)
        return addresses[0] if parse_ip_literal(host) is None else None

    def blocked_reason(self, url: str) -> str | None:
        """Why a request to `url` must not be sent, or None (resolution failures are left to Chromium)."""
        if self.allow_private:
            return None
        host = (urlsplit(url).hostname or "").lower()
        if not host:
            return None
        try:
            self.checked_address(host)
        except TargetError as exc:
            return exc.message if exc.code == PRIVATE_TARGET else None
        return None

    def checked_address(self, host: str, may_look_up: bool = True) -> str | None:
        """The one address a connection to `host` may go to; TargetError (private_target, dns) otherwise.
        With `may_look_up=False`, None when that would need a DNS lookup (not pinned, cached or literal)."""
        addresses = self.resolve(host, may_look_up)
        if addresses is None:
            return None
        self._refuse_any(normal_host(host), addresses)
        return addresses[0]

    def resolve(self, host: str, may_look_up: bool = True) -> list[str] | None:
        host = normal_host(host)
        if host in self.ip_map:
            return [self.ip_map[host]]
        literal = parse_ip_literal(host)
        if literal is not None:
            return [str(literal)]
        with self._lock:  # once per probe: every later check and connection uses this answer
            if host not in self._cache:
                if not may_look_up:
                    return None
                self._cache[host] = lookup(host, self.dns_timeout_s, self.resolver)
            return self._cache[host]

    def _refuse_any(self, host: str, addresses: list[str]) -> None:
        refuse_non_public(host, addresses, self.allow_private, self.refuse, _PUBLIC_ONLY)


def normal_host(host: str) -> str:
    """Lower case, no brackets, no trailing dot: "LOCALHOST." and "127.0.0.1." are what they name."""
    return host.lower().strip("[]").rstrip(".")


def lookup(host: str, timeout_s: float, resolver: tuple[str, int] | None = None) -> list[str]:
    """The scan's lookup (workers.net.target): IPv4 first, a deadline, localhost is loopback, and
    .invalid/.onion names are never asked of the DNS."""
    return lookup_addresses(host, 443, timeout_s, resolver)
