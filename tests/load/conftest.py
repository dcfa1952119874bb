"""Hostile HTTP servers for the load engine's failure columns (issue #4 "Bad input").

Each is a real TCP server on 127.0.0.1 (ephemeral port) in a thread, one request per
connection, torn down after the test. `hostile_http("name")` starts one and returns its port;
`hostile_https("name")` the same behind TLS (a leaf of a test CA: the engine reads and ends
TLS streams on other code paths than plain ones); `echo_requests` holds the raw requests the
"ok" server received (to check what we send).
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.pki import TestPki
from tests.support.tls_servers import free_ports


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def response(status: str, body: bytes, extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nServer: hostile/1\r\nContent-Length: {len(body)}\r\n{extra}"
            f"Connection: close\r\n\r\n").encode() + body


class Behaviours:
    """What each hostile server does with one request (`index` counts requests, from 0)."""

    def __init__(self):
        self.requests: list[bytes] = []
        self.lock = threading.Lock()

    def ok(self, conn, request, index):
        conn.sendall(response("200 OK", b"hello"))

    def close_mid_response(self, conn, request, index):
        # Promises 100 bytes, sends 10, closes: a receive failure.
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n" + b"x" * 10)

    def slow(self, conn, request, index):
        time.sleep(4.0)  # far longer than the tests' timeout, so a wait for it cannot pass for one
        conn.sendall(response("200 OK", b"late"))

    def status_503(self, conn, request, index):
        conn.sendall(response("503 Service Unavailable", b"busy"))

    def varying_length(self, conn, request, index):
        # Correct Content-Length each time, but every other body is longer: ab's Length column.
        conn.sendall(response("200 OK", b"a" if index % 2 == 0 else b"bb"))

    def garbage(self, conn, request, index):
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\nnot http at all\r\n\r\n")

    def no_length(self, conn, request, index):
        # HTTP/1.0 style: the body ends when the connection does.
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"until-eof")

    def no_length_long_headers(self, conn, request, index):
        # The same, with 100 KB of headers: more than one read before the body starts.
        cookies = "".join(f"Set-Cookie: c{i}={'v' * 1000}\r\n" for i in range(100))
        conn.sendall(f"HTTP/1.1 200 OK\r\n{cookies}Connection: close\r\n\r\n".encode() + b"until-eof")

    def slowloris(self, conn, request, index):
        # A head trickled one byte per 50 ms (~3 s in all): only the request timeout ends it.
        for byte in response("200 OK", b"trickled"):
            conn.sendall(bytes([byte]))
            time.sleep(0.05)

    def reset(self, conn, request, index):
        # Reads the request, then resets the connection (SO_LINGER 0): no response, a RST.
        raw = conn if not isinstance(conn, ssl.SSLSocket) else socket.socket(fileno=conn.fileno())
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if raw is not conn:
            raw.detach()
        conn.close()

    def longer_than_its_length(self, conn, request, index):
        # Content-Length 2, then 7 body bytes: the response is complete after 2, the rest is ignored.
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nokextra")

    def chunked(self, conn, request, index):
        # A chunked body (3 chunks, a trailer), kept alive once, then closed.
        body = b"4\r\nwiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: t\r\n\r\n"
        head = b"HTTP/1.1 200 OK\r\nServer: hostile/1\r\nTransfer-Encoding: chunked\r\n"
        conn.sendall(head + b"\r\n" + body)
        if read_request(conn):
            conn.sendall(head + b"Connection: close\r\n\r\n" + body)

    def many_small_chunks(self, conn, request, index):
        # 250,000 one-byte chunks: 1.25 MB of chunk framing in one body, more than a head may be, yet
        # valid HTTP (a streaming endpoint); then closed.
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        conn.sendall(head + b"1\r\nx\r\n" * 250_000 + b"0\r\n\r\n")

    def bad_chunk_size(self, conn, request, index):
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")

    def http10_keepalive(self, conn, request, index):
        # HTTP/1.0 keeps a connection only when it says "Connection: keep-alive" (twice here).
        for _ in range(2):
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc")
            if not read_request(conn):
                return
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc")

    def no_content_204(self, conn, request, index):
        conn.sendall(b"HTTP/1.1 204 No Content\r\nServer: hostile/1\r\nConnection: close\r\n\r\n")

    def two_lengths(self, conn, request, index):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")

    def keepalive_then_idle_close(self, conn, request, index):
        # Answers one request keeping the connection alive, then closes when the next one comes,
        # without a byte: what a server does when its keep-alive timeout races our request.
        conn.sendall(response("200 OK", b"kept").replace(b"Connection: close", b"Connection: keep-alive"))
        read_request(conn)

    def keepalive_then_truncated(self, conn, request, index):
        # First response complete and kept alive, the second cut short: a receive failure.
        conn.sendall(response("200 OK", b"kept").replace(b"Connection: close", b"Connection: keep-alive"))
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)


class HostileServer:
    backlog = 256

    def __init__(self, handle: Callable, behaviours: Behaviours, tls: ssl.SSLContext | None = None):
        self.handle = handle
        self.behaviours = behaviours
        self.tls = tls
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(self.backlog)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.count = 0
        self.threads: list[threading.Thread] = []
        self.acceptor = threading.Thread(target=self.accept_loop, daemon=True, name=f"hostile-{self.port}")
        self.acceptor.start()

    def accept_loop(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            index, self.count = self.count, self.count + 1
            thread = threading.Thread(target=self.serve, args=(conn, index), daemon=True)
            thread.start()
            self.threads.append(thread)

    def serve(self, conn: socket.socket, index: int) -> None:
        with conn:
            try:
                if self.tls is not None:
                    conn.settimeout(5)
                    conn = self.tls.wrap_socket(conn, server_side=True)
                request = read_request(conn)
                with self.behaviours.lock:
                    self.behaviours.requests.append(request)
                self.handle(conn, request, index)
                if conn.fileno() < 0:
                    return  # the behaviour closed it itself (reset)
                if isinstance(conn, ssl.SSLSocket):
                    conn = conn.unwrap() if index % 2 else conn  # with and without close_notify
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(2)
                while conn.recv(65536):  # let the client close first or see our FIN
                    pass
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.acceptor.join(timeout=2)
        self.listener.close()
        for thread in self.threads:
            thread.join(timeout=3)


class LateAcceptingServer(HostileServer):
    """A server whose TCP handshake completes late: its accept queue (backlog 0) is held full by
    one idle connection, so the kernel drops new SYNs and clients retransmit theirs after the
    initial RTO (1 s). The queue is freed once a client's socket is seen waiting in SYN_SENT
    (/proc/net/tcp), not after a fixed delay: on a busy machine the client may start late, and
    then it must still meet a full queue. Its retransmitted SYN gets in."""

    backlog = 0
    WAIT_FOR_CLIENT_S = 20

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.filler = socket.create_connection(("127.0.0.1", self.port))

    def accept_loop(self) -> None:
        deadline = time.monotonic() + self.WAIT_FOR_CLIENT_S
        while not self.stop.is_set() and time.monotonic() < deadline:
            # Still in SYN_SENT 20 ms later: its SYN was dropped (one let in completes in µs here).
            if syn_sent_to(self.port) and not self.stop.wait(0.02) and syn_sent_to(self.port):
                break
            time.sleep(0.005)
        filler, _ = self.listener.accept()
        filler.close()
        super().accept_loop()

    def close(self) -> None:
        super().close()
        self.filler.close()


def syn_sent_to(port: int) -> bool:
    """Is a socket of this network namespace in SYN_SENT towards 127.0.0.1:port?"""
    remote = f"0100007F:{port:04X}"
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(row.split()[2] == remote and row.split()[3] == "02" for row in rows)


@pytest.fixture
def late_accepting(echo_requests, hostile_tls_context):
    """late_accepting("http" | "https") -> port of an "ok" server that completes TCP handshakes ~1 s late."""
    servers: list[HostileServer] = []

    def start(scheme: str) -> int:
        behaviours = Behaviours()
        behaviours.requests = echo_requests
        server = LateAcceptingServer(behaviours.ok, behaviours, hostile_tls_context if scheme == "https" else None)
        servers.append(server)
        return server.port

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def echo_requests() -> list[bytes]:
    return []


def hostile_servers(echo_requests, tls: ssl.SSLContext | None):
    servers: list[HostileServer] = []

    def start(name: str) -> int:
        behaviours = Behaviours()
        behaviours.requests = echo_requests
        server = HostileServer(getattr(behaviours, name), behaviours, tls)
        servers.append(server)
        return server.port

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def hostile_http(echo_requests):
    """hostile_http("slow") -> port of a fresh server with that behaviour (see Behaviours)."""
    yield from hostile_servers(echo_requests, None)


@pytest.fixture(scope="session")
def hostile_tls_context(tmp_path_factory) -> ssl.SSLContext:
    leaf = TestPki(tmp_path_factory.mktemp("hostile-pki")).issue_leaf("hostile", key="ec256")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf.fullchain, leaf.key)
    return context


@pytest.fixture
def hostile_https(echo_requests, hostile_tls_context):
    """hostile_https("slow") -> port of the same behaviour behind TLS."""
    yield from hostile_servers(echo_requests, hostile_tls_context)


@pytest.fixture(params=["http", "https"])
def hostile(request):
    """(scheme, start) for both transports: hostile("slow") -> port."""
    fixture = "hostile_http" if request.param == "http" else "hostile_https"
    return request.param, request.getfixturevalue(fixture)


@pytest.fixture
def refused_port() -> int:
    """A loopback port with nothing listening (picked free by the kernel, then released)."""
    return free_ports(1)[0]


@pytest.fixture(params=["python", "c"])
def load_engine(request, monkeypatch) -> str:
    """Run the test on the Python engine, then on the C loop (forced: TLSAUDIT_LOAD_ENGINE=c fails
    rather than falling back, so a missing build cannot pass for the C engine)."""
    monkeypatch.setenv("TLSAUDIT_LOAD_ENGINE", request.param)
    return request.param
