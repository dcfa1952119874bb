"""The web container's health check (tlsaudit/core/healthcheck.py): healthy only when pages are served.
Run as docker compose runs it, a separate process, against a real server; `make stack-test` runs it in
the container."""

import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)


def healthcheck(port: int, allowed_hosts: str = "localhost") -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "ALLOWED_HOSTS": allowed_hosts, "TLSAUDIT_HEALTHCHECK_PORT": str(port)}
    return subprocess.run([sys.executable, "-m", "tlsaudit.core.healthcheck"], env=env, cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=30)


def test_a_server_serving_the_login_page_and_its_stylesheet_is_healthy(live_server):
    result = healthcheck(urlsplit(live_server.url).port, allowed_hosts="localhost,127.0.0.1")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "healthy: the login page and its stylesheet are served"


class Answer(BaseHTTPRequestHandler):
    """/accounts/login/ answers what the test sets; the stylesheet 404s (static files never collected)."""
    status, extra_headers, body = 200, {}, b'<link rel="stylesheet" href="/static/css/app.css">'

    def do_GET(self):
        code = self.status if self.path == "/accounts/login/" else 404
        self.send_response(code)
        for name, value in type(self).extra_headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(self.body if code == 200 else b"")

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_web():
    server = HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    Answer.status, Answer.extra_headers = 200, {}


@pytest.mark.parametrize("status, headers, words", [
    (200, {}, "the stylesheet /static/css/app.css answered 404 (static files not collected?)"),
    (500, {}, "the login page answered 500"),
    (400, {}, "the login page answered 400 for Host 'localhost': is it in ALLOWED_HOSTS?"),
    (301, {"Location": "https://localhost/accounts/login/"}, "SECURE_SSL_REDIRECT is on but BEHIND_TLS_PROXY is not"),
])
def test_a_server_that_does_not_serve_pages_is_unhealthy_and_says_why(fake_web, status, headers, words):
    Answer.status, Answer.extra_headers = status, headers
    result = healthcheck(fake_web.server_address[1])
    assert result.returncode == 1 and words in result.stdout, result.stdout


def test_no_server_is_unhealthy_within_its_timeout():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = healthcheck(port)
    assert result.returncode == 1 and result.stdout.startswith(f"unhealthy: no answer on port {port}")
