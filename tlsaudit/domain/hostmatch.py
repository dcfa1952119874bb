"""Does a certificate's subjectAltName cover a hostname? Browser rules, strings only.

sslyze 6 has no hostname-match boolean (the mismatch hides in each store's validation
error text), so we decide it ourselves: exact DNS names, a wildcard covering exactly one
left-most label, IP addresses against IP SANs only, and no fallback to the subject CN.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable


def hostname_matches(hostname: str, san_dns: Iterable[str], san_ip: Iterable[str] = ()) -> bool:
    ip = _as_ip(hostname)
    if ip is not None:
        return any(_as_ip(candidate) == ip for candidate in san_ip)
    name = _normalise(hostname)
    return any(_dns_pattern_matches(_normalise(pattern), name) for pattern in san_dns)


def _dns_pattern_matches(pattern: str, name: str) -> bool:
    if not pattern or not name:
        return False
    if pattern == name:
        return True
    if not pattern.startswith("*."):
        return False                        # partial wildcards like "w*.example.com" are not honoured
    suffix = pattern[2:]
    if "*" in suffix or suffix.count(".") < 1:
        return False                        # "*.com" would cover a whole TLD
    label, _, rest = name.partition(".")
    return bool(label) and rest == suffix


def _normalise(name: str) -> str:
    name = name.strip().lower().rstrip(".")
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


def _as_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
