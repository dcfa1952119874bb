"""SSRF guard: the addresses a scan may connect to (an allow-list), and why any other is refused,
in plain words.

Pure: no sockets, no DNS. The scan engine resolves names itself and asks `refusal_reason`
about every address it got; a host typed as a number (``2130706433``, ``0x7f.1``) is parsed
with `parse_ip_literal` so it is judged as the address the C resolver would turn it into.

Allowed, and nothing else:
1. IPv4 outside every special-purpose range of the IANA registry (private, loopback, shared,
   documentation, multicast, reserved, ...), and global by Python's reckoning too.
2. IPv6 global unicast (2000::/3) outside its special-purpose ranges, whose interface id does not
   name a non-public IPv4 address (ISATAP), and 6to4 (2002::/16) only around a public IPv4 address.
3. Outside 2000::/3, only the two IPv6 spellings of a public IPv4 address that a dual-stack host or
   an IPv6-only network really uses: IPv4-mapped (``::ffff:8.8.8.8``) and NAT64's well-known prefix
   (``64:ff9b::808:808``, which RFC 6052 keeps for global IPv4 addresses).
Every other form that carries an IPv4 address (IPv4-compatible, IPv4-translated, local-use NAT64,
Teredo) is refused whatever it carries; the reason names the carried address when it is not public.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

# Set to "1" (settings/tests only) to let scans reach private and loopback addresses.
ALLOW_PRIVATE_ENV = "TLSAUDIT_ALLOW_PRIVATE_TARGETS"

IPAddress = IPv4Address | IPv6Address

# The IANA IPv4 special-purpose registry, plus multicast and the deprecated 6to4 relay anycast.
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
    ("192.0.0.0/24", "an IETF protocol assignment address (192.0.0.0/24)"),
    ("192.0.2.0/24", "a documentation address (TEST-NET-1)"),
    ("198.51.100.0/24", "a documentation address (TEST-NET-2)"),
    ("203.0.113.0/24", "a documentation address (TEST-NET-3)"),
    ("198.18.0.0/15", "a benchmarking address (RFC 2544)"),
    ("192.88.99.0/24", "a deprecated 6to4 relay anycast address (192.88.99.0/24)"),
    ("224.0.0.0/4", "a multicast address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
)

_GLOBAL_UNICAST = IPv6Network("2000::/3")

# Special-purpose ranges inside 2000::/3 (IANA IPv6 special-purpose registry). Teredo and 6to4
# carry IPv4 addresses and are judged in `_EMBEDDINGS` first.
_V6_GLOBAL_RANGES: tuple[tuple[str, str], ...] = (
    ("2001:db8::/32", "a documentation address (2001:db8::/32)"),
    ("2001:2::/48", "a benchmarking address (RFC 5180)"),
    ("2001::/23", "an IETF protocol assignment address (2001::/23)"),
    ("3fff::/20", "a documentation address (3fff::/20)"),
)

# Named ranges outside 2000::/3 (everything there is refused; these only give a better reason).
_V6_OTHER_RANGES: tuple[tuple[str, str], ...] = (
    ("::/128", "the unspecified address ::"),
    ("::1/128", "a loopback address (this machine)"),
    ("fc00::/7", "a private address (unique local, fc00::/7)"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a deprecated site-local address"),
    ("ff00::/8", "a multicast address"),
    ("100::/64", "a discard-only address (RFC 6666)"),
    ("100:0:0:1::/64", "a dummy-prefix address (100:0:0:1::/64)"),
)

_V4_NETS = tuple((IPv4Network(net), why) for net, why in _V4_RANGES)
_V6_GLOBAL_NETS = tuple((IPv6Network(net), why) for net, why in _V6_GLOBAL_RANGES)
_V6_OTHER_NETS = tuple((IPv6Network(net), why) for net, why in _V6_OTHER_RANGES)


@dataclass(frozen=True)
class _Embedding:
    """An IPv6 form that carries IPv4 addresses: where they sit, and whether a public one may pass."""
    network: IPv6Network
    name: str
    carried: Callable[[IPv6Address], tuple[tuple[str, IPv4Address], ...]]   # (role, address) pairs
    refused_anyway: str | None = None   # the reason when every carried address is public


def _low32(address: IPv6Address) -> tuple[tuple[str, IPv4Address], ...]:
    return (("", IPv4Address(int(address) & 0xFFFFFFFF)),)


def _sixtofour(address: IPv6Address) -> tuple[tuple[str, IPv4Address], ...]:
    return (("", address.sixtofour),)


def _teredo(address: IPv6Address) -> tuple[tuple[str, IPv4Address], ...]:
    server, client = address.teredo      # the client address is stored inverted ("obfuscated")
    return (("client", client), ("server", server))


# None of these overlap; ::/96 also holds :: and ::1, which _reason_for_v6 names before.
_EMBEDDINGS = (
    _Embedding(IPv6Network("::ffff:0:0/96"), "IPv4-mapped", _low32),
    _Embedding(IPv6Network("64:ff9b::/96"), "NAT64", _low32),
    _Embedding(IPv6Network("::ffff:0:0:0/96"), "IPv4-translated", _low32,
               "a deprecated IPv4-translated address (::ffff:0:0:0/96), not a public server's"),
    _Embedding(IPv6Network("::/96"), "IPv4-compatible", _low32,
               "a deprecated IPv4-compatible address (::/96), not a public server's"),
    # The operator picks where the IPv4 address sits (/48 to /96), so no reading of it can be trusted.
    _Embedding(IPv6Network("64:ff9b:1::/48"), "local-use NAT64", lambda address: (),
               "a local-use NAT64 address (64:ff9b:1::/48), which can carry any IPv4 address of a private network"),
    _Embedding(IPv6Network("2001::/32"), "Teredo", _teredo,
               "a Teredo tunnel address (2001::/32), not a public server's"),
    _Embedding(IPv6Network("2002::/16"), "6to4", _sixtofour),
)


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
    if isinstance(address, IPv4Address):
        return _reason_for_v4(address)
    return _reason_for_v6(address)


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


def _reason_for_v4(address: IPv4Address) -> str | None:
    for network, why in _V4_NETS:
        if address in network:
            return why
    # Belt and braces: a special-purpose range the table does not name.
    return None if address.is_global else "not a public internet address"


def _reason_for_v6(address: IPv6Address) -> str | None:
    """1. named ranges outside 2000::/3 (::, ::1, ...); 2. forms that carry IPv4 addresses;
    3. anything else outside 2000::/3; 4. special ranges inside it; 5. ISATAP interface ids."""
    for network, why in _V6_OTHER_NETS:
        if address in network:
            return why
    for form in _EMBEDDINGS:
        if address in form.network:
            why = _reason_for_embedding(form, address)
            if why is not None or address not in _GLOBAL_UNICAST:
                return why
            break                               # 6to4 around a public address: still global unicast
    if address not in _GLOBAL_UNICAST:
        return "not a global unicast address (outside 2000::/3)"
    for network, why in _V6_GLOBAL_NETS:
        if address in network:
            return why
    isatap = _isatap_ipv4(address)
    if isatap is not None and (inner := _reason_for_v4(isatap)):
        return f"an IPv6 form of {isatap} (ISATAP interface id), which is {inner}"
    return None if address.is_global else "not a public internet address"


def _reason_for_embedding(form: _Embedding, address: IPv6Address) -> str | None:
    for role, carried in form.carried(address):
        inner = _reason_for_v4(carried)
        if inner:
            where = f"{form.name} {role}" if role else form.name
            return f"an IPv6 form of {carried} ({where}), which is {inner}"
    return form.refused_anyway


def _isatap_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address in an ISATAP interface id (``::0:5efe:a.b.c.d``, u/g bits either way, RFC 5214),
    which an ISATAP router forwards to over IPv4."""
    value = int(address)
    if (value >> 32) & 0xFCFFFFFF == 0x00005EFE:
        return IPv4Address(value & 0xFFFFFFFF)
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
