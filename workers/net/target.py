"""Resolve a scan target ourselves and pin one address (SSRF and DNS-rebinding guard).

sslyze would resolve the name inside `ServerNetworkLocation` with no timeout and no
checks; we resolve here, refuse if ANY address is non-public, and hand sslyze and our
probes the one checked address, so nothing ever looks the name up a second time. The web apps
apply the same guard to a new site, a webhook URL and a proof-of-control fetch.

`resolver` (settings.DNS_RESOLVER, an (ip, port) pair) asks that DNS server directly for A and
AAAA records instead of the system's getaddrinfo; tests point it at a local DNS server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tlsaudit.domain.netguard import parse_ip_literal, refused_kind
from workers.net.errors import DNS, INVALID_TARGET, PRIVATE_TARGET, TargetError
from workers.net.resolve import Unresolved, resolve

_PUBLIC_ONLY = "TLS Audit only scans servers on the public internet."
# RFC 6761 / RFC 7686: names under these never resolve, so answer at once instead of asking DNS.
_NEVER_RESOLVE = (".invalid", ".onion")
# RFC 6761 6.3: localhost and its subdomains are loopback, whatever a DNS server would answer.
LOCALHOST_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class ResolvedTarget:
    host: str                   # ASCII (punycode) name used for SNI and certificate matching
    port: int
    ip: str                     # the address every connection goes to
    all_ips: tuple[str, ...]    # everything the name resolved to, IPv4 first


def resolve_target(
    host: str,
    port: int,
    pinned_ip: str | None = None,
    allow_private: bool = False,
    timeout: float = 5.0,
    resolver: tuple[str, int] | None = None,
) -> ResolvedTarget:
    name = normalise_host(host)
    check_port(port)
    if pinned_ip is not None:
        ip = _require_ip_literal(pinned_ip)
        refuse_non_public(name, [ip], allow_private)
        return ResolvedTarget(name, port, ip, (ip,))
    literal = parse_ip_literal(name)
    if literal is not None:
        ip = str(literal)
        refuse_non_public(ip, [ip], allow_private)
        return ResolvedTarget(ip, port, ip, (ip,))
    addresses = lookup_addresses(name, port, timeout, resolver)
    refuse_non_public(name, addresses, allow_private)
    return ResolvedTarget(name, port, addresses[0], tuple(addresses))


def normalise_host(host: str) -> str:
    """Lower-case ASCII form of a hostname (IDNA), without brackets or a trailing dot."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if not name or any(c.isspace() or c in "/?#@" for c in name):
        raise TargetError(INVALID_TARGET, f"{host!r} is not a hostname.")
    if ":" in name:
        return name                             # an IPv6 literal, IDNA does not apply
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise TargetError(INVALID_TARGET, f"{host!r} is not a valid hostname.", str(exc)) from exc


def check_port(port: int) -> None:
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise TargetError(INVALID_TARGET, f"{port!r} is not a TCP port (1-65535).")


def lookup_addresses(name: str, port: int, timeout: float, resolver: tuple[str, int] | None = None) -> list[str]:
    """getaddrinfo with a deadline: run it in a daemon thread, since the C call cannot be interrupted."""
    if f".{name}".endswith(_NEVER_RESOLVE):
        raise TargetError(DNS, f"The name {name} does not resolve: names under .invalid and .onion are never "
                               "looked up in the DNS.", "special-use name (RFC 6761/7686)")
    if f".{name}".endswith(".localhost"):
        return list(LOCALHOST_ADDRESSES)
    try:
        return resolve(name, timeout, resolver, port)
    except Unresolved as exc:
        raise TargetError(DNS, exc.message, exc.detail) from None


def _require_ip_literal(text: str) -> str:
    address = parse_ip_literal(text)
    if address is None:
        raise TargetError(INVALID_TARGET, f"{text!r} is not an IP address.")
    return str(address)


def refuse_non_public(name: str, addresses: list[str], allow_private: bool, refuse: Callable = refused_kind,
                      public_only: str = _PUBLIC_ONLY) -> None:
    """A name with one public and one private address is refused: we cannot know which one a client gets.
    `refuse` names the kind of a refused address (tests of the browser guard pass their own);
    `public_only` ends the message in the caller's words (a scan, a probe)."""
    if allow_private:
        return
    for address in addresses:
        kind = refuse(parse_ip_literal(address))
        if kind is None:
            continue
        if name == address:
            message = f"{address} is {kind}. {public_only}"
        else:
            message = f"{name} resolves to {address}, which is {kind}. {public_only}"
        raise TargetError(PRIVATE_TARGET, message, f"addresses: {', '.join(addresses)}")
