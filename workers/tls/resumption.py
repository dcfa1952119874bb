"""Session resumption by ticket as clients resume: TLS 1.2 tickets and TLS 1.3 tickets (PSK).

sslyze 6.3 tests session IDs and TLS 1.2 tickets only, and against Go's crypto/tls servers it found no
ticket resumption where `openssl s_client -sess_out/-sess_in` resumed by ticket (TLS 1.2) and by PSK
(TLS 1.3); TLS 1.3 resumption, what every current browser uses, it never tests. This probe resumes
with Python's OpenSSL as a client does: one full handshake, then the saved session offered again.
Once is enough for a ticket, which any of the server's processes can open (a session-ID cache may be
per process: sslyze's ID test, which tries twice, stays). A TLS 1.2 ticket works when a resumption
succeeded here or in sslyze's test (`merged`). Four connections in all.
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass

from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK, Check
from workers.tls.contexts import make_context
from workers.tls.probes import Endpoint, short_error

ATTEMPTS = 1
# A TLS 1.3 server sends its tickets after the handshake: we read for this long (times the handshake's
# own duration, which bounds one round trip) so OpenSSL takes them in.
TICKET_WAIT_HANDSHAKES = 2.0
TICKET_WAIT_FLOOR_S = 0.1
TLS12_TICKET, TLS13_TICKET = "TLS 1.2 tickets", "TLS 1.3 tickets (PSK)"


@dataclass(frozen=True)
class ResumptionProbe:
    ticket: Check
    tls13: Check


def probe_resumption(endpoint: Endpoint) -> ResumptionProbe:
    return ResumptionProbe(ticket=resume(endpoint, TLS12_TICKET), tls13=resume(endpoint, TLS13_TICKET))


def resume(endpoint: Endpoint, mechanism: str) -> Check:
    context = _context(mechanism)
    try:
        session, _ = connect(endpoint, context, None)
        if session is None or not session.has_ticket:
            return Check(BAD, detail="the server issued no ticket", value=0)
        resumed = sum(connect(endpoint, context, session)[1] for _ in range(ATTEMPTS))
    except (OSError, ValueError) as exc:     # ssl.SSLError is an OSError
        return Check(NOT_TESTED, reason=f"Resumption with {mechanism} could not be tested: {short_error(exc)}.")
    detail = f"{resumed} of {ATTEMPTS} resumption{'s' if ATTEMPTS > 1 else ''} with {mechanism} succeeded"
    return Check(OK if resumed else BAD, detail=detail, value=resumed)


def _context(mechanism: str) -> ssl.SSLContext:
    """TLS 1.3 for PSK; TLS 1.2, or the best version below it, for TLS 1.2 tickets."""
    if mechanism == TLS13_TICKET:
        return make_context("TLSv1.3")
    context = make_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
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
            if tls.version() == "TLSv1.3":
                _take_tickets(tls, time.monotonic() - started)
            return tls.session, tls.session_reused
    finally:
        raw.close()


def _take_tickets(tls: ssl.SSLSocket, handshake_s: float) -> None:
    """A read, so OpenSSL processes the NewSessionTicket messages that follow a TLS 1.3 handshake; the
    server owes us no data, so the read ends by its timeout (or the server's first words)."""
    tls.settimeout(max(TICKET_WAIT_FLOOR_S, TICKET_WAIT_HANDSHAKES * handshake_s))
    try:
        tls.recv(1)
    except (TimeoutError, ssl.SSLError, OSError):
        pass


def merged(ours: Check, sslyze: Check) -> Check:
    """Works when either resumed; otherwise the answer that was tested (ours first)."""
    if ours.status == OK:
        return ours
    if sslyze.status == OK:
        return sslyze
    return ours if ours.tested else sslyze
