"""Small TLS client probes for the lab: what a server really offers, seen from a permissive client.

Python's `ssl` answers protocols, suites and the leaf; `openssl s_client` answers what Python
cannot see (ephemeral key size, the certificate chain the server sends).
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import subprocess
import warnings
from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.verification import DNSName, PolicyBuilder, Store, VerificationError

from tests.support.tls_servers import HOSTNAME, IP

VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
# "ALL" leaves out the NULL-encryption suites; COMPLEMENTOFALL adds them back.
EVERY_SUITE = "ALL:COMPLEMENTOFALL:@SECLEVEL=0"
S_CLIENT_FLAGS = {"TLSv1": "-tls1", "TLSv1.1": "-tls1_1", "TLSv1.2": "-tls1_2", "TLSv1.3": "-tls1_3"}


@dataclass(frozen=True)
class Handshake:
    version: str
    cipher: str
    leaf_der: bytes


def permissive_context(version: str | None = None, ciphers: str = "ALL:@SECLEVEL=0") -> ssl.SSLContext:
    """A client that accepts anything (TLS 1.0, RSA-1024, DH-1024, no verification), pinned to `version`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_ciphers(ciphers)
    return pin_versions(context, version)


def pin_versions(context: ssl.SSLContext, version: str | None) -> ssl.SSLContext:
    """Allow exactly `version`, or TLS 1.0 and up when None (Python's default floor is TLS 1.2)."""
    with warnings.catch_warnings():
        # Python deprecates TLSv1/TLSv1.1, but reaching the legacy fixtures is the point here.
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = VERSIONS[version or "TLSv1"]
        if version:
            context.maximum_version = VERSIONS[version]
    return context


def handshake(port: int, context: ssl.SSLContext, server_name: str = HOSTNAME) -> Handshake | None:
    """One handshake; None when the server refuses it (alert or no shared version/suite)."""
    try:
        with ssl_connection(port, context, server_name) as tls:
            return Handshake(tls.version(), tls.cipher()[0], tls.getpeercert(binary_form=True))
    except ssl.SSLError:
        return None


def ssl_connection(port: int, context: ssl.SSLContext, server_name: str = HOSTNAME) -> ssl.SSLSocket:
    raw = socket.create_connection((IP, port), timeout=5)
    try:
        return context.wrap_socket(raw, server_hostname=server_name)
    except BaseException:
        raw.close()
        raise


def accepted_versions(port: int) -> tuple[str, ...]:
    return tuple(v for v in VERSIONS if handshake(port, permissive_context(v)) is not None)


def accepted_suites(port: int, version: str) -> set[str]:
    """Every suite the server accepts at `version` (<= TLS 1.2), removing each one it picks and retrying.

    N accepted suites cost N+1 handshakes instead of one per candidate suite.
    """
    candidates = [c["name"] for c in permissive_context(version, EVERY_SUITE).get_ciphers()
                  if c["protocol"] != "TLSv1.3"]
    accepted: set[str] = set()
    while candidates:
        result = handshake(port, permissive_context(version, ":".join(candidates) + ":@SECLEVEL=0"))
        if result is None:
            break
        accepted.add(result.cipher)
        candidates.remove(result.cipher)
    return accepted


def resumes_session(port: int, version: str = "TLSv1.2") -> bool:
    """Full handshake, then a second one offering the first session (and one request); True if resumed."""
    context = permissive_context(version)
    with ssl_connection(port, context) as first:
        session = first.session
    raw = socket.create_connection((IP, port), timeout=5)
    with context.wrap_socket(raw, server_hostname=HOSTNAME, session=session) as second:
        second.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        second.recv(1024)
        return second.session_reused


def s_client(port: int, *args: str, server_name: str = HOSTNAME) -> str:
    """Run `openssl s_client` once against the lab and return its combined output."""
    command = ["openssl", "s_client", "-connect", f"{IP}:{port}", "-servername", server_name, *args]
    done = subprocess.run(command, input=b"", capture_output=True, timeout=10)
    return (done.stdout + done.stderr).decode(errors="replace")


def server_temp_key(port: int, version: str, cipher: str) -> str | None:
    """'DH, 1024 bits' / 'X25519, 253 bits' / 'ECDH, secp384r1, 384 bits' as s_client reports it."""
    out = s_client(port, S_CLIENT_FLAGS[version], "-cipher", f"{cipher}:@SECLEVEL=0")
    match = re.search(r"Server Temp Key: (.+)", out)
    return match.group(1).strip() if match else None


def strict_context(cafile: str) -> ssl.SSLContext:
    """Verifies the chain against `cafile` and the name "localhost", like a browser with our CA installed."""
    context = ssl.create_default_context(cafile=cafile)
    context.set_ciphers("ALL:@SECLEVEL=0")  # so legacy fixtures are judged on their chain only
    return pin_versions(context, None)


def get_page(port: int, context: ssl.SSLContext, path: str = "/") -> tuple[int, dict[str, str], bytes]:
    """GET `path` over TLS; returns (status, headers, body)."""
    connection = http.client.HTTPSConnection(HOSTNAME, port, context=context, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def verify_error(port: int, cafile: str) -> tuple[int, str] | None:
    """(verify_code, message) when a strict client verifying against `cafile` rejects the server, else None."""
    try:
        with ssl_connection(port, strict_context(cafile)):
            return None
    except ssl.SSLCertVerificationError as error:
        return error.verify_code, error.verify_message


def sent_chain(port: int) -> list[x509.Certificate]:
    """The certificates the server sends, leaf first, parsed from `s_client -showcerts`."""
    out = s_client(port, "-showcerts", "-cipher", "ALL:@SECLEVEL=0")
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", out, flags=re.DOTALL)
    return [x509.load_pem_x509_certificate(b.encode()) for b in blocks]


def verify_like_sslyze(chain: list[x509.Certificate], cafile: str, hostname: str = HOSTNAME) -> str | None:
    """Validate as sslyze 6.x does with a custom CA file (cryptography's verifier); None or the error text."""
    roots = x509.load_pem_x509_certificates(open(cafile, "rb").read())
    verifier = PolicyBuilder().store(Store(roots)).build_server_verifier(DNSName(hostname))
    try:
        verifier.verify(chain[0], chain[1:])
        return None
    except VerificationError as error:
        return str(error.args[0])
