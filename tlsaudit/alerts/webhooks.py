"""Webhook delivery at the network edge: check the URL (SSRF guard), sign the body, POST it
to the one address the guard checked.

The name is resolved once here; the connection goes to that IP while the Host header and the
TLS SNI keep the hostname, so a DNS answer that changes between check and connect is ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from tlsaudit.core import outbound
from tlsaudit.core.outbound import TIMEOUT_S, Target, UnsafeURL  # noqa: F401 (the webhook form's error)

MAX_RESPONSE_BYTES = 64 * 1024
SIGNATURE_HEADER = "X-TLSAudit-Signature"
TIMESTAMP_HEADER = "X-TLSAudit-Timestamp"


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
    return outbound.check_url(url, "webhooks")


def same_receiver(url: str, other: str) -> bool:
    """Whether two webhook URLs reach the same endpoint: the scheme and host compared without case, a
    default port as none, a trailing slash on an empty path as none; the path and query as written."""
    return receiver_key(url) == receiver_key(other)


def receiver_key(url: str) -> tuple:
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:   # not a number: compared as written
        port = parts.netloc.rpartition(":")[2]
    return scheme, host, port, parts.path or "/", parts.query


DEFAULT_PORTS = {"https": 443, "http": 80}


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(url: str, body: bytes, secret: str, timestamp: int) -> Response:
    """POST `body` once; never raises for network trouble, the Response says what happened."""
    started = time.monotonic()
    try:
        target = check_url(url)
    except UnsafeURL as exc:
        return Response(None, str(exc), 0, transient=False)
    connection = outbound.connection(target)
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


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
