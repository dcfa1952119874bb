"""sslyze's TLS 1.3 early-data test without its HTTP request, for services that are not HTTP.

sslyze 6.3 (`early_data_plugin._test_early_data_support`) gets its session by writing an HTTP GET
after the first handshake and reading the answer, so that the server's NewSessionTicket arrives. An
LDAP or PostgreSQL server closes on those bytes, the read fails, and the check ended as
"BUG_IN_SSLYZE: Connection was shut down by peer". For a location registered by
`without_http(location)` we send nothing instead: the tickets come right after the handshake, so we
read for a short window (a server that speaks first, SMTPS or IMAPS, answers with its greeting). A
ticket without the early_data extension is the answer: RFC 8446 (4.2.10) forbids early data on it, so
the server does not accept any. Only a ticket that allows early data costs sslyze's second connection,
which sends one byte, "E", exactly as sslyze does. Every other location runs sslyze's own function.
The function is replaced once per process, the way sslyze_sockets.py replaces sslyze's socket opener.
"""

from __future__ import annotations

import select
import threading
import time
from contextlib import contextmanager

from nassl._nassl import OpenSSLError, WantReadError
from nassl.ssl_client import OpenSslEarlyDataStatusEnum
from sslyze.errors import ServerRejectedTlsHandshake, TlsHandshakeTimedOut
from sslyze.plugins import early_data_plugin
from sslyze.server_connectivity import TlsVersionEnum

_HOOKED = "_test_early_data_support"
_sslyze_test = getattr(early_data_plugin, _HOOKED)   # AttributeError on an sslyze that moved it: loud
_not_http: dict[int, object] = {}
_lock = threading.Lock()
TICKET_WAIT_MIN_S = 0.5     # at least: a loaded server's ticket can trail its Finished
TICKET_WAIT_HANDSHAKES = 3  # the ticket comes one round trip after our Finished; a handshake is ~1-2


def _test_early_data(server_info) -> bool:
    location = server_info.server_location
    if _not_http.get(id(location)) is not location:
        return _sslyze_test(server_info)
    session = _session_without_request(server_info)
    if session is None or session.get_max_early_data() == 0:
        return False
    return _early_data_accepted(server_info, session)


def _session_without_request(server_info):
    """A TLS 1.3 session from one handshake, its tickets read without sending any application data;
    None when the server refuses TLS 1.3 (as sslyze says: no early data)."""
    connection = server_info.get_preconfigured_tls_connection(override_tls_version=TlsVersionEnum.TLS_1_3)
    started = time.monotonic()
    try:
        connection.connect()
    except (ServerRejectedTlsHandshake, TlsHandshakeTimedOut):
        connection.close()
        return None
    except BaseException:
        connection.close()      # a client certificate asked for, a weak key...: sslyze reports it; the slot comes back
        raise
    try:
        wait = max(TICKET_WAIT_MIN_S, TICKET_WAIT_HANDSHAKES * (time.monotonic() - started))
        _read_tickets(connection.ssl_client, min(wait, server_info.network_configuration.network_timeout))
        return connection.ssl_client.get_session()
    finally:
        _say_goodbye(connection.ssl_client)


def _read_tickets(ssl_client, wait_s: float) -> None:
    """Read for `wait_s` at most, in all, or until the server speaks or closes: OpenSSL takes in the
    tickets on the way. Our own loop, as nassl's read() would go on for as long as records without
    application data keep coming."""
    # nassl's do_handshake returns with our Finished still in its buffer (the first write would carry it);
    # the server sends its tickets only once it has our Finished, so push it out now.
    ssl_client._flush_ssl_engine()
    sock = ssl_client.get_underlying_socket()
    end = time.monotonic() + wait_s
    while (left := end - time.monotonic()) > 0:
        try:
            if not select.select([sock], [], [], left)[0]:
                return      # the window is over: the tickets that came are in the session
            data = sock.recv(16384)
        except OSError:
            return
        if not data:
            return          # closed after the handshake: what came before the close is kept
        ssl_client._network_bio.write(data)
        try:
            ssl_client._ssl.read(2048)
            return          # the server spoke first (SMTPS, IMAPS...): its tickets came before
        except WantReadError:
            continue        # a ticket, or part of a record
        except OpenSSLError:
            return          # an alert after the handshake


def _say_goodbye(ssl_client) -> None:
    """Send close_notify, then close the socket. nassl's shutdown() leaves the alert unsent, and OpenSSL
    servers drop a session whose connection ended without it, after which they refuse its 0-RTT: a
    browser closes cleanly, so we must too, or a server that accepts early data would look as if it did
    not. nassl's shutdown() is not called after this one: it would wait for the server's own alert."""
    try:
        ssl_client._ssl.shutdown()
        ssl_client._flush_ssl_engine()
    except (OSError, OpenSSLError):
        pass    # the server already went: nothing left to tell it
    sock = ssl_client.get_underlying_socket()
    if sock is not None:
        sock.close()


def _early_data_accepted(server_info, session) -> bool:
    """sslyze's second connection: resume with one byte of early data, read whether it was accepted."""
    connection = server_info.get_preconfigured_tls_connection(override_tls_version=TlsVersionEnum.TLS_1_3)
    connection.ssl_client.set_session(session)
    try:
        connection._do_pre_handshake()   # sslyze's own step: socket and STARTTLS prelude, no handshake
        connection.ssl_client.write_early_data(b"E")
        connection.ssl_client.do_handshake()
        return connection.ssl_client.get_early_data_status() == OpenSslEarlyDataStatusEnum.ACCEPTED
    except OpenSSLError as exc:
        if "function you should not call" in exc.args[0]:
            return False    # what OpenSSL says when the server did not enable early data (sslyze's reading)
        raise
    finally:
        connection.close()


def install() -> None:
    """Idempotent: route sslyze's early-data jobs through `_test_early_data`."""
    if getattr(early_data_plugin, _HOOKED) is not _test_early_data:
        setattr(early_data_plugin, _HOOKED, _test_early_data)


@contextmanager
def without_http(server_location, http: bool):
    """While inside, sslyze's early-data test of `server_location` sends no HTTP request (when `http` is
    False; an HTTP service keeps sslyze's test as it is)."""
    if http:
        yield
        return
    install()
    with _lock:
        _not_http[id(server_location)] = server_location
    try:
        yield
    finally:
        with _lock:
            _not_http.pop(id(server_location), None)
