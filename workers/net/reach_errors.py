"""Why a target could not be reached or scanned, in words a site owner understands: the codes only a scan
meets, and the classifiers that turn the pre-flight's outcomes (reach.py) and sslyze's failures (by their
class names: nothing here imports sslyze) into the one TargetError of errors.py.
"""

from __future__ import annotations

from workers.net import outcomes
from workers.net.errors import CONNECTION_FAILED, REFUSED, TIMEOUT, TLS_HANDSHAKE_FAILED, TargetError
from workers.net.outcomes import WIRE_HTTP, WIRE_OTHER, WIRE_REFUSED, WIRE_SILENT, WIRE_UNREACHABLE

# Codes only a scan meets, for callers that branch on them.
NO_TLS = "no_tls"
SSLV2_ONLY = "sslv2_only"
STARTTLS_REJECTED = "starttls_rejected"

# OpenSSL reasons a pre-flight handshake can end with that deserve their own words.
_UNRECOGNIZED_NAME = "UNRECOGNIZED_NAME"
_TOO_LARGE = ("EXCESSIVE_MESSAGE_SIZE", "CERTIFICATE_LIST_TOO_LONG")


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
    if wire in (WIRE_HTTP, WIRE_OTHER):  # e.g. sslyze's "read wrong packet type" on random bytes
        return _classify_handshake_failure(port, where, wire, detail)
    if wire == WIRE_UNREACHABLE:
        return TargetError(CONNECTION_FAILED, f"{where} is unreachable from our scanner (no route to it).", detail)
    return TargetError(CONNECTION_FAILED, f"The connection to {where} failed.", detail)


def speaks_no_tls(reach) -> bool:
    """Did the pre-flight find no TLS at all: its handshake failed on first bytes that are HTTP or
    another protocol, neither a TLS record nor an SSL 2.0 one? Then sslyze has nothing to find, and
    each of its ~100 connections would only wait for the same bytes again."""
    return reach.outcome == outcomes.TLS_ERROR and reach.wire in (WIRE_HTTP, WIRE_OTHER)


def deadline_error(ip: str, port: int, deadline_s: float, scan_deadline, elapsed_s: float) -> TargetError:
    """sslyze was stopped by its deadline, or its connectivity test by a connection's lifetime
    (`scan_deadline`: the sslyze phase's Deadline, which counted both)."""
    where = _where(ip, port)
    cut, limit = scan_deadline.cut_connections, scan_deadline.connection_s
    if cut:
        why = (f"{cut} of our connections {'was' if cut == 1 else 'were'} still unfinished after {limit:g} s: "
               "the server stalls some handshakes, or sends its answers a few bytes at a time")
    else:
        why = "the server answers too slowly for the ~100 connections of a full audit"
    if scan_deadline.overran:
        message = f"The audit of {where} did not finish within its {deadline_s:g} s deadline: {why}."
    else:
        message = f"The audit of {where} was stopped after {elapsed_s:.0f} s: {why}."
    detail = (f"deadline {deadline_s:g} s, scan stopped at {elapsed_s:.1f} s; {cut} connections cut at "
              f"{limit:g} s, {scan_deadline.overran} operations stopped or refused at the deadline")
    return TargetError(TIMEOUT, message + " Nothing was graded.", detail)


def reach_error(reach, host: str) -> TargetError | None:
    """The site owner's message for a failed pre-flight handshake (workers/net/reach.py), or None."""
    where = _where(reach.ip, reach.port)
    detail = f"pre-flight: {reach.outcome} after {reach.elapsed_s:g} s, {reach.received} bytes received" + (
        f"; {reach.detail}" if reach.detail else "")
    if reach.outcome == outcomes.OK:
        return None
    if reach.outcome == outcomes.REFUSED:
        return TargetError(REFUSED, f"Port {reach.port} on {reach.ip} refused the connection: nothing is listening "
                                    "there.", detail)
    if reach.outcome == outcomes.CONNECT_TIMEOUT:
        return TargetError(TIMEOUT, _timeout_message(where, reach.timeout), detail)
    if reach.outcome == outcomes.UNREACHABLE:
        return TargetError(CONNECTION_FAILED, f"{where} is unreachable from our scanner (no route to it).", detail)
    if reach.outcome == outcomes.SILENT:
        return TargetError(TIMEOUT, f"No answer from {where} within {reach.timeout:g} s: the port accepts connections "
                                    "but never answers the TLS handshake (the service is hung, or it waits for "
                                    "a protocol other than TLS).", detail)
    if reach.outcome == outcomes.SLOW:
        return TargetError(TIMEOUT, f"The server on {where} started to answer the TLS handshake but sent only "
                                    f"{reach.received} bytes in {reach.elapsed_s:.0f} s and never finished it: it "
                                    "answers far too slowly, or trickles bytes on purpose.", detail)
    if reach.outcome == outcomes.STARTTLS_REFUSED:
        return TargetError(STARTTLS_REJECTED, f"The server on {where} did not start TLS: {reach.detail}. "
                                              "Nothing was graded.", detail)
    if reach.outcome == outcomes.STARTTLS_STALLED:
        return TargetError(TIMEOUT, f"The server on {where} never finished the clear-text exchange before TLS "
                                    f"(STARTTLS): {reach.detail}. Nothing was graded.", detail)
    if reach.outcome == outcomes.RESET:
        return _reset(where, detail)
    if reach.outcome == outcomes.CLOSED:
        return TargetError(CONNECTION_FAILED, f"The server on {where} accepted the connection, then closed it "
                                              "without answering the TLS handshake.", detail)
    return _tls_error(reach, host, where, detail)


def _tls_error(reach, host: str, where: str, detail: str) -> TargetError:
    reason = reach.tls_reason.upper()
    if reach.starttls and reach.wire in (WIRE_HTTP, WIRE_OTHER):
        return TargetError(NO_TLS, f"The server on {where} agreed to start TLS (STARTTLS), then answered our TLS "
                                   "handshake with something that is not TLS.", detail)
    if reach.wire in (WIRE_HTTP, WIRE_OTHER):
        return _classify_handshake_failure(reach.port, where, reach.wire, detail)
    if _UNRECOGNIZED_NAME in reason:
        return TargetError(TLS_HANDSHAKE_FAILED, f"The server on {where} does not serve {host}: it answered the TLS "
                                                 "handshake for this name with the alert 'unrecognized name'. "
                                                 f"Configure a certificate and a virtual host for {host}.", detail)
    if any(word in reason for word in _TOO_LARGE):
        return TargetError(TLS_HANDSHAKE_FAILED, f"The server on {where} sends a certificate chain larger than TLS "
                                                 "clients accept (browsers and OpenSSL stop at 100 KB): send only "
                                                 "the certificate and its intermediates.", detail)
    return TargetError(TLS_HANDSHAKE_FAILED, f"The TLS handshake with {where} failed ({reach.tls_reason}).", detail)


def specific_reach_error(reach, host: str) -> TargetError | None:
    """The pre-flight's message when it names the cause better than sslyze's verdict does: a reset,
    a close, an unknown name or an oversized chain. Not a generic TLS failure (sslyze tries more
    versions and suites than we can), nor the protocol spoken instead of TLS (diagnose_wire asks
    with a real HTTP request, which an HTTP server answers more plainly than a ClientHello)."""
    reason = reach.tls_reason.upper()
    specific = reach.outcome in (outcomes.RESET, outcomes.CLOSED) or reach.outcome == outcomes.TLS_ERROR and (
        _UNRECOGNIZED_NAME in reason or any(word in reason for word in _TOO_LARGE))
    return reach_error(reach, host) if specific else None


def _reset(where: str, detail: str) -> TargetError:
    return TargetError(CONNECTION_FAILED, f"The server on {where} accepted the connection, then reset it before "
                                          "any TLS handshake (a firewall, or a service that crashes or turns us "
                                          "away).", detail)


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
