"""What a client that sends no SNI gets: testssl.sh's "SNI mandatory". A server with several sites on
one address picks the certificate by SNI; without it, old clients and some tools (and scanners that
connect by address) get its default certificate, or no handshake."""

from __future__ import annotations

import hashlib
import ssl

from cryptography import x509

from tlsaudit.domain.scanfacts import WithoutSni
from workers.tls.contexts import make_context
from workers.tls.probes import Endpoint, short_error


def leaf_without_sni(endpoint: Endpoint) -> tuple[str, str] | str:
    """(sha256 hex, subject) of the leaf served to a ClientHello without SNI, or why the handshake failed."""
    limit = endpoint.connection()
    raw = endpoint.connect(limit)
    try:
        raw.settimeout(limit.timeout(endpoint.timeout))
        with make_context().wrap_socket(raw, server_hostname=None) as tls:
            raw.pass_slot_to(tls)
            der = tls.getpeercert(binary_form=True)
    except (ssl.SSLError, ConnectionResetError) as exc:   # an alert, or a front that hangs up on SNI-less hellos
        return short_error(exc)
    finally:
        raw.close()
    if not der:
        return "the server sent no certificate"
    return hashlib.sha256(der).hexdigest(), x509.load_der_x509_certificate(der).subject.rfc4514_string()


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
