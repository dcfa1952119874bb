"""ACME Renewal Information end to end (#29 item 2), against an ARI server of our own on 127.0.0.1.

The site serves a Let's Encrypt-shaped leaf from the test CA (90 days, a CRL distribution point, no OCSP
URL); the deployment names the test CA's ACME directory (TLSAUDIT_ARI_DIRECTORIES). After each audit the
alert task asks the CA for the window: shown on the site page and in the API, an alert when it moves
earlier, the expiry rule's "past the window" trigger; nothing is fetched from a private address unless
private targets are allowed, and every failure is a recorded sentence saying whose side it is on.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.test import override_settings

from tests.api.factories import done_audit
from tests.domain.factories import deployment
from tests.support.api import client_with, make_key
from tests.support.pki import LAB_ORG, TestPki
from tests.support.pki import make_key as make_private_key
from tlsaudit.alerts.models import AlertEvent
from tlsaudit.audits.models import RenewalInfo
from tlsaudit.domain import ari
from workers.tasks.alerts import evaluate_audit
from workers.tls.certs import describe_certificate

pytestmark = pytest.mark.django_db
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def lets_encrypt_like_leaf(pki: TestPki, days: int = 90) -> x509.Certificate:
    """A 90-day leaf as Let's Encrypt issues them since 2025: CRL distribution point, no OCSP URL."""
    key = make_private_key("ec256")
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shop.example.com")])
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(pki.intermediate.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - timedelta(days=10)).not_valid_after(NOW - timedelta(days=10) + timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("shop.example.com")]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(pki.intermediate_key.public_key()),
                           critical=False)
            .add_extension(x509.CRLDistributionPoints([x509.DistributionPoint(
                [x509.UniformResourceIdentifier("http://crl.test.example/1.crl")], None, None, None)]), critical=False)
            .sign(pki.intermediate_key, hashes.SHA256()))


def expected_cert_id(cert: x509.Certificate) -> str:
    """RFC 9773 §4.1, written apart from the product's: the AKI's keyIdentifier and the serial's DER
    content octets (read from the certificate's own DER, not recomputed from the integer)."""
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    serial_der = serial_octets_from_der(cert.tbs_certificate_bytes)
    b64 = lambda data: base64.urlsafe_b64encode(data).decode().rstrip("=")  # noqa: E731
    return f"{b64(aki)}.{b64(serial_der)}"


def serial_octets_from_der(tbs: bytes) -> bytes:
    """TBSCertificate ::= SEQUENCE { [0] version, serialNumber INTEGER, ... }: the INTEGER's content."""
    def header(at: int) -> tuple[int, int]:   # (content length, content offset) of the TLV at `at`
        length = tbs[at + 1]
        if length < 0x80:
            return length, at + 2
        count = length & 0x7F
        return int.from_bytes(tbs[at + 2:at + 2 + count], "big"), at + 2 + count
    _, inside = header(0)                       # the SEQUENCE
    version_length, version_at = header(inside)  # [0] EXPLICIT version
    serial_at = version_at + version_length
    assert tbs[serial_at] == 0x02
    length, content = header(serial_at)
    return tbs[content:content + length]


class AriServer:
    """An ACME directory and renewalInfo resource; `windows` maps a certID to its JSON answer, and
    `behaviour` turns the server hostile ("drip", "huge", "garbage", "500")."""

    def __init__(self):
        self.windows: dict[str, dict] = {}
        self.requests: list[str] = []
        self.behaviour = ""
        self.raw_body = None            # sent as the renewalInfo answer, byte for byte, when set
        self.renewal_base = None        # what the directory names as renewalInfo, when set
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 — http.server's name
                server.requests.append(self.path)
                if self.path == "/directory":
                    return self.answer(200, {"renewalInfo": server.renewal_base or f"{server.base}/acme/renewal-info",
                                             "newNonce": f"{server.base}/acme/new-nonce"})
                cert_id = self.path.removeprefix("/acme/renewal-info/")
                if server.raw_body is not None:
                    return self.answer(200, None, raw=server.raw_body.encode())
                if server.behaviour == "500":
                    return self.answer(500, {"type": "urn:ietf:params:acme:error:serverInternal"})
                if server.behaviour == "garbage":
                    return self.answer(200, {"suggestedWindow": {"start": "yesterday", "end": "tomorrow"}})
                if server.behaviour == "huge":
                    return self.answer(200, {"suggestedWindow": {}, "padding": "x" * 100_000})
                if server.behaviour == "drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    for _ in range(60):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.5)
                    return None
                if cert_id not in server.windows:
                    return self.answer(404, {"type": "urn:ietf:params:acme:error:malformed"})
                return self.answer(200, server.windows[cert_id], {"Retry-After": "21600"})

            def answer(self, status, body, headers=None, raw=None):
                data = raw if raw is not None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def directory_setting(self) -> list[dict]:
        return [{"name": "Test ACME CA", "issuer_orgs": [LAB_ORG], "directory": f"{self.base}/directory"}]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def ari_server():
    server = AriServer()
    with override_settings(ARI_DIRECTORIES=server.directory_setting(), ALLOW_PRIVATE_TARGETS=True):
        yield server
    server.close()


@pytest.fixture
def leaf(tmp_path):
    return lets_encrypt_like_leaf(TestPki(tmp_path / "pki"))


def window(start_days: float, end_days: float, explanation: str | None = None) -> dict:
    body = {"suggestedWindow": {"start": (NOW + timedelta(days=start_days)).isoformat().replace("+00:00", "Z"),
                                "end": (NOW + timedelta(days=end_days)).isoformat().replace("+00:00", "Z")}}
    if explanation:
        body["explanationURL"] = explanation
    return body


def audited(site, cert: x509.Certificate):
    audit = done_audit(site, cert=deployment(describe_certificate(cert)), at=NOW)
    evaluate_audit(audit.pk)      # the task's body, in this process: ARI, then the alert rules
    return audit


def test_the_product_names_the_certificate_as_rfc_9773_does(leaf):
    assert ari.cert_id(bytes.fromhex("69885B6B87464041E1B37B847BA0AE2CDE01C8D4"), 0x87654321) == "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"
    aki = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    assert ari.cert_id(aki, leaf.serial_number) == expected_cert_id(leaf)


def test_the_window_is_fetched_shown_and_an_earlier_one_alerts(ari_server, leaf, site_a, org_a, login, alice):
    cert_id = expected_cert_id(leaf)
    ari_server.windows[cert_id] = window(48, 50)
    audited(site_a, leaf)
    row = RenewalInfo.objects.get(site=site_a)
    assert (row.status, row.ca_name, row.cert_id, row.error) == ("ok", "Test ACME CA", cert_id, "")
    assert row.window_end == NOW + timedelta(days=50)
    assert ari_server.requests == ["/directory", f"/acme/renewal-info/{cert_id}"]

    page = login(alice).get(site_a.get_absolute_url()).content.decode()
    assert "Test ACME CA suggests renewing between" in page and "The CA moved" not in page
    assert "The served certificate lives 90 days" in page
    _, token = make_key(org_a)
    body = client_with(token).get(f"/api/v1/sites/{site_a.pk}/").json()
    assert body["renewal_window_end"].startswith((NOW + timedelta(days=50)).strftime("%Y-%m-%dT%H:%M"))
    assert body["renewal_window_moved_from"] is None

    # The CA moves the window to tomorrow, with an explanation: one alert, once.
    ari_server.windows[cert_id] = window(0, 1, "https://ca.test.example/incident/42")
    audited(site_a, leaf)
    audited(site_a, leaf)
    [event] = AlertEvent.objects.filter(kind="renewal_window_moved")
    assert event.title.startswith("Test ACME CA asks for this certificate to be renewed by ")
    assert "https://ca.test.example/incident/42" in event.title
    page = login(alice).get(site_a.get_absolute_url()).content.decode()
    section = page.split('data-testid="renewal"')[1].split("</section>")[0]
    assert 'data-testid="renewal-moved"' in section and "the CA's explanation" in section, section
    body = client_with(token).get(f"/api/v1/sites/{site_a.pk}/").json()
    assert body["renewal_window_moved_from"].startswith((NOW + timedelta(days=50)).strftime("%Y-%m-%dT%H:%M"))


def test_past_the_window_end_the_expiry_rule_fires(ari_server, leaf, site_a):
    """A 90-day certificate 10 days old is far from two thirds used; its CA's window ended an hour ago."""
    ari_server.windows[expected_cert_id(leaf)] = window(-2, -1 / 24)
    audited(site_a, leaf)
    [event] = AlertEvent.objects.filter(kind="certificate_expiring")
    assert event.payload["trigger"] == "ari"
    assert event.title.startswith("Certificate not renewed within its CA's renewal window")


def test_nothing_is_fetched_from_a_private_address_unless_allowed(ari_server, leaf, site_a):
    ari_server.windows[expected_cert_id(leaf)] = window(48, 50)
    with override_settings(ALLOW_PRIVATE_TARGETS=False):
        audited(site_a, leaf)
    row = RenewalInfo.objects.get(site=site_a)
    assert row.status == "failed" and ari_server.requests == []
    assert row.error.startswith("Test ACME CA's ACME directory (http://127.0.0.1:")
    assert "127.0.0.1 is a loopback address" in row.error
    assert "ACME Renewal Information requests only go to public addresses (this installation's guard" in row.error


def test_a_certificate_the_ca_does_not_know_is_said_so(ari_server, leaf, site_a):
    audited(site_a, leaf)
    row = RenewalInfo.objects.get(site=site_a)
    assert row.status == "unknown" and "does not know this certificate (HTTP 404)" in row.error


@pytest.mark.parametrize("behaviour, words", [
    ("500", "could not be read: HTTP 500 (the CA's server)"),
    ("garbage", "is unreadable: not an ARI answer"),
    ("huge", "the answer is larger than 16384 bytes"),
    ("drip", "no complete answer within 2 s (the network or the CA's server)"),
])
def test_a_hostile_ari_server_ends_as_a_recorded_failure_within_its_deadline(ari_server, leaf, site_a, behaviour,
                                                                               words, settings):
    settings.ARI_TIMEOUT_SECONDS = 2   # the deadline, shortened as every wait a test sits through
    ari_server.behaviour = behaviour
    started = time.monotonic()
    audited(site_a, leaf)
    assert time.monotonic() - started < 6
    row = RenewalInfo.objects.get(site=site_a)
    assert row.status == "failed" and words in row.error, row.error
    assert AlertEvent.objects.filter(kind="renewal_window_moved").count() == 0


def test_a_certificate_from_a_ca_without_ari_asks_nobody(ari_server, site_a, tmp_path, login, alice):
    pki = TestPki(tmp_path / "other")
    other = pki.issue_leaf("plain").certificate
    with override_settings(ARI_DIRECTORIES=[]):
        audited(site_a, other)
    assert not RenewalInfo.objects.exists() and ari_server.requests == []
    assert "publishes no renewal window we know of" in login(alice).get(site_a.get_absolute_url()).content.decode()


@pytest.mark.parametrize("behaviour, body, words", [
    ("nested", "[" * 16000, "not an ARI answer (RecursionError"),
    ("year 1", '{"suggestedWindow": {"start": "0001-01-01T00:00:00+14:00", "end": "0001-01-02T00:00:00Z"}}',
     "not an ARI answer"),
    ("far future", '{"suggestedWindow": {"start": "2999-01-01T00:00:00Z", "end": "2999-01-02T00:00:00Z"}}',
     "is outside any certificate's life"),
])
def test_answers_built_to_crash_the_task_are_recorded_failures(ari_server, leaf, site_a, behaviour, body, words):
    ari_server.raw_body = body
    audited(site_a, leaf)
    row = RenewalInfo.objects.get(site=site_a)
    assert row.status == "failed" and words in row.error, row.error


def test_a_directory_that_sends_renewal_requests_elsewhere_is_not_followed(ari_server, leaf, site_a):
    ari_server.renewal_base = "http://127.0.0.2:9/acme/renewal-info"
    audited(site_a, leaf)
    row = RenewalInfo.objects.get(site=site_a)
    assert row.status == "failed" and "sends renewal requests to another host (127.0.0.2): not followed" in row.error
    assert ari_server.requests == ["/directory"]


def test_a_self_signed_certificate_claiming_a_public_ca_asks_that_ca_nothing(site_a, settings, login, alice):
    """O=Let's Encrypt on a certificate no store trusts: Let's Encrypt's ARI server is never asked. Every name
    the app looks up goes to a DNS server of ours, which records the questions: none comes."""
    from cryptography.hazmat.primitives.asymmetric import ec

    from tests.hostile import dns_server

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Let's Encrypt"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "R12")])
    forged = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
              .serial_number(x509.random_serial_number()).not_valid_before(NOW - timedelta(days=1))
              .not_valid_after(NOW + timedelta(days=89))
              .add_extension(x509.AuthorityKeyIdentifier(bytes(150), None, None), critical=False)
              .sign(key, hashes.SHA256()))
    with dns_server({}) as dns:
        settings.DNS_RESOLVER = dns.address
        audit = done_audit(site_a, cert=deployment(describe_certificate(forged), trusted=False), at=NOW)
        evaluate_audit(audit.pk)
    assert dns.queries == [] and not RenewalInfo.objects.exists()
    assert "publishes no renewal window we know of" in login(alice).get(site_a.get_absolute_url()).content.decode()
