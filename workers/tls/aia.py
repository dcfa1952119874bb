"""Complete a chain the server sent without its intermediate, as SSL Labs does ("extra download").

When no store validates and the top certificate sent names its issuer's URL (AIA caIssuers),
fetch that certificate over HTTP (through the SSRF guard, size- and time-limited) and validate
again with it. A chain that validates only this way is trusted but incomplete: the grade gets
the B cap instead of T, and the finding says which certificate the server should send.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import socket
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509 import DNSName, IPAddress
from cryptography.x509.oid import AuthorityInformationAccessOID

from tlsaudit.domain.scanfacts import CertificateDeployment, TrustResult
from tlsaudit.domain.trustwords import trust_error_words
from workers.net.deadline import Deadline, one_connection
from workers.net.errors import TargetError
from workers.net.target import resolve_target
from workers.tls.certs import (
    CUSTOM_CA_STORE,
    is_ca_certificate,
    is_self_signed,
    issued_by,
    store_name,
    top_of_sent_chain,
)

MAX_CERT_BYTES = 64 * 1024


def complete_via_aia(deployment, facts_deployment: CertificateDeployment, hostname: str, *,
                     allow_private: bool, timeout: float,
                     resolver: tuple[str, int] | None = None, deadline: Deadline | None = None) -> CertificateDeployment:
    """`facts_deployment` with trust re-derived from an AIA-fetched issuer, or unchanged."""
    if facts_deployment.trusted_by_any or facts_deployment.chain_complete is not False:
        return facts_deployment
    received = list(deployment.received_certificate_chain)
    top = top_of_sent_chain(received)
    url = ca_issuers_url(top)
    if url is None:
        return facts_deployment
    try:
        issuer = fetch_certificate(url, allow_private=allow_private, timeout=timeout, resolver=resolver,
                                   deadline=deadline)
    except (OSError, ValueError, TargetError):
        return facts_deployment
    if not issued_by(top, issuer):
        return facts_deployment
    trust = revalidate(deployment, received + [issuer], hostname, url)
    # The URL gave the root itself: nothing was missing (servers need not send their root), trusted or not.
    complete = True if is_self_signed(issuer) else facts_deployment.chain_complete
    return dataclasses.replace(facts_deployment, trust=trust, chain_complete=complete)


def unknown_if_root_missing(deployment, facts_deployment: CertificateDeployment) -> CertificateDeployment:
    """An untrusted chain whose gap cannot be told from an unknown root: say "unknown" rather than put
    an incomplete-chain cap (and a "serve the intermediates" fix) beside the T.

    - the sent top is already an intermediate CA: the one missing above it is as likely a private root
      (scanned without its CA file) as a missing intermediate;
    - no sent certificate signs the leaf, it names no http:// CA Issuers URL and the organization has set
      no CA of its own: a private root signs its leaves directly as often as through an intermediate, and
      nothing says which (a public CA's leaf names its issuer's URL, which complete_via_aia has already
      followed; with a CA set, a leaf that does not reach it lacks the intermediate between them)."""
    if facts_deployment.trusted_by_any or facts_deployment.chain_complete is not False:
        return facts_deployment
    received = list(deployment.received_certificate_chain)
    top = top_of_sent_chain(received)
    if top is received[0]:
        custom_ca_set = any(t.store == CUSTOM_CA_STORE for t in facts_deployment.trust)
        if custom_ca_set or ca_issuers_url(top) is not None:
            return facts_deployment
    elif not is_ca_certificate(top):
        return facts_deployment
    return dataclasses.replace(facts_deployment, chain_complete=None)


def ca_issuers_url(cert: x509.Certificate) -> str | None:
    try:
        aia = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    except (x509.ExtensionNotFound, ValueError):   # ValueError: a malformed or duplicated extension
        return None
    for access in aia:
        location = access.access_location
        if access.access_method == AuthorityInformationAccessOID.CA_ISSUERS and \
                isinstance(location, x509.UniformResourceIdentifier) and location.value.startswith("http://"):
            return location.value
    return None


def fetch_certificate(url: str, *, allow_private: bool, timeout: float,
                      resolver: tuple[str, int] | None = None, deadline: Deadline | None = None) -> x509.Certificate:
    """The certificate at `url`, DER or PEM (see fetch_url for the guard and the limits)."""
    body = fetch_url(url, allow_private=allow_private, timeout=timeout, resolver=resolver, deadline=deadline)
    return x509.load_pem_x509_certificate(body) if body.lstrip().startswith(b"-----") \
        else x509.load_der_x509_certificate(body)


def fetch_url(url: str, *, allow_private: bool, timeout: float, resolver: tuple[str, int] | None = None,
              deadline: Deadline | None = None, post: bytes | None = None, content_type: str = "",
              max_bytes: int = MAX_CERT_BYTES) -> bytes:
    """The body of a 200 answer to an HTTP/1.0 GET (or a POST of `post`) sent to the IP the guard
    approved (no second lookup), at most `max_bytes`; the exchange within one connection's lifetime
    (and the audit's deadline): the URL is a certificate's, so the server at the other end may be
    anyone's, trickling included. Also the fetch of OCSP responses and CRLs (revocation.py)."""
    parts = urlsplit(url)
    limit = one_connection(timeout, deadline)
    target = resolve_target(parts.hostname or "", parts.port or 80, allow_private=allow_private,
                            timeout=max(0.1, min(timeout, limit.remaining())), resolver=resolver)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    method = "GET" if post is None else "POST"
    head = f"{method} {path} HTTP/1.0\r\nHost: {parts.netloc}\r\nUser-Agent: TLSAudit\r\n"
    if post is not None:
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(post)}\r\n"
    request = (head + "\r\n").encode("ascii") + (post or b"")
    with limit.connect(target.ip, target.port, timeout) as sock:
        sock.sendall(request)
        raw = read_limited(sock, max_bytes + 4096)
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.split(b" ", 2)[1:2] == [b"200"]:
        raise ValueError(f"{parts.netloc} answered {head[:40]!r}")
    return body


def read_limited(sock: socket.socket, limit: int) -> bytes:
    """The response, up to the server's close or, when it names one, the end of its Content-Length (a
    server that keeps the connection open after a complete answer costs no time), at most `limit` bytes."""
    data = bytearray()
    while len(data) < limit:
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(data)
        data += chunk
        if response_complete(data):
            return bytes(data)
    raise ValueError(f"the response is larger than {limit} bytes")


_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,12})[ \t]*\r\n", re.IGNORECASE)


def response_complete(data: bytearray) -> bool:
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        return False
    length = _CONTENT_LENGTH.search(data, 0, head_end + 2)
    return length is not None and len(data) - head_end - 4 >= int(length.group(1))


def revalidate(deployment, chain: list[x509.Certificate], hostname: str, url: str) -> tuple[TrustResult, ...]:
    try:
        subject = IPAddress(ipaddress.ip_address(hostname))
    except ValueError:
        subject = DNSName(hostname)
    pems = [c.public_bytes(Encoding.PEM).decode("ascii") for c in chain]
    results = []
    for previous in deployment.path_validation_results:
        again = previous.trust_store.verify_certificate_chain(pems, subject)
        ok = again.was_validation_successful
        results.append(TrustResult(store=store_name(previous.trust_store.name), trusted=ok,
                                   error=f"trusted after downloading the missing intermediate from {url}" if ok
                                   else trust_error_words(again.validation_error or "")))
    return tuple(results)
