"""Why a scan could not run, in words a site owner understands.

`TargetError.code` is stable (the UI and the retry policy key on it), `.message` is for
people, `.detail` is the technical trace for support.
"""

from __future__ import annotations

# Codes, for callers that branch on them.
INVALID_TARGET = "invalid_target"
DNS = "dns"
PRIVATE_TARGET = "private_target"
REFUSED = "refused"
TIMEOUT = "timeout"
NO_TLS = "no_tls"
TLS_HANDSHAKE_FAILED = "tls_handshake_failed"
SSLV2_ONLY = "sslv2_only"
STARTTLS_REJECTED = "starttls_rejected"
CONNECTION_FAILED = "connection_failed"

# Worth retrying later: the network or the server may behave differently next time.
TRANSIENT_CODES = frozenset({DNS, TIMEOUT, CONNECTION_FAILED})

# What our own wire diagnosis saw (see probes.diagnose_wire).
WIRE_SILENT = "silent"      # connected, the server never sent a byte
WIRE_HTTP = "http"          # answered our bytes with plain HTTP
WIRE_TLS = "tls"            # answered with a TLS record (alert or handshake)
WIRE_OTHER = "other"        # answered with something else (SSH banner, SMTP greeting...)
WIRE_CLOSED = "closed"      # closed the connection without a byte
WIRE_REFUSED = "refused"
WIRE_UNREACHABLE = "unreachable"


class TargetError(Exception):
    def __init__(self, code: str, message: str, detail: str = ""):
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "detail": self.detail}

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES

    def __repr__(self) -> str:
        return f"TargetError({self.code!r}, {self.message!r})"


def classify_connectivity_error(
    exc_type: str,
    error_message: str,
    *,
    ip: str,
    port: int,
    timeout: float,
    wire: str | None = None,
) -> TargetError:
    """Map sslyze's connectivity failure (exception class name + message) to a TargetError.

    sslyze reports a plain-HTTP port and a silent "black hole" the same way
    (ServerTlsConfigurationNotSupported, "TLS probing failed"), so `wire` — what our own
    raw-socket diagnosis saw — decides between no_tls, timeout and a real handshake failure.
    """
    detail = f"{exc_type}: {error_message}"
    where = _where(ip, port)
    if exc_type == "ServerRejectedConnection" or wire == WIRE_REFUSED:
        return TargetError(REFUSED, f"Port {port} on {ip} refused the connection: nothing is listening there.", detail)
    if wire == WIRE_SILENT:
        return TargetError(TIMEOUT, f"No answer from {where} within {timeout:g} s: the port accepts connections "
                                    "but never answers the TLS handshake (the service is hung, or it waits for "
                                    "a protocol other than TLS).", detail)
    if exc_type == "ConnectionToServerTimedOut":
        return TargetError(TIMEOUT, _timeout_message(where, timeout), detail)
    if exc_type == "ServerRejectedOpportunisticTlsNegotiation":
        return TargetError(STARTTLS_REJECTED, f"The server on {where} refused to start TLS (STARTTLS).", detail)
    if "SSL 2.0" in error_message:
        return TargetError(SSLV2_ONLY, f"The server on port {port} only speaks SSL 2.0, which is broken and "
                                       "no browser supports; it must be upgraded.", detail)
    if exc_type in ("ServerTlsConfigurationNotSupported", "ServerRejectedTlsHandshake", "TlsHandshakeTimedOut"):
        return _classify_handshake_failure(port, where, wire, detail)
    if wire == WIRE_UNREACHABLE:
        return TargetError(CONNECTION_FAILED, f"{where} is unreachable from our scanner (no route to it).", detail)
    return TargetError(CONNECTION_FAILED, f"The connection to {where} failed.", detail)


def _classify_handshake_failure(port: int, where: str, wire: str | None, detail: str) -> TargetError:
    if wire == WIRE_HTTP:
        return TargetError(NO_TLS, f"The server on port {port} does not speak TLS (is it plain HTTP?).", detail)
    if wire == WIRE_OTHER:
        return TargetError(NO_TLS, f"The server on port {port} does not speak TLS: it answered with another "
                                   "protocol.", detail)
    return TargetError(TLS_HANDSHAKE_FAILED, f"The server on {where} accepted the connection but no TLS handshake "
                                             "succeeded: it supports none of the protocol versions and cipher suites "
                                             "we tried, or it requires something we cannot offer.", detail)


def _timeout_message(where: str, timeout: float) -> str:
    return f"No answer from {where} within {timeout:g} s: the port is filtered or the server is down."


def _where(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
