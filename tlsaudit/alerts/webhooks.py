"""Webhook delivery at the network edge: check the URL (SSRF guard), sign the body, POST it
to the one address the guard checked.

The name is resolved once here; the connection goes to that IP while the Host header and the
TLS SNI keep the hostname, so a DNS answer that changes between check and connect is ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from tlsaudit.domain.netguard import parse_ip_literal, refused_kind
from workers.net.errors import TargetError
from workers.net.target import lookup_addresses

TIMEOUT_S = 10.0
MAX_RESPONSE_BYTES = 64 * 1024
SIGNATURE_HEADER = "X-TLSAudit-Signature"
TIMESTAMP_HEADER = "X-TLSAudit-Timestamp"


class UnsafeURL(ValueError):
    """The URL may not be called; the message says why, for a form error."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    ip: str
    path: str


@dataclass(frozen=True)
class Response:
    status: int | None      # None when no HTTP answer came back
    error: str
    duration_ms: int
    transient: bool = True  # False when the URL itself is refused: retrying cannot help

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        """5xx, timeouts and connection errors may pass on a later attempt; 4xx will not."""
        return self.transient and (self.status is None or self.status >= 500)


def check_url(url: str) -> Target:
    """Parse, resolve and guard a webhook URL; raises UnsafeURL with a reason in plain words."""
    parts = urlsplit(url.strip())
    allowed = ("https", "http") if settings.DEV_MODE else ("https",)
    if parts.scheme not in allowed:
        raise UnsafeURL("Use an https:// URL." if parts.scheme == "http" else "Enter an https:// URL.")
    host = (parts.hostname or "").rstrip(".")    # "localhost." and "127.0.0.1." are judged as what they name
    if not host or parts.username or parts.password:
        raise UnsafeURL("Enter a URL with a host name and no user name or password.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise UnsafeURL("The port is not a number between 1 and 65535.") from None
    ip = resolve_checked(host, port)
    return Target(parts.scheme, host, port, ip, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))


def resolve_checked(host: str, port: int) -> str:
    """The first address of `host`, after checking every address is public (unless allowed)."""
    literal = parse_ip_literal(host)
    addresses = [str(literal)] if literal is not None else lookup(host, port)
    if not settings.ALLOW_PRIVATE_TARGETS:
        for address in addresses:
            kind = refused_kind(parse_ip_literal(address))
            if kind:
                where = f"{address} is" if literal is not None else f"{host} points to {address},"
                raise UnsafeURL(f"{where} {kind}: webhooks only go to public addresses.")
    return addresses[0]


def lookup(host: str, port: int) -> list[str]:
    """Every address of `host`, IPv4 first, the way scans resolve (settings.DNS_RESOLVER when set,
    localhost always loopback), with a deadline."""
    try:
        return lookup_addresses(host.lower(), port, TIMEOUT_S, settings.DNS_RESOLVER)
    except TargetError:
        raise UnsafeURL(f"{host} does not resolve.") from None


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(url: str, body: bytes, secret: str, timestamp: int) -> Response:
    """POST `body` once; never raises for network trouble, the Response says what happened."""
    started = time.monotonic()
    try:
        target = check_url(url)
    except UnsafeURL as exc:
        return Response(None, str(exc), 0, transient=False)
    connection = _connection(target)
    headers = {"Content-Type": "application/json", "User-Agent": "TLSAudit-Webhook/1",
               SIGNATURE_HEADER: sign(body, secret), TIMESTAMP_HEADER: str(timestamp)}
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        answer = connection.getresponse()
        answer.read(MAX_RESPONSE_BYTES)
        return Response(answer.status, "" if 200 <= answer.status < 300 else f"HTTP {answer.status} {answer.reason}",
                        _ms_since(started))
    except TimeoutError:
        return Response(None, f"No answer within {TIMEOUT_S:g} s.", _ms_since(started))
    except (OSError, http.client.HTTPException) as exc:
        return Response(None, f"{type(exc).__name__}: {exc}", _ms_since(started))
    finally:
        connection.close()


def _connection(target: Target) -> http.client.HTTPConnection:
    if target.scheme == "https":
        connection = http.client.HTTPSConnection(target.host, target.port, timeout=TIMEOUT_S,
                                                 context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(target.host, target.port, timeout=TIMEOUT_S)
    # Connect to the checked IP; http.client keeps the hostname for Host and SNI.
    connection._create_connection = lambda address, *args, **kwargs: socket.create_connection(
        (target.ip, address[1]), *args, **kwargs)
    return connection


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
