"""Real local servers for alert tests: an SMTP server (aiosmtpd) and an HTTP webhook receiver."""

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Inbox:
    """aiosmtpd handler: keeps every envelope it accepts."""

    def __init__(self):
        self.envelopes = []

    async def handle_DATA(self, server, session, envelope):
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on 127.0.0.1; Django's SMTP backend is pointed at it."""
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    yield inbox
    controller.stop()


@dataclass
class Receiver:
    url: str
    statuses: list = field(default_factory=list)   # answers to give, in order; then 200
    requests: list = field(default_factory=list)   # (headers, raw body) as received

    def json(self, n=-1):
        return json.loads(self.requests[n][1])


@pytest.fixture
def webhook_receiver():
    """A threaded HTTP server on 127.0.0.1 that records each POST and answers as scripted."""
    receiver = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            receiver.requests.append((dict(self.headers), body))
            status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_port}/hooks/tlsaudit?team=ops"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    server.shutdown()
    server.server_close()
