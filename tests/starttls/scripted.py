"""Hostile STARTTLS servers: a TCP server on 127.0.0.1 that runs a script per connection, for what no
real daemon does (agree to STARTTLS and then send garbage, never greet, trickle or flood a greeting).

    with scripted(garbage_after_starttls) as port: ...
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from contextlib import contextmanager


@contextmanager
def scripted(script):
    """Every connection runs `script(conn)` in its own thread; all close when the block ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[socket.socket] = []
    stopping = threading.Event()

    def serve(conn: socket.socket) -> None:
        try:
            conn.settimeout(30)
            script(conn)
        except OSError:
            pass            # the client gave up on us: that is what these servers are for
        finally:
            conn.close()

    def accept() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            connections.append(conn)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        listener.close()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        thread.join(timeout=5)


def read_line(conn: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            raise ConnectionResetError("client left")
        line += byte
    return line


def smtp_until_go_ahead(conn: socket.socket, go_ahead: bytes = b"220 2.0.0 Ready to start TLS\r\n") -> None:
    """An SMTP server that offers STARTTLS and agrees to it, as far as the go-ahead."""
    conn.sendall(b"220 mail.test ESMTP\r\n")
    read_line(conn)                                         # EHLO
    conn.sendall(b"250-mail.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n")
    read_line(conn)                                         # STARTTLS
    conn.sendall(go_ahead)


def garbage_after_starttls(conn: socket.socket) -> None:
    smtp_until_go_ahead(conn)
    conn.recv(4096)                                         # the ClientHello
    conn.sendall(b"500 5.5.1 What was that?\r\n" * 4)


def close_after_starttls(conn: socket.socket) -> None:
    """Agrees, then sends its FIN at once and drains whatever comes. A plain close() here raced the
    ClientHello: when it arrived first, the kernel answered the unread bytes with a reset instead."""
    smtp_until_go_ahead(conn)
    conn.shutdown(socket.SHUT_WR)
    while conn.recv(4096):
        pass


def reset_after_starttls(conn: socket.socket) -> None:
    """Agrees, then aborts the connection with a reset (SO_LINGER 0), whatever the client sent."""
    smtp_until_go_ahead(conn)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def bytes_after_go_ahead(conn: socket.socket) -> None:
    """The go-ahead with more behind it, before any ClientHello: an injection (RFC 3207 section 5)."""
    smtp_until_go_ahead(conn, b"220 2.0.0 Ready\r\n250 injected answer\r\n")
    conn.recv(4096)


def never_greets(conn: socket.socket) -> None:
    conn.recv(4096)                                         # wait for the client to give up


def trickles_its_greeting(conn: socket.socket) -> None:
    """A multi-line greeting, one byte at a time, that never ends."""
    conn.sendall(b"220-")
    while True:
        conn.sendall(b"x")
        time.sleep(0.2)


def floods_its_greeting(conn: socket.socket) -> None:
    """A greeting of endless continuation lines."""
    line = b"220-" + b"a" * 1000 + b"\r\n"
    for _ in range(200):
        conn.sendall(line)
    conn.recv(4096)
