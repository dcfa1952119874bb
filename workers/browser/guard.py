"""SSRF guard for the browser probe: which hosts Chromium may load documents from.

Chromium resolves names itself, so the guard works in two layers:
1. Before launch: the target is resolved here (or its pinned IP taken), every address checked
   with `tlsaudit.domain.netguard`, and the checked address pinned with
   `--host-resolver-rules=MAP host ip`, so Chromium never looks the target up again (no rebinding).
2. During loads: every *document* request (the navigation, each redirect hop, iframes) is paused
   through CDP `Fetch` and its host resolved the way Chromium will (the same MAP rules first, then
   getaddrinfo); a refused address fails the request (`BlockedByClient`) before any connection.
Limits (see docs): subresources (images, scripts...) are not paused, because each pause costs a
round trip to this process that would land in the measured timings; and a redirect host is resolved
twice (here, then by Chromium), so a rebinding DNS server with a zero TTL could still win that race.
The same rules as workers.tls.target, re-implemented here because engines import only `domain`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

from tlsaudit.domain.netguard import parse_ip_literal, refused_kind
from workers.browser.errors import DNS, INVALID_TARGET, PRIVATE_TARGET, ProbeError

_PUBLIC_ONLY = "TLS Audit only probes servers on the public internet."


class AddressGuard:
    """Decides whether a host may be loaded; `refuse(address) -> reason | None` is the address policy."""

    def __init__(self, allow_private: bool = False, ip_map: dict[str, str] | None = None,
                 refuse: Callable = refused_kind, dns_timeout_s: float = 5.0):
        self.allow_private = allow_private
        self.ip_map = {k.lower(): v for k, v in (ip_map or {}).items()}
        self.refuse = refuse
        self.dns_timeout_s = dns_timeout_s
        self._cache: dict[str, list[str]] = {}

    def check_target(self, host: str, pinned_ip: str | None) -> str | None:
        """The address to pin `host` to (None: let Chromium resolve); raises ProbeError when refused."""
        if pinned_ip is not None:
            address = parse_ip_literal(pinned_ip)
            if address is None:
                raise ProbeError(INVALID_TARGET, f"{pinned_ip!r} is not an IP address.")
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
            self._refuse_any(host, self.resolve(host))
        except ProbeError as exc:
            return exc.message if exc.code == PRIVATE_TARGET else None
        return None

    def resolve(self, host: str) -> list[str]:
        host = host.lower().strip("[]")
        if host in self.ip_map:
            return [self.ip_map[host]]
        literal = parse_ip_literal(host)
        if literal is not None:
            return [str(literal)]
        if host not in self._cache:
            self._cache[host] = lookup(host, self.dns_timeout_s)
        return self._cache[host]

    def _refuse_any(self, host: str, addresses: list[str]) -> None:
        if self.allow_private:
            return
        for address in addresses:
            kind = self.refuse(parse_ip_literal(address))
            if kind:
                where = address if host == address else f"{host} resolves to {address}, which"
                raise ProbeError(PRIVATE_TARGET, f"{where} is {kind}. {_PUBLIC_ONLY}")


def lookup(host: str, timeout_s: float) -> list[str]:
    """getaddrinfo with a deadline (in a daemon thread: the C call cannot be interrupted), IPv4 first."""
    box: dict = {}

    def run() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name=f"resolve-{host}")
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise ProbeError(DNS, f"The DNS lookup for {host} did not answer within {timeout_s:g} s.")
    if "error" in box:
        raise ProbeError(DNS, f"The name {host} does not resolve (DNS lookup failed).", str(box["error"]))
    addresses = []
    for family in (socket.AF_INET, socket.AF_INET6):
        for info_family, _, _, _, sockaddr in box["infos"]:
            address = sockaddr[0].split("%", 1)[0]
            if info_family == family and address not in addresses:
                addresses.append(address)
    if not addresses:
        raise ProbeError(DNS, f"The name {host} has no IPv4 or IPv6 address.")
    return addresses
