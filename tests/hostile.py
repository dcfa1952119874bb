"""Hostile local servers for bad-target tests: each runs in a thread on 127.0.0.1 and stops at exit."""

import socket
import threading
from contextlib import contextmanager


@contextmanager
def tarpit():
    """Accepts TCP connections and never sends a byte."""
    with _server(lambda conn: conn.recv(65536) and None) as port:
        yield port


@contextmanager
def _server(handle):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.2)
    stop = threading.Event()
    held = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            held.append(conn)
            conn.settimeout(60)
            threading.Thread(target=_run, args=(handle, conn), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        listener.close()
        for conn in held:
            conn.close()


def _run(handle, conn):
    try:
        handle(conn)
    except OSError:
        pass


def closed_port() -> int:
    """A port nothing listens on (bound then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
