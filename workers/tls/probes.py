"""Our own probes, for what sslyze 6 does not measure: server cipher preference, ALPN,
the raw HSTS header, and what a port that is not TLS actually speaks.

All of them connect to the pinned address only (never a name), send SNI = host, use a
short per-socket timeout within each connection's lifetime and the audit's deadline
(workers/net/deadline.py), and report "could not test" rather than guessing.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK, Check, CipherSuite, ServerPreference
from workers.net import outcomes, starttls
from workers.net.contexts import classify_first_bytes, make_context
from workers.net.deadline import Deadline, DeadlineSocket, one_connection

_SSLYZE_VERSIONS = {"TLSv1.0": "TLS_1_0", "TLSv1.1": "TLS_1_1", "TLSv1.2": "TLS_1_2"}
ALPN_PROTOCOLS = ("h2", "http/1.1")
_MAX_REDIRECTS = 4
_MAX_HEADER_BYTES = 65536


@dataclass(frozen=True)
class Endpoint:
    host: str           # SNI and Host header
    ip: str             # where we connect, always
    port: int
    timeout: float      # per socket operation
    deadline: Deadline | None = None    # the audit's; without one, each connection's lifetime still holds
    starttls: str | None = None         # the clear-text prelude before TLS (starttls.py), None: TLS at once

    def connection(self) -> Deadline:
        """The limit of one new connection: its lifetime, within the audit's deadline."""
        return one_connection(self.timeout, self.deadline)

    def connect(self, limit: Deadline) -> DeadlineSocket:
        """A connection under `limit`, ready for our ClientHello: the STARTTLS prelude is done."""
        sock = limit.connect(self.ip, self.port, self.timeout)
        try:
            starttls.negotiate(sock, self.starttls, self.host, timeout=self.timeout)
        except BaseException:
            sock.close()
            raise
        return sock


@dataclass(frozen=True)
class Handshake:
    cipher: str         # OpenSSL name
    version: str
    alpn: str | None


@dataclass(frozen=True)
class HttpProbe:
    hsts_header: str | None     # the first Strict-Transport-Security value seen
    status: int                 # HTTP status of the response it came from (or of the last one)
    path: str                   # the path that response answered


# --- connections ------------------------------------------------------------------------

def handshake(endpoint: Endpoint, context: ssl.SSLContext) -> Handshake:
    with open_tls(endpoint, context)[0] as tls:
        name, version, _ = tls.cipher()
        return Handshake(cipher=name, version=version, alpn=tls.selected_alpn_protocol())


def open_tls(endpoint: Endpoint, context: ssl.SSLContext | None = None) -> tuple[ssl.SSLSocket, Deadline]:
    """A TLS connection and its limit. Python's ssl bounds a whole handshake by the socket's timeout
    (a deadline, unlike a plain recv), which is set from the limit just before it."""
    limit = endpoint.connection()
    raw = endpoint.connect(limit)
    try:
        raw.settimeout(limit.timeout(endpoint.timeout))
        tls = (context or make_context()).wrap_socket(raw, server_hostname=endpoint.host)
        raw.pass_slot_to(tls)  # the connection lives on in `tls`: so does its hold on the address's gate
        return tls, limit
    except BaseException:
        raw.close()
        raise


# --- server cipher preference -----------------------------------------------------------

def probe_preference(endpoint: Endpoint, protocol: str, accepted: Sequence[CipherSuite]) -> ServerPreference:
    """Does the server impose its own suite order for `protocol`, and which order?

    1. Keep the accepted suites Python's OpenSSL can offer; the others go last, noted.
    2. Offer them in one order, then reversed. Same pick both times: the server enforces its
       order. First pick of each list: it follows the client.
    3. If it enforces, offer what is left again and again; each pick is its next preference.
    """
    names = [s.name for s in accepted]
    if protocol == "TLSv1.3":
        raise ValueError("TLS 1.3 preference is workers/tls/tls13.py's: Python's ssl cannot choose TLS 1.3 suites")
    if len(accepted) < 2:
        return ServerPreference(protocol, None, tuple(names),
                                reason="The server accepts a single suite here, so there is no order to impose.")
    offerable, unofferable = split_offerable(protocol, accepted)
    if len(offerable) < 2:
        return ServerPreference(protocol, None, tuple(names),
                                reason="Python's OpenSSL can offer fewer than two of the accepted suites.")
    try:
        return _measure_preference(endpoint, protocol, offerable, unofferable)
    except (OSError, ssl.SSLError, ValueError) as exc:
        return ServerPreference(protocol, None, tuple(names), reason=f"The probe failed: {short_error(exc)}")


def split_offerable(protocol: str, suites: Sequence[CipherSuite]) -> tuple[list[CipherSuite], list[CipherSuite]]:
    offerable, unofferable = [], []
    for suite in suites:
        (offerable if can_offer(protocol, suite.openssl_name) else unofferable).append(suite)
    return offerable, unofferable


def can_offer(protocol: str, openssl_name: str) -> bool:
    try:
        context = make_context(protocol, ciphers=f"{openssl_name}:@SECLEVEL=0")
    except ssl.SSLError:
        return False
    return any(c["name"] == openssl_name for c in context.get_ciphers())


def _measure_preference(endpoint: Endpoint, protocol: str, offerable: list[CipherSuite],
                        unofferable: list[CipherSuite]) -> ServerPreference:
    by_openssl = {s.openssl_name: s for s in offerable}
    first = _pick(endpoint, protocol, offerable)
    second = _pick(endpoint, protocol, list(reversed(offerable)))
    tail = tuple(s.name for s in unofferable)
    note = _unofferable_note(unofferable)
    if first != second:
        follows_client = (first, second) == (offerable[0].openssl_name, offerable[-1].openssl_name)
        reason = "" if follows_client else (
            f"The server picked {first} then {second}: neither its own fixed order nor ours.")
        return ServerPreference(protocol, False if follows_client else None,
                                tuple(s.name for s in offerable) + tail,
                                reason=" ".join(p for p in (reason, note) if p))
    order, gap = _server_order(endpoint, protocol, offerable, by_openssl[first])
    return ServerPreference(protocol, True, tuple(s.name for s in order) + tail,
                            reason=" ".join(p for p in (gap, note) if p))


def _server_order(endpoint: Endpoint, protocol: str, offerable: list[CipherSuite],
                  top: CipherSuite) -> tuple[list[CipherSuite], str]:
    order, remaining = [top], [s for s in offerable if s is not top]
    by_openssl = {s.openssl_name: s for s in offerable}
    while len(remaining) > 1:
        try:
            pick = by_openssl[_pick(endpoint, protocol, remaining)]
        except (OSError, ssl.SSLError, KeyError) as exc:
            return order + remaining, (f"The order after {order[-1].name} is unknown "
                                       f"({short_error(exc)}); the rest is listed as sslyze found it.")
        order.append(pick)
        remaining.remove(pick)
    return order + remaining, ""


def _pick(endpoint: Endpoint, protocol: str, suites: Sequence[CipherSuite]) -> str:
    return pick_openssl(endpoint, protocol, [s.openssl_name for s in suites])


def pick_openssl(endpoint: Endpoint, protocol: str, openssl_names: Sequence[str]) -> str:
    """The suite the server picks (OpenSSL name) when offered `openssl_names` in that order."""
    context = make_context(protocol, ciphers=":".join(openssl_names) + ":@SECLEVEL=0")
    return server_flight_cipher(endpoint, context)


def server_flight_cipher(endpoint: Endpoint, context: ssl.SSLContext) -> str:
    """The suite of a handshake, known once the client has accepted the server's whole first flight.

    The same ClientHello as `handshake` (the same OpenSSL context), but driven through memory buffers:
    before TLS 1.3 the client's next flight (key exchange, Finished) and the server's Finished would
    cost one more round trip of a connection slot, and tell nothing about the suite. Whatever fails in
    the server's flight (an alert, a bad key exchange) raises as in a full handshake; a TLS 1.3
    handshake completes in that flight anyway."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=endpoint.host)
    limit = endpoint.connection()
    with endpoint.connect(limit) as sock:
        sock.settimeout(limit.timeout(endpoint.timeout))
        while True:
            try:
                tls.do_handshake()
                break                       # complete (TLS 1.3, or a server flight that ended it)
            except ssl.SSLWantReadError:
                flight = outgoing.read()
                if flight and tls.cipher() is not None:
                    break                   # the server's flight is accepted: ours would follow
                if flight:
                    sock.sendall(flight)
            data = sock.recv(65536)
            if data:
                incoming.write(data)
            else:
                incoming.write_eof()        # the next do_handshake raises as OpenSSL sees it
        return tls.cipher()[0]


# --- the same, ahead of sslyze's findings ------------------------------------------

@dataclass(frozen=True)
class PreferenceObservation:
    """What the server picked from everything we can offer for a protocol, before knowing what it accepts:
    `offered` in sslyze's order (names descending), then reversed; when both picks agree, `chain` is its
    picks from what was left each time, until it refused."""
    offered: tuple[str, ...]
    first: str
    second: str
    chain: tuple[str, ...] = ()


def observe_preference(endpoint: Endpoint, protocol: str,
                       accepted: Sequence[str] | None = None) -> PreferenceObservation | None:
    """None when the server took neither offer (a protocol it refuses, or a network failure), or when
    `accepted` (the OpenSSL names it is known to accept) leaves fewer than two we can offer: then there
    is no order to read, and probe_preference says so without a connection."""
    if accepted is None:
        return observe_picks(lambda names: pick_openssl(endpoint, protocol, names), offer_order(protocol))
    offered = [name for name in offer_order(protocol) if name in set(accepted)]
    if len(offered) < 2:
        return None
    return observe_picks(lambda names: pick_openssl(endpoint, protocol, names), offered, all_accepted=True)


def observe_picks(pick, offered: Sequence[str], all_accepted: bool = False) -> PreferenceObservation | None:
    """Steps 2 and 3 of probe_preference over `offered`, the chain read until the server refuses; when
    `all_accepted` (every name offered is one the server accepts), the last one left is its last pick
    without asking."""
    try:
        first, second = pick(list(offered)), pick(list(reversed(offered)))
    except (OSError, ssl.SSLError, ValueError):
        return None
    if first != second:
        return PreferenceObservation(tuple(offered), first, second)
    chain, remaining = [first], [n for n in offered if n != first]
    while remaining:
        if all_accepted and len(remaining) == 1:
            chain.append(remaining.pop())
            break
        try:
            chosen = pick(remaining)
        except (OSError, ssl.SSLError, ValueError):
            break       # no suite left that it accepts (or a failure: preference_observed then says so)
        if chosen not in remaining:
            break
        chain.append(chosen)
        remaining.remove(chosen)
    return PreferenceObservation(tuple(offered), first, second, tuple(chain))


@cache
def offer_order(protocol: str) -> tuple[str, ...]:
    """sslyze's suites for `protocol` that Python's OpenSSL offers, in the order sslyze lists accepted
    suites (IANA name descending), as OpenSSL names. sslyze is imported here, not with this module: the
    pre-flight and the first probes run while a new process still imports it (engine.preload_sslyze),
    and the load commands, which run the pre-flight but never scan, never import it (~0.3 s of CPU)."""
    from sslyze import TlsVersionEnum
    from sslyze.plugins.openssl_cipher_suites.cipher_suites import CipherSuitesRepository

    ours = {c["name"] for c in make_context(protocol).get_ciphers()}
    theirs = CipherSuitesRepository.get_all_cipher_suites(TlsVersionEnum[_SSLYZE_VERSIONS[protocol]])
    return tuple(s.openssl_name for s in sorted(theirs, key=lambda s: s.name, reverse=True) if s.openssl_name in ours)


def preference_observed(observation: PreferenceObservation | None, protocol: str,
                        accepted: Sequence[CipherSuite]) -> ServerPreference | None:
    """probe_preference's answer read from an observation, or None when only probe_preference itself can
    give it: no observation, nothing to measure (it answers without a connection), our offer narrowed
    to the accepted suites is not its offer, a server that followed neither order (its reason names
    what it picked from its own offers), or a chain that does not cover the accepted suites exactly."""
    if observation is None or len(accepted) < 2:
        return None
    offerable, unofferable = split_offerable(protocol, accepted)
    wanted = [s.openssl_name for s in offerable]
    if len(wanted) < 2 or [n for n in observation.offered if n in wanted] != wanted:
        return None
    tail, note = tuple(s.name for s in unofferable), _unofferable_note(unofferable)
    if observation.first != observation.second:
        if (observation.first, observation.second) != (wanted[0], wanted[-1]):
            return None
        return ServerPreference(protocol, False, tuple(s.name for s in offerable) + tail, reason=note)
    if sorted(observation.chain) != sorted(wanted):
        return None
    by_openssl = {s.openssl_name: s for s in offerable}
    return ServerPreference(protocol, True, tuple(by_openssl[n].name for n in observation.chain) + tail, reason=note)


def _unofferable_note(unofferable: list[CipherSuite]) -> str:
    if not unofferable:
        return ""
    sample = ", ".join(s.name for s in unofferable[:3])
    return (f"{len(unofferable)} accepted suite(s) Python's OpenSSL cannot offer ({sample}) "
            "are listed last, their rank unknown.")


# --- ALPN ---------------------------------------------------------------------------------

def probe_alpn(endpoint: Endpoint) -> tuple[list[str], Check]:
    """Which of h2 / http/1.1 the server agrees to, each offered alone, and its pick when offered both."""
    agreed: list[str] = []
    try:
        for protocol in ALPN_PROTOCOLS:
            if _alpn_pick(endpoint, [protocol]) == protocol:
                agreed.append(protocol)
        both = _alpn_pick(endpoint, list(ALPN_PROTOCOLS))
    except (OSError, ssl.SSLError) as exc:
        return [], Check(NOT_TESTED, reason=f"The ALPN probe failed: {short_error(exc)}")
    if not agreed:
        return [], Check(BAD, detail="The server selects no application protocol (no ALPN, so no HTTP/2).")
    detail = f"Agrees to {', '.join(agreed)}; picks {both or 'nothing'} when offered h2 and http/1.1."
    return agreed, Check(OK, detail=detail, value={"agreed": agreed, "preferred": both})


def _alpn_pick(endpoint: Endpoint, offered: list[str]) -> str | None:
    try:
        return handshake(endpoint, make_context(alpn=offered)).alpn
    except ssl.SSLError as exc:
        if "NO_APPLICATION_PROTOCOL" in str(exc).upper().replace(" ", "_"):
            return None             # RFC 7301 alert: the server knows ALPN but wants none of these
        raise


# --- HTTP: the HSTS header ------------------------------------------------------------------

def fetch_hsts_header(endpoint: Endpoint) -> HttpProbe:
    """GET / and follow redirects on the same host and port (up to 4); return the first STS header seen."""
    path, status = "/", 0
    for _ in range(_MAX_REDIRECTS + 1):
        status, headers = http_get(endpoint, path)
        if "strict-transport-security" in headers:
            return HttpProbe(headers["strict-transport-security"], status, path)
        next_path = _same_origin_redirect(endpoint, status, headers.get("location"))
        if next_path is None:
            break
        path = next_path
    return HttpProbe(None, status, path)


def http_get(endpoint: Endpoint, path: str) -> tuple[int, dict[str, str]]:
    """One HTTP/1.1 request over TLS; the status and the headers (first value of each, lower-case names)."""
    request = (f"GET {path} HTTP/1.1\r\nHost: {_host_header(endpoint)}\r\nUser-Agent: TLSAudit\r\n"
               "Accept: */*\r\nConnection: close\r\n\r\n").encode("ascii")
    tls, limit = open_tls(endpoint)
    with tls:
        tls.sendall(request)
        head = _read_head(tls, limit, endpoint.timeout)
    return parse_response_head(head)


def parse_response_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("iso-8859-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {lines[0][:60]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() not in headers:     # RFC 6797: only the first STS header counts
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _read_head(tls: ssl.SSLSocket, limit: Deadline, per_op: float) -> bytes:
    """Up to the blank line; each read gets what is left of the connection's limit (a trickle
    would otherwise get a byte in time, read after read)."""
    buffer = b""
    while b"\r\n\r\n" not in buffer and len(buffer) < _MAX_HEADER_BYTES:
        chunk = limit.run(tls, per_op, tls.recv, 4096)
        if not chunk:
            break
        buffer += chunk
    return buffer.split(b"\r\n\r\n", 1)[0]


def _same_origin_redirect(endpoint: Endpoint, status: int, location: str | None) -> str | None:
    if status not in (301, 302, 303, 307, 308) or not location:
        return None
    target = urlsplit(location)
    if target.netloc:
        same = (target.scheme == "https" and (target.hostname or "").lower() == endpoint.host
                and (target.port or 443) == endpoint.port)
        if not same:
            return None
    path = target.path or "/"
    return path + (f"?{target.query}" if target.query else "")


def _host_header(endpoint: Endpoint) -> str:
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return host if endpoint.port == 443 else f"{host}:{endpoint.port}"


# --- what does a port that failed TLS speak? -------------------------------------------------

def diagnose_wire(ip: str, port: int, timeout: float, deadline: Deadline | None = None,
                  starttls_dialect: str | None = None, host: str = "") -> str:
    """Connect (and do the STARTTLS prelude, if any), send an HTTP HEAD and look at the first bytes
    back (see outcomes.WIRE_*)."""
    try:
        sock = one_connection(timeout, deadline).connect(ip, port, timeout)
    except ConnectionRefusedError:
        return outcomes.WIRE_REFUSED
    except (socket.timeout, TimeoutError):
        return outcomes.WIRE_SILENT
    except OSError:
        return outcomes.WIRE_UNREACHABLE
    with sock:
        try:
            starttls.negotiate(sock, starttls_dialect, host or ip, timeout=timeout)
        except (socket.timeout, TimeoutError):
            return outcomes.WIRE_SILENT
        except OSError:     # refused, closed: not the TLS it announced
            return outcomes.WIRE_OTHER
        try:
            sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            first = sock.recv(16)
        except (socket.timeout, TimeoutError):
            return outcomes.WIRE_SILENT
        except OSError:
            return outcomes.WIRE_CLOSED
    return classify_first_bytes(first)


def short_error(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
