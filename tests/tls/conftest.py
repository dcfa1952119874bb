"""Real servers on 127.0.0.1 for the TLS engine tests: `openssl s_server` subprocesses, small
Python HTTPS/HTTP servers in threads, a silent "black hole" port and a closed port."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pki
import pytest


@dataclass
class TestPki:
    root: pki.Issued
    intermediate: pki.Issued
    leaf: pki.Issued
    root_file: Path
    leaf_file: Path
    key_file: Path
    intermediate_file: Path
    chain_file: Path            # leaf + intermediate, what a well-configured server sends


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen | None = None, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited early: {process.stderr.read().decode(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout} s")


@pytest.fixture(scope="session")
def test_pki(tmp_path_factory) -> TestPki:
    """Root -> intermediate -> leaf (RSA 2048, SAN localhost + 127.0.0.1)."""
    folder = tmp_path_factory.mktemp("pki")
    root = pki.make_ca("TLS Audit Test Root")
    intermediate = pki.make_ca("TLS Audit Test Intermediate", issuer=root)
    leaf = pki.issue_leaf(intermediate, dns=("localhost",), ips=("127.0.0.1",), key="rsa2048")
    return TestPki(
        root=root, intermediate=intermediate, leaf=leaf,
        root_file=pki.write_pem(folder / "root.pem", root),
        leaf_file=pki.write_pem(folder / "leaf.pem", leaf),
        key_file=pki.write_key(folder / "leaf.key", leaf),
        intermediate_file=pki.write_pem(folder / "intermediate.pem", intermediate),
        chain_file=pki.write_pem(folder / "chain.pem", leaf, intermediate),
    )


@pytest.fixture(scope="session")
def s_server(test_pki):
    """Factory: start `openssl s_server -www` with extra args (`www=False`: a server that speaks no HTTP,
    one connection at a time); returns its port. All stop at session end."""
    processes: list[subprocess.Popen] = []

    def start(*args: str, send_intermediate: bool = True, cert: Path | None = None, key: Path | None = None,
              www: bool = True) -> int:
        port = free_port()
        command = ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", *(["-www"] if www else []), "-quiet",
                   "-cert", str(cert or test_pki.leaf_file), "-key", str(key or test_pki.key_file), *args]
        if send_intermediate:
            command += ["-cert_chain", str(test_pki.intermediate_file)]
        # Without -www, s_server ends each connection when its stdin ends: a pipe we never write keeps it quiet.
        stdin = subprocess.DEVNULL if www else subprocess.PIPE
        process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   env={**os.environ, "OPENSSL_CONF": "/dev/null"})
        processes.append(process)
        wait_for_port(port, process)
        return port

    yield start
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=10)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass        # scanners send odd handshakes on purpose


def _handler(routes: dict[str, tuple[int, dict[str, str]]], tls: ssl.SSLContext | None):
    class Handler(BaseHTTPRequestHandler):
        def setup(self) -> None:
            self.request.settimeout(5)
            if tls is not None:
                self.request = tls.wrap_socket(self.request, server_side=True)
            super().setup()

        def do_GET(self) -> None:
            status, headers = routes.get(self.path.split("?")[0], (404, {}))
            body = b"tls audit test\n"
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET

        def log_message(self, *args) -> None:
            pass

    return Handler


@pytest.fixture(scope="session")
def http_server(test_pki):
    """Factory: a threaded HTTP(S) server with fixed routes {path: (status, headers)}; returns its port."""
    servers: list[_QuietServer] = []

    def start(routes: dict[str, tuple[int, dict[str, str]]], tls: bool = True) -> int:
        context = None
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(test_pki.chain_file, test_pki.key_file)
        server = _QuietServer(("127.0.0.1", 0), _handler(routes, context))
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def blackhole_port():
    """Accepts TCP connections and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_forever() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_forever, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=2)
    for sock in held:
        sock.close()
    listener.close()


@pytest.fixture
def closed_port() -> int:
    return free_port()          # bound then released: nothing listens there


@pytest.fixture(scope="session")
def go_tls_server(test_pki):
    """Factory: a Go crypto/tls HTTPS server (tests/support/gotls); `go_tls_server(groups="X25519,P256")`."""
    from tests.support.gotls import GoTlsServers, build_server

    servers = GoTlsServers(build_server(), test_pki.chain_file, test_pki.key_file)
    yield servers
    servers.stop()
