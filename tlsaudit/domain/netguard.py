"""SSRF guard: which addresses a scan must never connect to, and why, in plain words.

Pure: no sockets, no DNS. The scan engine resolves names itself and asks `refusal_reason`
about every address it got; a host typed as a number (``2130706433``, ``0x7f.1``) is parsed
with `parse_ip_literal` so it is judged as the address the C resolver would turn it into.
"""

from __future__ import annotations

import ipaddress
import re
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

# Set to "1" (settings/tests only) to let scans reach private and loopback addresses.
ALLOW_PRIVATE_ENV = "TLSAUDIT_ALLOW_PRIVATE_TARGETS"

IPAddress = IPv4Address | IPv6Address

# Order matters: the first match gives the reason, so specific ranges come before broad ones.
_V4_RANGES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/32", "the unspecified address 0.0.0.0"),
    ("0.0.0.0/8", "the reserved 'this network' range 0.0.0.0/8"),
    ("127.0.0.0/8", "a loopback address (this machine)"),
    ("10.0.0.0/8", "a private address (RFC 1918)"),
    ("172.16.0.0/12", "a private address (RFC 1918)"),
    ("192.168.0.0/16", "a private address (RFC 1918)"),
    ("169.254.169.254/32", "the cloud metadata address 169.254.169.254"),
    ("169.254.0.0/16", "a link-local address"),
    ("100.64.0.0/10", "a carrier-grade NAT address (RFC 6598)"),
    ("192.0.0.0/24", "an IETF protocol assignment address"),
    ("192.0.2.0/24", "a documentation address (TEST-NET-1)"),
    ("198.51.100.0/24", "a documentation address (TEST-NET-2)"),
    ("203.0.113.0/24", "a documentation address (TEST-NET-3)"),
    ("198.18.0.0/15", "a benchmarking address (RFC 2544)"),
    ("224.0.0.0/4", "a multicast address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
)

_V6_RANGES: tuple[tuple[str, str], ...] = (
    ("::/128", "the unspecified address ::"),
    ("::1/128", "a loopback address (this machine)"),
    ("fc00::/7", "a private address (unique local, fc00::/7)"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a deprecated site-local address"),
    ("ff00::/8", "a multicast address"),
    ("2001:db8::/32", "a documentation address (2001:db8::/32)"),
    ("3fff::/20", "a documentation address (3fff::/20)"),
    ("2001:2::/48", "a benchmarking address (RFC 5180)"),
    ("100::/64", "a discard-only address (RFC 6666)"),
)

_V4_NETS = tuple((IPv4Network(net), why) for net, why in _V4_RANGES)
_V6_NETS = tuple((IPv6Network(net), why) for net, why in _V6_RANGES)

_NAT64_PREFIXES = (IPv6Network("64:ff9b::/96"), IPv6Network("64:ff9b:1::/48"))
_V4_COMPATIBLE = IPv6Network("::/96")


def refusal_reason(ip: str | IPAddress) -> str | None:
    """Why a scan must not connect to `ip`, or None when it is a public address.

    Text that is not an address at all is refused too: the caller should have resolved it.
    """
    address = parse_ip_literal(ip) if isinstance(ip, str) else ip
    if address is None:
        return f"{ip!r} is not an IP address."
    kind = refused_kind(address)
    return f"{address} is {kind}." if kind else None


def refused_kind(address: IPAddress) -> str | None:
    """What kind of non-public address this is ("a loopback address (this machine)"), or None."""
    return _reason_for(address)


def is_refused(ip: str | IPAddress) -> bool:
    return refusal_reason(ip) is not None


def parse_ip_literal(text: str) -> IPAddress | None:
    """The address `text` denotes, or None when it is a name rather than a number.

    Besides the usual dotted quad and IPv6 forms, accepts what the C library's inet_aton
    accepts (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``), because getaddrinfo
    turns such a "hostname" into that address without asking DNS.
    """
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.split("%", 1)[0]            # drop an IPv6 zone id ("fe80::1%eth0")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    return _parse_inet_aton(text)


def _reason_for(address: IPAddress) -> str | None:
    if isinstance(address, IPv4Address):
        return _reason_for_v4(address)
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        inner = _reason_for_v4(embedded)
        return f"an IPv6 form of {embedded}, which is {inner}" if inner else None
    return _reason_for_v6(address)


def _reason_for_v4(address: IPv4Address) -> str | None:
    for network, why in _V4_NETS:
        if address in network:
            return why
    # Catch-all for any special-purpose range the table does not name.
    return None if address.is_global else "not a public internet address"


def _reason_for_v6(address: IPv6Address) -> str | None:
    for network, why in _V6_NETS:
        if address in network:
            return why
    return None if address.is_global else "not a public internet address"


def _embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address carries and that a dual-stack host might reach."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    for prefix in _NAT64_PREFIXES:
        if address in prefix:
            return IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _V4_COMPATIBLE and int(address) > 1:   # ::a.b.c.d, but not :: or ::1
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _parse_inet_aton(text: str) -> IPv4Address | None:
    """inet_aton's grammar: 1-4 dot-separated numbers; the last one fills the remaining bytes.

    Trailing text ("127.0.0.1 x") is rejected, as getaddrinfo's exact variant does."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_parse_aton_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = numbers
    if any(n > 0xFF for n in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    value = 0
    for n in head:
        value = value << 8 | n
    value = value << (8 * (4 - len(head))) | last
    return IPv4Address(value)


def _parse_aton_number(part: str) -> int | None:
    lowered = part.lower()
    if re.fullmatch(r"0x[0-9a-f]+", lowered):
        return int(lowered[2:], 16)
    if re.fullmatch(r"0[0-7]+", lowered):
        return int(lowered, 8)
    if re.fullmatch(r"[0-9]+", lowered) and not lowered.startswith("0") or lowered == "0":
        return int(lowered)
    return None
