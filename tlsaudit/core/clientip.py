"""The client's IP address, the one place every rate limit, lockout and audit-log entry takes it from."""

import ipaddress

from django.conf import settings


def client_ip(request) -> str | None:
    """REMOTE_ADDR, or behind our own TLS proxy the hop that proxy appended to X-Forwarded-For.

    Only the right-most X-Forwarded-For entry is trusted: the proxy appends the address it saw,
    anything to its left was written by the client and would let an attacker dodge lockouts.
    """
    if request is None:
        return None
    addr = request.META.get("REMOTE_ADDR", "")
    if settings.SECURE_PROXY_SSL_HEADER:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            addr = forwarded.split(",")[-1].strip()
    return valid_ip(addr)


def valid_ip(addr: str) -> str | None:
    try:
        return str(ipaddress.ip_address(addr))
    except ValueError:
        return None
