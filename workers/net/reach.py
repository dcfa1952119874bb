"""Pre-flight: does the server complete one TLS handshake within a deadline on the whole exchange?

sslyze's timeouts are per socket operation and it retries each TLS version: a silent port costs it
about 35 s, and a server that trickles one byte a second never trips a per-read timeout at all
(each read gets its byte), so sslyze waits until the task's time limit. One handshake attempt here,
over memory BIOs so that every byte is counted and the deadline covers the whole exchange, tells
the hopeless cases apart in seconds, before any engine starts:

1. connect (timeout: `timeout`) -> REFUSED / CONNECT_TIMEOUT (SYNs dropped) / UNREACHABLE;
2. send our ClientHello; each wait for the server's bytes is at most `timeout`, and the handshake
   must finish within `total_s` -> SILENT (not a byte), SLOW (bytes, but no end), RESET, CLOSED;
3. OpenSSL's verdict -> OK, or TLS_ERROR with its reason (WRONG_VERSION_NUMBER,
   TLSV1_UNRECOGNIZED_NAME, EXCESSIVE_MESSAGE_SIZE...) and the first bytes the server sent.

On a STARTTLS service (`starttls`, a dialect of starttls.py) the clear-text prelude comes between
1 and 2, under the same `total_s` -> STARTTLS_REFUSED (no go-ahead), STARTTLS_STALLED (no answer).

The outcomes are named in outcomes.py; `reach_errors.reach_error` turns a `Reach` into the site owner's
message. The tasks of the audit, the load test and the browser probe call `check_tls` on the checked
address, so nothing here resolves names.
Certificates are not verified (as in contexts.make_context): trust is the audit's finding, not a
reason to stop.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, replace

from tlsaudit.domain.netguard import parse_ip_literal
from workers.net import reach_errors, starttls
from workers.net.contexts import classify_first_bytes, make_context
from workers.net.deadline import MIN_CONNECTION_S, connection_limit
from workers.net.outcomes import (
    CLOSED,
    CONNECT_TIMEOUT,
    OK,
    REFUSED,
    RESET,
    SILENT,
    SLOW,
    STARTTLS_REFUSED,
    STARTTLS_STALLED,
    TLS_ERROR,
    UNREACHABLE,
    WIRE_SILENT,
)

MIN_TOTAL_S = MIN_CONNECTION_S    # a handshake slower than this is broken, whatever the network
FIRST_BYTES = 16


@dataclass(frozen=True)
class Reach:
    outcome: str
    ip: str
    port: int
    timeout: float                # per wait, seconds
    elapsed_s: float = 0.0
    received: int = 0             # bytes the server sent before the outcome
    first_bytes: bytes = b""
    tls_reason: str = ""          # OpenSSL's reason, for TLS_ERROR
    detail: str = ""
    starttls: str | None = None   # the prelude done before the handshake (a starttls.py dialect)

    @property
    def ok(self) -> bool:
        return self.outcome == OK

    @property
    def wire(self) -> str:
        """What the server's first bytes were (outcomes.WIRE_*), as probes.diagnose_wire names them."""
        return classify_first_bytes(self.first_bytes) if self.first_bytes else WIRE_SILENT


def check_tls(ip: str, port: int, host: str, timeout: float, total_s: float | None = None,
              starttls_dialect: str | None = None) -> Reach:
    """One TLS handshake with `host` as SNI at `ip`:`port`, after the STARTTLS prelude of
    `starttls_dialect` if any; never raises for network trouble."""
    total_s = total_s or connection_limit(timeout)
    started = time.monotonic()
    sock, failure = connect(ip, port, timeout, started)
    if failure is not None:
        return failure
    with sock:
        failure = start_tls(sock, ip, port, host, timeout, started, started + total_s, starttls_dialect)
        if failure is not None:
            return failure
        reach = Handshake(sock, ip, port, host, timeout, started, started + total_s).run()
        return replace(reach, starttls=starttls_dialect)


def start_tls(sock, ip: str, port: int, host: str, timeout: float, started: float, until: float,
              dialect: str | None) -> Reach | None:
    """The STARTTLS prelude (starttls.py) within the pre-flight's time; a Reach when it failed."""
    try:
        starttls.negotiate(sock, dialect, host, timeout=timeout, until=until)
    except starttls.StartTlsStalled as exc:
        return Reach(STARTTLS_STALLED, ip, port, timeout, _since(started), detail=str(exc), starttls=dialect)
    except starttls.StartTlsRefused as exc:
        return Reach(STARTTLS_REFUSED, ip, port, timeout, _since(started), detail=str(exc), starttls=dialect)
    except ConnectionResetError as exc:
        return Reach(RESET, ip, port, timeout, _since(started), detail=str(exc), starttls=dialect)
    except OSError as exc:
        return Reach(CLOSED, ip, port, timeout, _since(started), detail=str(exc), starttls=dialect)
    return None


def check_tcp(ip: str, port: int, timeout: float) -> Reach:
    """Only the TCP connect (for plain-HTTP ports)."""
    started = time.monotonic()
    sock, failure = connect(ip, port, timeout, started)
    if failure is not None:
        return failure
    sock.close()
    return Reach(OK, ip, port, timeout, _since(started))


def engine_preflight(ip: str, port: int, host: str, timeout: float, tls: bool = True):
    """The pre-flight of the load, handshake and probe engines (tasks and CLIs): one TLS handshake (a
    TCP connect for plain HTTP). None when the engine may go on, else the TargetError to stop with.
    Anything but a success or a refusal stops it: these engines offer what Python's and Chromium's
    TLS offer, so a handshake that fails here fails there too, each after its own timeout. A refused
    port is left to the engine, which fails as fast and says so."""
    outcome = check_tls(ip, port, host, timeout) if tls else check_tcp(ip, port, timeout)
    if outcome.outcome in (OK, REFUSED):
        return None
    return reach_errors.reach_error(outcome, host)


def connect(ip: str, port: int, timeout: float, started: float) -> tuple[socket.socket | None, Reach | None]:
    try:
        return socket.create_connection((ip, port), timeout=timeout), None
    except ConnectionRefusedError:
        return None, Reach(REFUSED, ip, port, timeout, _since(started))
    except ConnectionResetError as exc:  # accepted, then reset before connect() returned to us
        return None, Reach(RESET, ip, port, timeout, _since(started), detail=str(exc))
    except (socket.timeout, TimeoutError):
        return None, Reach(CONNECT_TIMEOUT, ip, port, timeout, _since(started))
    except OSError as exc:
        return None, Reach(UNREACHABLE, ip, port, timeout, _since(started), detail=str(exc))


class Handshake:
    """The client side of one handshake over memory BIOs, counting the server's bytes."""

    def __init__(self, sock, ip, port, host, timeout, started, deadline):
        self.sock, self.ip, self.port, self.timeout = sock, ip, port, timeout
        self.started, self.deadline = started, deadline
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        server_name = None if parse_ip_literal(host) is not None else host  # no SNI for an address
        self.tls = make_context().wrap_bio(self.incoming, self.outgoing, server_hostname=server_name)
        self.seen = bytearray()

    def run(self) -> Reach:
        while True:
            try:
                self.tls.do_handshake()
                self.flush()
                return self.reach(OK)
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as exc:
                return self.reach(TLS_ERROR, tls_reason=exc.reason or type(exc).__name__, detail=str(exc))
            except OSError as exc:
                return self.reach(RESET if isinstance(exc, ConnectionResetError) else CLOSED, detail=str(exc))
            outcome = self.receive()
            if outcome is not None:
                return outcome

    def receive(self) -> Reach | None:
        """Send what OpenSSL wrote, wait for the server's next bytes; a Reach when it cannot go on."""
        try:
            self.flush()
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                return self.reach(SLOW if self.seen else SILENT)
            self.sock.settimeout(min(self.timeout, remaining))
            chunk = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return self.reach(SLOW if self.seen else SILENT)
        except ConnectionResetError as exc:
            return self.reach(RESET, detail=str(exc))
        except OSError as exc:
            return self.reach(CLOSED, detail=str(exc))
        if not chunk:
            return self.reach(CLOSED, detail="closed by the server")
        self.seen += chunk
        self.incoming.write(chunk)
        return None

    def flush(self) -> None:
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def reach(self, outcome: str, **extra) -> Reach:
        return Reach(outcome, self.ip, self.port, self.timeout, _since(self.started), received=len(self.seen),
                     first_bytes=bytes(self.seen[:FIRST_BYTES]), **extra)


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
