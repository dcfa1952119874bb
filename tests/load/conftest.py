"""Hostile HTTP servers for the load engine's failure columns (issue #4 "Bad input").

Each is a real TCP server on 127.0.0.1 (ephemeral port) in a thread, one request per
connection, torn down after the test. `hostile_http("name")` starts one and returns its port;
`echo_requests` holds the raw requests the "ok" server received (to check what we send).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

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
    def __init__(self, handle: Callable, behaviours: Behaviours):
        self.handle = handle
        self.behaviours = behaviours
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
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
                request = read_request(conn)
                with self.behaviours.lock:
                    self.behaviours.requests.append(request)
                self.handle(conn, request, index)
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


@pytest.fixture
def echo_requests() -> list[bytes]:
    return []


@pytest.fixture
def hostile_http(echo_requests):
    """hostile_http("slow") -> port of a fresh server with that behaviour (see Behaviours)."""
    servers: list[HostileServer] = []

    def start(name: str) -> int:
        behaviours = Behaviours()
        behaviours.requests = echo_requests
        server = HostileServer(getattr(behaviours, name), behaviours)
        servers.append(server)
        return server.port

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def refused_port() -> int:
    """A loopback port with nothing listening (picked free by the kernel, then released)."""
    return free_ports(1)[0]
