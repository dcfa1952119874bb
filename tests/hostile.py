"""Hostile local servers for bad-target and SSRF tests: threads on 127.0.0.0/8, stopped at exit.

| server | what it does | what a client sees |
|---|---|---|
| `tarpit()` | accepts, reads, never sends a byte | connected, then silence |
| `reset()` | accepts, then closes with SO_LINGER 0 | a TCP RST right after connecting |
| `plain_http()` | an HTTP server: answers anything with `400 Bad Request` | HTTP bytes where TLS was expected |
| `garbage()` | sends 64 KB of random bytes (seeded), then closes | neither TLS nor HTTP |
| `drip()` | sends a TLS record header then one byte a second | every read gets a byte: no read timeout fires |
| `drip_record()` | a whole TLS record header at once, then one byte a second | a valid record that never ends |
| `drip_noise()` | bytes that never form a TLS record, one a second | OpenSSL fails after 5-7 s per connection, no timeout |
| `drip_server_hello()` | answers the ClientHello with a ServerHello's start, then one byte a second | a handshake begun, never done |
| `trickle_every(pki, nth)` | real TLS and `200 ok`, but every nth connection after the first gets the ServerHello drip | the pre-flight passes; a scan stalls later |
| `slow_http(pki)` | completes TLS, then sends the response headers one byte a second, forever | TLS fine, HTTP slowloris |
| `slow_subresource(pki)` | a page served at once whose script `/slow.js` comes one byte a second | the document loads, its load event never fires |
| `big_chain(pki)` | TLS with a 50-certificate, ~1 MB chain | a Certificate message past clients' 100 KB limit |
| `wrong_sni(pki)` | TLS, but any server name but `expected` gets alert unrecognized_name | a fatal alert |
| `handshake_then_hang(pki)` | completes the TLS handshake, then never answers | TLS up, HTTP silent |
| `blackhole()` | a listener whose accept queue is full: the kernel drops new SYNs | connect() never completes |
| `dns_server(zone)` | a UDP DNS server: A/AAAA from `zone`, NXDOMAIN for other names (`{}`: NXDOMAIN for all) | see `DnsServer` |
| `closed_port()` | a port nothing listens on | connection refused |
| `trap(ip, port)` | counts connections (SSRF tests: an address that must never be reached) | `listener.accepted` |
| `recording_http(ip, port)` | answers every request `200 ok`, keeps the raw requests | `listener.requests` |

"Blackholed" on loopback: nothing on 127/8 drops packets (a closed port answers RST at once) and a
firewall DROP rule is not ours to add on a shared machine. What really drops SYNs on loopback is a
listening socket whose accept queue is full (Linux `tcp_conn_request`: `sk_acceptq_is_full` ->
drop, with `tcp_abort_on_overflow` = 0, the default): the client retransmits its SYN and its
connect() times out, exactly as towards a filtered address. `blackhole()` listens with backlog 0
and fills the queue with one connection it never accepts.
"""

from __future__ import annotations

import itertools
import random
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

IP = "127.0.0.1"
READ_TIMEOUT_S = 60          # a handler blocked on a silent client gives up after this


@dataclass
class Listener:
    """What a handler may use: `stop` is set when the server shuts down; `keep(sock)` registers a
    socket (e.g. the TLS wrapper of the accepted one) to be closed at shutdown."""

    stop: threading.Event
    held: list = field(default_factory=list)
    accepted: int = 0
    requests: list = field(default_factory=list)

    def keep(self, sock):
        self.held.append(sock)
        return sock


@contextmanager
def serve(handle: Callable[[socket.socket, Listener], None], ip: str = IP, port: int = 0):
    """Run `handle(conn, listener)` in a thread per accepted connection; yields the port."""
    with serve_listener(handle, ip, port) as (port, _):
        yield port


@contextmanager
def serve_listener(handle: Callable[[socket.socket, Listener], None], ip: str = IP, port: int = 0):
    """As `serve`, yielding (port, Listener): `listener.accepted` counts connections."""
    sock = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((ip, port))
    sock.listen(64)
    sock.settimeout(0.05)
    state = Listener(threading.Event())

    def accept_forever():
        while not state.stop.is_set():
            try:
                conn, _ = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            state.accepted += 1
            state.keep(conn)
            conn.settimeout(READ_TIMEOUT_S)
            threading.Thread(target=_run, args=(handle, conn, state), daemon=True).start()

    thread = threading.Thread(target=accept_forever, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], state
    finally:
        state.stop.set()
        thread.join(2)
        sock.close()
        for held in state.held:
            _close_hard(held)


def _run(handle, conn, state) -> None:
    try:
        handle(conn, state)
    except (OSError, ValueError):
        pass  # the client went away, or the server is stopping


def _close_hard(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a handler blocked in recv()
    except OSError:
        pass
    sock.close()


def read_until_closed(sock) -> None:
    while sock.recv(65536):
        pass


# --- TCP-level servers ---------------------------------------------------------------------------

@contextmanager
def tarpit():
    """Accepts TCP connections, reads what comes, never sends a byte."""
    with serve(lambda conn, _: read_until_closed(conn)) as port:
        yield port


@contextmanager
def reset():
    """Accepts, then resets the connection at once (SO_LINGER on, 0 s: close sends RST, not FIN)."""
    def handle(conn, _):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    with serve(handle) as port:
        yield port


PLAIN_HTTP_BODY = b"<html><body><h1>400 Bad Request</h1>The plain HTTP request was sent to HTTPS port</body></html>"


@contextmanager
def plain_http():
    """A plain HTTP server on the port meant for TLS: whatever comes (a ClientHello, a GET), it
    answers `400 Bad Request` and closes, as nginx does."""
    def handle(conn, _):
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nServer: hostile\r\nContent-Type: text/html\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(PLAIN_HTTP_BODY), PLAIN_HTTP_BODY))

    with serve(handle) as port:
        yield port


def garbage_bytes(size: int = 65536, seed: int = 8) -> bytes:
    """Random bytes whose first byte starts neither a TLS record (0x14-0x17) nor "HTTP"."""
    data = random.Random(seed).randbytes(size)
    return b"\x8f" + data[1:]


@contextmanager
def garbage():
    """Sends 64 KB of random bytes as soon as a client connects, then closes."""
    def handle(conn, _):
        conn.sendall(garbage_bytes())
        conn.shutdown(socket.SHUT_WR)
        read_until_closed(conn)

    with serve(handle) as port:
        yield port


# A TLS handshake record announcing 16 KB (a ServerHello of 16 KB - 4), then zeros: a client keeps
# waiting for the rest of the record, and each read gets its byte within any per-read timeout.
DRIP_BYTES = b"\x16\x03\x03\x40\x00\x02\x00\x3f\xfc" + bytes(16380)


@contextmanager
def drip(interval_s: float = 1.0):
    """Sends one byte every `interval_s` (a slowloris server) until the client leaves."""
    with serve(lambda conn, state: trickle(conn, state, DRIP_BYTES, interval_s)) as port:
        yield port


def trickle(conn, state: Listener, data: bytes, interval_s: float = 1.0, at_once: int = 0) -> None:
    """Send the first `at_once` bytes of `data` in one go, then one byte every `interval_s`, until
    the data, the client or the server ends (every read a client makes gets a byte in time)."""
    if at_once:
        conn.sendall(data[:at_once])
    for byte in data[at_once:]:
        conn.sendall(bytes([byte]))
        if state.stop.wait(interval_s):
            return


@contextmanager
def drip_record(interval_s: float = 1.0):
    """A whole TLS record header at once (handshake, 16 KB announced), then one byte a second:
    the client has a valid record to wait for, and each read gets its byte within any timeout."""
    with serve(lambda conn, state: trickle(conn, state, DRIP_BYTES, interval_s, at_once=5)) as port:
        yield port


# Printable bytes that start no TLS record (0x14-0x17), no SSLv2 record (high bit) and no HTTP.
NOISE_BYTES = b"~" + b"not a TLS record, only noise; " * 600


@contextmanager
def drip_noise(interval_s: float = 1.0):
    """Bytes that never form a TLS record, one a second: OpenSSL fails once it has a record header's
    worth (5 bytes, 7 for the legacy client), so every connection costs 5-7 s and no read times out."""
    with serve(lambda conn, state: trickle(conn, state, NOISE_BYTES, interval_s)) as port:
        yield port


# A TLS 1.2 ServerHello as a server would start it: record header (16 03 03, 122 bytes), handshake
# header (type 2, 118 bytes), version 03 03, then the 32-byte random and the rest, zeros here.
SERVER_HELLO_PREFIX = b"\x16\x03\x03\x00\x7a\x02\x00\x00\x76\x03\x03" + bytes(16384)
SERVER_HELLO_AT_ONCE = 15   # through the first 4 bytes of the random


@contextmanager
def drip_server_hello(interval_s: float = 1.0):
    """Completes TCP, sends the start of a ServerHello at once, then trickles the rest a byte a second."""
    def handle(conn, state):
        conn.recv(65536)  # the ClientHello: answer it, as a real server would
        trickle(conn, state, SERVER_HELLO_PREFIX, interval_s, at_once=SERVER_HELLO_AT_ONCE)

    with serve(handle) as port:
        yield port


@contextmanager
def blackhole():
    """A port whose SYNs are dropped: connect() neither succeeds nor is refused (see the module doc)."""
    with blackhole_with_fillers() as (port, _):
        yield port


@contextmanager
def blackhole_with_fillers():
    """As `blackhole`, yielding (port, the filler sockets that keep its queue full)."""
    listener = socket.socket()
    listener.bind((IP, 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):
            sock = socket.socket()
            fillers.append(sock)
            sock.settimeout(0.3)
            try:
                sock.connect((IP, port))
            except (socket.timeout, TimeoutError):
                break  # the queue is full: this SYN was dropped
        else:
            raise RuntimeError("the accept queue never filled: SYNs are not dropped here")
        yield port, fillers
    finally:
        for sock in fillers:
            sock.close()
        listener.close()


@contextmanager
def trap(ip: str = "127.0.0.2", port: int = 0):
    """A listener that only counts who connects: yields (port, Listener); `accepted` must stay 0."""
    with serve_listener(lambda conn, _: read_until_closed(conn), ip, port) as found:
        yield found


def read_request(conn) -> bytes:
    """The request head, and a body as long as its Content-Length says."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def answer_http_ok(conn, state) -> None:
    state.requests.append(read_request(conn))
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")


@contextmanager
def recording_http(ip: str = IP, port: int = 0):
    """Plain HTTP: answers every request `200 ok` and keeps it; yields (port, Listener)."""
    with serve_listener(answer_http_ok, ip, port) as found:
        yield found


def twin_port(first_ip: str = "127.0.0.2", second_ip: str = IP, attempts: int = 20) -> int:
    """A port free on both addresses (to serve one name's two answers on the same port)."""
    for _ in range(attempts):
        with socket.socket() as one:
            one.bind((first_ip, 0))
            port = one.getsockname()[1]
            with socket.socket() as two:
                try:
                    two.bind((second_ip, port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no port free on both addresses")


# --- TLS servers ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Identity:
    """A certificate chain file and its key, as a TLS server loads them."""
    chain: Path
    key: Path


def issue_identity(pki, name: str, names: tuple[str, ...] = ("localhost",)) -> Identity:
    """A leaf for `names` and 127.0.0.1 from `pki` (tests.support.pki.TestPki, e.g. the TLS lab's),
    so an organization trusting that CA trusts these servers and only their hostility shows."""
    leaf = pki.issue_leaf(name, key="ec256", dns_names=names)
    return Identity(leaf.fullchain, leaf.key)


def server_context(identity: Identity) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(identity.chain, identity.key)
    return context


def serve_tls(context: ssl.SSLContext, after_handshake: Callable, ip: str = IP, port: int = 0):
    def handle(conn, state):
        tls = state.keep(context.wrap_socket(conn, server_side=True))
        after_handshake(tls, state)

    return serve(handle, ip, port)


def answer_ok(tls, _state) -> None:
    tls.recv(65536)
    body = b"ok\n"
    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n%s" % (len(body), body))


@contextmanager
def handshake_then_hang(pki):
    """Completes every TLS handshake, then reads requests and never answers one."""
    context = server_context(issue_identity(pki, "hostile-hang"))
    with serve_tls(context, lambda tls, _: read_until_closed(tls)) as port:
        yield port


@contextmanager
def trickle_every(pki, nth: int = 3, interval_s: float = 1.0, ip: str = IP):
    """A real TLS server (every handshake completes, every request gets `200 ok`), except that every
    `nth` connection after the first gets a ServerHello trickled a byte a second instead: the
    pre-flight (the first connection) passes, and a scan stalls later, a connection at a time."""
    context = server_context(issue_identity(pki, "hostile-every-nth"))
    count = itertools.count(1)
    lock = threading.Lock()

    def handle(conn, state):
        with lock:
            number = next(count)
        if number > 1 and number % nth == 0:
            conn.recv(65536)
            trickle(conn, state, SERVER_HELLO_PREFIX, interval_s, at_once=SERVER_HELLO_AT_ONCE)
            return
        tls = state.keep(context.wrap_socket(conn, server_side=True))
        answer_ok(tls, state)

    with serve(handle, ip) as port:
        yield port


SLOW_HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: " + b"z" * 65536


@contextmanager
def slow_http(pki, interval_s: float = 1.0):
    """Slowloris on the HTTP side: every TLS handshake completes, then the response headers come a
    byte a second and never end (so a page, a load-test request, an HSTS read never completes)."""
    context = server_context(issue_identity(pki, "hostile-slow-http"))

    def respond(tls, state):
        read_request(tls)
        trickle(tls, state, SLOW_HEADERS, interval_s)

    with serve_tls(context, respond) as port:
        yield port


SLOW_SUBRESOURCE_PAGE = b"<!doctype html><title>slow</title><p>page<script src=\"/slow.js\"></script>"


@contextmanager
def slow_subresource(pki, interval_s: float = 1.0):
    """A TLS server whose page is served at once but loads /slow.js, whose body (announced at 64 KB)
    comes a byte a second: the document arrives, its load event never fires."""
    context = server_context(issue_identity(pki, "hostile-slow-subresource"))

    def respond(tls, state):
        request = read_request(tls)
        if request.startswith(b"GET /slow.js"):
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/javascript\r\nContent-Length: 65536\r\n\r\n"
            trickle(tls, state, head + b" " * 65536, interval_s, at_once=len(head))
            return
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                    b"Connection: close\r\n\r\n%s" % (len(SLOW_SUBRESOURCE_PAGE), SLOW_SUBRESOURCE_PAGE))
        tls.close()  # as "Connection: close" says

    with serve_tls(context, respond) as port:
        yield port


EXPECTED_SNI = "other-site.hostile.test"


@contextmanager
def wrong_sni(pki, expected: str = EXPECTED_SNI):
    """A TLS server configured for another name only: any other SNI (or none) gets a fatal
    unrecognized_name alert, as a name-based virtual host without a default server does."""
    context = server_context(issue_identity(pki, "hostile-sni"))

    def check_name(_sslobj, name, _context):
        return None if name == expected else ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME

    context.sni_callback = check_name
    with serve_tls(context, answer_ok) as port:
        yield port


def big_chain_files(pki, directory: Path, certificates: int = 50, target_bytes: int = 1_000_000) -> Identity:
    """leaf + the lab intermediate + padded CA certificates: `certificates` in all, ~`target_bytes` DER."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    leaf = pki.issue_leaf("hostile-big-chain", key="ec256")
    fillers = certificates - 2
    pad = max(0, target_bytes // certificates - 400)
    key = ec.generate_private_key(ec.SECP256R1())
    now = time.time()
    pems = [leaf.fullchain.read_bytes()]
    for index in range(fillers):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Hostile Padding CA {index}")])
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(_utc(now - 86400)).not_valid_after(_utc(now + 86400 * 30))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                # An unknown, non-critical extension of `pad` bytes: what makes the chain heavy.
                .add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier("1.3.6.1.4.1.55555.1"),
                                                          bytes(pad)), critical=False)
                .sign(key, hashes.SHA256()))
        pems.append(cert.public_bytes(serialization.Encoding.PEM))
    chain = directory / "big-chain.pem"
    chain.write_bytes(b"".join(pems))
    return Identity(chain, leaf.key)


def _utc(epoch: float):
    import datetime

    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)


@contextmanager
def big_chain(pki, directory: Path):
    """A TLS server sending a 50-certificate chain of about 1 MB (clients accept 100 KB by default)."""
    context = server_context(big_chain_files(pki, Path(directory)))
    with serve_tls(context, answer_ok) as port:
        yield port


# --- DNS -------------------------------------------------------------------------------------------

Answers = list[str] | Callable[[int], list[str]] | dict[str, list]


@dataclass
class DnsServer:
    """`port` on 127.0.0.1; `queries` lists (name, type) in arrival order."""
    port: int
    queries: list[tuple[str, str]]

    @property
    def address(self) -> tuple[str, int]:
        return (IP, self.port)

    def asked(self, name: str, rdtype: str = "A") -> int:
        return self.queries.count((name, rdtype))


@contextmanager
def dns_server(zone: dict[str, Answers]):
    """A UDP DNS server: for a name in `zone`, A/AAAA answers (TTL 0) from its addresses (a list, or
    a function of how many A queries for that name came before: a rebinding server), or a dict of
    record type -> answers ({"A": [...], "CAA": ['0 issue "letsencrypt.org"'], "RCODE": "SERVFAIL"});
    NXDOMAIN for every other name. Wire format by dnspython."""
    import dns.flags
    import dns.message
    import dns.rcode
    import dns.rdataclass
    import dns.rdatatype
    import dns.rrset

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((IP, 0))
    sock.settimeout(0.05)
    stop = threading.Event()
    server = DnsServer(sock.getsockname()[1], [])
    zone = {name.lower(): answers for name, answers in zone.items()}

    def answers_for(name: str, rdtype: str) -> list[str]:
        answers = zone[name]
        if isinstance(answers, dict):
            return list(answers.get(rdtype, ()))
        if callable(answers):
            answers = answers(max(0, server.asked(name, "A") - 1))  # this round: A queries before this one
        v6 = rdtype == "AAAA"
        return [a for a in answers if (":" in a) == v6]

    def serve_forever():
        while not stop.is_set():
            try:
                wire, peer = sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            query = dns.message.from_wire(wire)
            response = dns.message.make_response(query)
            response.flags |= dns.flags.AA
            question = query.question[0]
            name = question.name.to_text(omit_final_dot=True).lower()
            rdtype = dns.rdatatype.to_text(question.rdtype)
            server.queries.append((name, rdtype))
            if name not in zone:
                response.set_rcode(dns.rcode.NXDOMAIN)
            elif isinstance(zone[name], dict) and "RCODE" in zone[name]:
                response.set_rcode(dns.rcode.from_text(zone[name]["RCODE"]))
            elif rdtype == "CAA" and (found := answers_for(name, rdtype)):
                response.answer.append(dns.rrset.from_text(question.name, 0, dns.rdataclass.IN, rdtype, *found))
            elif rdtype in ("A", "AAAA") and (found := answers_for(name, rdtype)):
                response.answer.append(dns.rrset.from_text(question.name, 0, dns.rdataclass.IN, rdtype, *found))
            sock.sendto(response.to_wire(want_shuffle=False), peer)  # answers in the zone's order

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(2)
        sock.close()


def closed_port() -> int:
    """A port nothing listens on (bound then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
