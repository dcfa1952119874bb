"""Why a browser probe (or one of its page loads) failed, in words a site owner understands: the
probe's own codes, and the classifier that turns Chromium's net errors into the one TargetError
(workers/net/errors.py, where the codes every engine shares live).

Codes are stable (the UI keys on them); messages are for people; `detail` is Chromium's own text.
"""

from __future__ import annotations

import re

from workers.net.errors import (
    CONNECTION_FAILED,
    DNS,
    INVALID_TARGET,
    PRIVATE_TARGET,
    REFUSED,
    TIMEOUT,
    TLS_HANDSHAKE_FAILED,
    TargetError,
)

# Codes only a browser probe meets.
CERTIFICATE = "certificate"
REDIRECT_LOOP = "redirect_loop"
BROWSER = "browser"
CANCELLED = "cancelled"
CUSTOM_CA = "custom_ca"   # the organization's custom CA cannot be loaded as it is: its settings must change

_CERT_REASONS = {
    "ERR_CERT_AUTHORITY_INVALID": "it is issued by a certificate authority the browser does not trust",
    "ERR_CERT_COMMON_NAME_INVALID": "it does not cover {host}",
    "ERR_CERT_DATE_INVALID": "it has expired or is not yet valid",
    "ERR_CERT_REVOKED": "it has been revoked",
    "ERR_CERT_WEAK_KEY": "its key is too weak",
    "ERR_CERT_WEAK_SIGNATURE_ALGORITHM": "it is signed with a weak algorithm",
}
_CONNECTION_FAILURES = ("ERR_CONNECTION_RESET", "ERR_CONNECTION_CLOSED", "ERR_EMPTY_RESPONSE",
                        "ERR_CONNECTION_TIMED_OUT", "ERR_ADDRESS_UNREACHABLE")


def net_error_name(text: str) -> str | None:
    """"ERR_CERT_AUTHORITY_INVALID" out of Playwright's "Page.goto: net::ERR_CERT_AUTHORITY_INVALID at ..."."""
    match = re.search(r"net::(ERR_[A-Z0-9_]+)", text)
    return match.group(1) if match else None


def classify_load_error(text: str, *, host: str, port: int, timeout_s: float, hops: int = 0,
                        blocked: str | None = None) -> TargetError:
    """A TargetError for a page load that raised; `blocked` is the guard's reason when it aborted a request."""
    detail = text.splitlines()[0] if text else ""
    name = net_error_name(text)
    if blocked and name in ("ERR_BLOCKED_BY_CLIENT", "ERR_FAILED", None):
        return TargetError(PRIVATE_TARGET, blocked, detail)
    if name is None and "Timeout" in text:
        return TargetError(TIMEOUT, f"The page did not finish loading within {timeout_s:g} s.", detail)
    if name is None:
        return TargetError(CONNECTION_FAILED, f"The page could not be loaded: {detail}", detail)
    if name.startswith("ERR_CERT_") or name == "ERR_INSECURE_RESPONSE":
        reason = _CERT_REASONS.get(name, name).format(host=host)
        return TargetError(CERTIFICATE, f"The certificate is not trusted ({reason}).", detail)
    if name == "ERR_CONNECTION_REFUSED":
        return TargetError(REFUSED, f"The server refused the connection ({host}:{port}).", detail)
    if name == "ERR_TOO_MANY_REDIRECTS":
        return TargetError(REDIRECT_LOOP, f"The site redirects in a loop: still redirecting after {hops} "
                                          "requests.", detail)
    if name == "ERR_NAME_NOT_RESOLVED":
        return TargetError(DNS, f"The name {host} does not resolve (DNS lookup failed).", detail)
    if name == "ERR_UNSAFE_PORT":
        return TargetError(INVALID_TARGET, f"Browsers refuse to connect to port {port} (a blocked port).", detail)
    if name == "ERR_SSL_UNRECOGNIZED_NAME_ALERT":
        return TargetError(TLS_HANDSHAKE_FAILED, f"The server on {host}:{port} does not serve {host}: it answered the "
                                                 "TLS handshake for this name with the alert 'unrecognized name'.", detail)
    if name == "ERR_SSL_PROTOCOL_ERROR":
        return TargetError(TLS_HANDSHAKE_FAILED, f"The TLS handshake with {host}:{port} failed: the server answered "
                                                 "with something that is not TLS, or broke the handshake off "
                                                 "(ERR_SSL_PROTOCOL_ERROR).", detail)
    if name.startswith("ERR_SSL_"):
        return TargetError(TLS_HANDSHAKE_FAILED, f"The TLS handshake with {host}:{port} failed ({name}).", detail)
    if name == "ERR_NETWORK_CHANGED":
        # Chromium aborts loads when an interface of its own machine comes or goes (seen here when Docker made
        # and removed its bridges beside a probe): the probing host's doing, never the site's.
        return TargetError(CONNECTION_FAILED, "The network of the machine running the probe changed during the "
                                              "load (ERR_NETWORK_CHANGED): not the site's doing; run the probe "
                                              "again.", detail)
    if name in _CONNECTION_FAILURES:
        return TargetError(CONNECTION_FAILED, f"The connection to {host}:{port} failed ({name}).", detail)
    return TargetError(CONNECTION_FAILED, f"The page could not be loaded ({name}).", detail)
