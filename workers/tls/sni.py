"""What a client that sends no SNI gets: testssl.sh's "SNI mandatory". A server with several sites on
one address picks the certificate by SNI; without it, old clients and some tools (and scanners that
connect by address) get its default certificate, or no handshake."""

from __future__ import annotations

import hashlib
import ssl

from cryptography import x509

from tlsaudit.domain.scanfacts import WithoutSni
from workers.net.contexts import make_context
from workers.tls.probes import Endpoint, short_error


def leaf_without_sni(endpoint: Endpoint) -> tuple[str, str] | str | None:
    """(sha256 hex, subject) of the leaf served to a ClientHello without SNI, or why that handshake failed
    when the same hello with SNI succeeds; None when neither completes (a server Python's OpenSSL cannot
    handshake with, or one that requires a client certificate: that says nothing about SNI)."""
    try:
        der = _leaf_der(endpoint, None)
    except (ssl.SSLError, ConnectionResetError) as exc:   # an alert, or a front that hangs up on SNI-less hellos
        try:
            _leaf_der(endpoint, endpoint.host)
        except (ssl.SSLError, ConnectionResetError):
            return None
        return short_error(exc)
    if not der:
        return "the server sent no certificate"
    return hashlib.sha256(der).hexdigest(), _subject(der)


def _leaf_der(endpoint: Endpoint, server_name: str | None) -> bytes | None:
    limit = endpoint.connection()
    raw = endpoint.connect(limit)
    try:
        raw.settimeout(limit.timeout(endpoint.timeout))
        with make_context().wrap_socket(raw, server_hostname=server_name) as tls:
            raw.pass_slot_to(tls)
            return tls.getpeercert(binary_form=True)
    finally:
        raw.close()


def _subject(der: bytes) -> str:
    """The subject in words; a certificate cryptography cannot parse still has a fingerprint."""
    try:
        return x509.load_der_x509_certificate(der).subject.rfc4514_string()
    except ValueError:
        return "a certificate whose subject could not be read"


def without_sni(probed: tuple[str, str] | str | None, deployments) -> WithoutSni | None:
    """The probe read against the leaves served with SNI; None when it could not run."""
    if probed is None or not deployments:
        return None
    if isinstance(probed, str):
        return WithoutSni("refused", detail=probed)
    fingerprint, subject = probed
    if any(d.leaf.fingerprint_sha256 == fingerprint for d in deployments):
        return WithoutSni("same")
    return WithoutSni("other", subject=subject)
