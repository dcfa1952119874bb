"""Requests this service makes on its own (webhooks, ACME Renewal Information): the SSRF guard and the
connection to the one address it checked.

The name is resolved once here; the connection goes to that IP while the Host header and the TLS SNI
keep the hostname, so a DNS answer that changes between check and connect is ignored. Redirects are
never followed: a redirect is an answer like any other.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from tlsaudit.domain.netguard import parse_ip_literal, refused_kind
from workers.net.errors import TargetError
from workers.net.target import lookup_addresses

TIMEOUT_S = 10.0


class UnsafeURL(ValueError):
    """The URL may not be called; the message says why, for a form error or a recorded failure."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    ip: str
    path: str


@dataclass(frozen=True)
class Fetched:
    status: int | None        # None when no HTTP answer came back
    body: bytes
    headers: dict[str, str]
    error: str                # "" for an HTTP answer, else what went wrong, in words
    duration_ms: int


def check_url(url: str, purpose: str, timeout_s: float = TIMEOUT_S) -> Target:
    """Parse, resolve and guard `url`; raises UnsafeURL with a reason in plain words. `purpose` names the
    requests in the message ("webhooks only go to public addresses")."""
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
    ip = resolve_checked(host, port, purpose, timeout_s)
    return Target(parts.scheme, host, port, ip, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))


def resolve_checked(host: str, port: int, purpose: str, timeout_s: float = TIMEOUT_S) -> str:
    """The first address of `host`, after checking every address is public (unless allowed)."""
    literal = parse_ip_literal(host)
    addresses = [str(literal)] if literal is not None else lookup(host, port, timeout_s)
    if not settings.ALLOW_PRIVATE_TARGETS:
        for address in addresses:
            kind = refused_kind(parse_ip_literal(address))
            if kind:
                where = f"{address} is" if literal is not None else f"{host} points to {address},"
                raise UnsafeURL(f"{where} {kind}: {purpose} only go to public addresses.")
    return addresses[0]


def lookup(host: str, port: int, timeout_s: float = TIMEOUT_S) -> list[str]:
    """Every address of `host`, IPv4 first, the way scans resolve (settings.DNS_RESOLVER when set,
    localhost always loopback), with a deadline."""
    try:
        return lookup_addresses(host.lower(), port, timeout_s, settings.DNS_RESOLVER)
    except TargetError:
        raise UnsafeURL(f"{host} does not resolve.") from None


def connection(target: Target, timeout_s: float = TIMEOUT_S) -> http.client.HTTPConnection:
    if target.scheme == "https":
        conn = http.client.HTTPSConnection(target.host, target.port, timeout=timeout_s,
                                           context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(target.host, target.port, timeout=timeout_s)
    # Connect to the checked IP; http.client keeps the hostname for Host and SNI.
    conn._create_connection = lambda address, *args, **kwargs: socket.create_connection(
        (target.ip, address[1]), *args, **kwargs)
    return conn


def get(url: str, purpose: str, *, max_bytes: int, timeout_s: float = TIMEOUT_S, user_agent: str) -> Fetched:
    """GET `url` once through the guard; never raises: the Fetched says what happened. Everything, the name
    lookup and the connect included, ends within about `timeout_s` (a server that drips its answer a byte
    at a time is cut off by a watchdog), and a body longer than `max_bytes` is an error, not a truncation."""
    started = time.monotonic()

    def left() -> float:
        return max(0.1, timeout_s - (time.monotonic() - started))

    try:
        target = check_url(url, purpose, timeout_s)
    except UnsafeURL as exc:
        return Fetched(None, b"", {}, str(exc), _ms(started))
    conn = connection(target, left())
    cut = threading.Event()
    try:
        conn.connect()                      # bounded by the socket timeout: what is left of the deadline
        watchdog = threading.Timer(left(), _cut, args=(conn.sock, cut))
        watchdog.start()
        try:
            conn.request("GET", target.path, headers={"User-Agent": user_agent, "Accept": "application/json"})
            answer = conn.getresponse()
            body = answer.read(max_bytes + 1)
            headers = {k.lower(): v for k, v in answer.getheaders()}
        finally:
            watchdog.cancel()
    except Exception as exc:  # noqa: BLE001 — OSError, HTTPException, and what an SSL socket shut under a read raises
        if isinstance(exc, TimeoutError) or cut.is_set():
            return Fetched(None, b"", {}, f"no complete answer within {timeout_s:g} s", _ms(started))
        return Fetched(None, b"", {}, f"{type(exc).__name__}: {exc}", _ms(started))
    finally:
        conn.close()
    if cut.is_set():       # the deadline cut a body short: what arrived is not the answer
        return Fetched(None, b"", {}, f"no complete answer within {timeout_s:g} s", _ms(started))
    if len(body) > max_bytes:
        return Fetched(answer.status, b"", headers, f"the answer is larger than {max_bytes} bytes", _ms(started))
    return Fetched(answer.status, body, headers, "", _ms(started))


def _cut(sock: socket.socket, cut: threading.Event) -> None:
    """The deadline: a blocked read returns at once. The raw socket's shutdown, not SSLSocket's (which would
    unwrap the TLS object under the reading thread)."""
    cut.set()
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
