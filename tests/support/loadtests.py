"""Helpers of the performance tests: a site's proof recorded as passed, waiting for a run, and a tiny HTTP
server and a tiny DNS server on 127.0.0.1 (real sockets, real packets)."""

import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.utils import timezone

from tests.support import waiting


def verify(site, method="http", ips=("127.0.0.1",)):
    """The site's proof, as check_now records a pass: made at `ips` (every lab server is on 127.0.0.1), so
    a run against an unpinned name that resolves there may load it."""
    from tlsaudit.loadtests.verification import verification_for

    verification = verification_for(site)
    verification.record_pass(method, timezone.now(), list(ips))
    verification.save()
    return verification


def wait_finished(run, timeout=60.0):
    return waiting.wait_finished(run, timeout, lambda r: r.progress)


# --- a tiny HTTP server: path -> (status, headers, body) ------------------------------------

@dataclass(frozen=True)
class Request:
    path: str           # as sent, query included
    headers: dict
    raw: bytes          # request line and headers, as received


@contextmanager
def http_server(routes: dict, fallback=None, requests: list | None = None, port: int = 0):
    """Answers GET path (query ignored) from `routes` on 127.0.0.1:`port` (0: any free port, yielded);
    other paths from `fallback(request)` if given (a soft-404, an echo), else 404. Every request lands in
    `requests` when a list is given."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            request = Request(self.path, dict(self.headers.items()),
                              f"{self.requestline}\r\n".encode() + bytes(self.headers))
            if requests is not None:
                requests.append(request)
            answer = routes.get(self.path.split("?")[0])
            if answer is None:
                answer = fallback(request) if fallback else (404, {}, b"not found")
            status, headers, body = answer
            body = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


# --- a tiny DNS server: name -> TXT records, NXDOMAIN otherwise ------------------------------

@contextmanager
def dns_server(records: dict[str, list]):
    """Answers TXT queries over UDP on 127.0.0.1 with dnspython's own wire format. A record is a
    string, or a tuple of strings (one TXT record split into several character-strings)."""
    import dns.flags
    import dns.message
    import dns.rcode
    import dns.rdataclass
    import dns.rdatatype
    import dns.rrset

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()
    queries = []

    def serve():
        while not stop.is_set():
            try:
                wire, peer = sock.recvfrom(4096)
            except socket.timeout:
                continue
            query = dns.message.from_wire(wire)
            response = dns.message.make_response(query)
            response.flags |= dns.flags.AA
            question = query.question[0]
            name = question.name.to_text(omit_final_dot=True).lower()
            queries.append(name)
            if name not in records:
                response.set_rcode(dns.rcode.NXDOMAIN)
            elif question.rdtype == dns.rdatatype.TXT and records[name]:
                quoted = [" ".join(f'"{part}"' for part in ((value,) if isinstance(value, str) else value))
                          for value in records[name]]
                response.answer.append(dns.rrset.from_text(question.name, 60, dns.rdataclass.IN,
                                                           dns.rdatatype.TXT, *quoted))
            sock.sendto(response.to_wire(), peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], queries
    finally:
        stop.set()
        thread.join(2)
        sock.close()
