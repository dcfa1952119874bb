"""Session resumption as clients resume: by session ID, by TLS 1.2 ticket, and by TLS 1.3 ticket (PSK).

sslyze 6.3's test covers session IDs and TLS 1.2 tickets only, and against Go's crypto/tls servers it
found no ticket resumption where `openssl s_client -sess_out/-sess_in` resumed by ticket (TLS 1.2) and by
PSK (TLS 1.3); TLS 1.3 resumption, what every current browser uses, it never tests. This probe replaces
it, with Python's OpenSSL resuming as a client does: one full handshake, then the saved session offered
again. A session-ID cache may be per server process, so that mechanism is tried twice; a ticket, which
any of the server's processes can open, once. Seven connections in all (sslyze's took six for two).
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass

from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK, Check
from workers.net.contexts import make_context
from workers.net.deadline import Deadline
from workers.tls.probes import Endpoint, short_error

# A TLS 1.3 server sends its tickets after the handshake: we read for this long (times the handshake's
# own duration, which bounds one round trip) so OpenSSL takes them in.
TICKET_WAIT_HANDSHAKES = 2.0
TICKET_WAIT_FLOOR_S = 0.1
SESSION_ID, TLS12_TICKET, TLS13_TICKET = "session IDs", "TLS 1.2 tickets", "TLS 1.3 tickets (PSK)"
ATTEMPTS = {SESSION_ID: 2, TLS12_TICKET: 1, TLS13_TICKET: 1}


@dataclass(frozen=True)
class ResumptionProbe:
    session_id: Check
    ticket: Check
    tls13: Check


def probe_resumption(endpoint: Endpoint) -> ResumptionProbe:
    return ResumptionProbe(session_id=resume(endpoint, SESSION_ID), ticket=resume(endpoint, TLS12_TICKET),
                           tls13=resume(endpoint, TLS13_TICKET))


def resume(endpoint: Endpoint, mechanism: str) -> Check:
    context = _context(mechanism)
    attempts = ATTEMPTS[mechanism]
    try:
        session, _ = connect(endpoint, context, None)
        if session is None or (mechanism != SESSION_ID and not session.has_ticket):
            what = "session ID" if mechanism == SESSION_ID else "ticket"
            return Check(BAD, detail=f"the server issued no {what}", value=0)
        resumed = sum(connect(endpoint, context, session)[1] for _ in range(attempts))
    except (OSError, ValueError) as exc:     # ssl.SSLError is an OSError
        return Check(NOT_TESTED, reason=f"Resumption with {mechanism} could not be tested: {short_error(exc)}.")
    detail = f"{resumed} of {attempts} resumption{'s' if attempts > 1 else ''} with {mechanism} succeeded"
    return Check(OK if resumed else BAD, detail=detail, value=resumed)


def _context(mechanism: str) -> ssl.SSLContext:
    """TLS 1.3 for PSK; TLS 1.2, or the best version below it, for IDs and TLS 1.2 tickets. Without
    tickets offered, a TLS 1.2 server can resume only from its session-ID cache."""
    if mechanism == TLS13_TICKET:
        return make_context("TLSv1.3")
    context = make_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    if mechanism == SESSION_ID:
        context.options |= ssl.OP_NO_TICKET
    return context


def connect(endpoint: Endpoint, context: ssl.SSLContext, session: ssl.SSLSession | None
            ) -> tuple[ssl.SSLSession | None, bool]:
    """One connection offering `session`: (the session to offer next, whether this one resumed)."""
    limit = endpoint.connection()
    raw = endpoint.connect(limit)
    try:
        raw.settimeout(limit.timeout(endpoint.timeout))
        started = time.monotonic()
        with context.wrap_socket(raw, server_hostname=endpoint.host, session=session) as tls:
            raw.pass_slot_to(tls)
            if tls.version() == "TLSv1.3" and session is None:   # a resumed session needs no new tickets
                _take_tickets(tls, limit, time.monotonic() - started)
            return tls.session, tls.session_reused
    finally:
        raw.close()


def _take_tickets(tls: ssl.SSLSocket, limit: Deadline, handshake_s: float) -> None:
    """A read, so OpenSSL processes the NewSessionTicket messages that follow a TLS 1.3 handshake; the
    server owes us no data, so the read ends by its timeout (or the server's first words), within the
    connection's limit and the audit's deadline."""
    try:
        limit.run(tls, max(TICKET_WAIT_FLOOR_S, TICKET_WAIT_HANDSHAKES * handshake_s), tls.recv, 1)
    except (TimeoutError, ssl.SSLError, OSError):
        pass
