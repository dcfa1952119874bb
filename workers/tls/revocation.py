"""Is the leaf revoked? Asked as a browser (and SSL Labs) would, through the SSRF guard.

1. A stapled OCSP response, when the server sends one that is signed for this leaf and current.
2. Otherwise the OCSP responder named in the leaf's AIA extension: an HTTP POST of a request built
   with `cryptography.x509.ocsp`, the answer's signature checked against the issuer (or a responder
   certificate the issuer delegated to).
3. With no responder, the CRL of the leaf's CRL distribution points (HTTP GET), its signature
   checked against the issuer.
Every fetch goes through aia.fetch_url (the guard, the pinned address, bounded size and time), and
all of an audit's revocation fetches share one budget of `BUDGET_S`: a slow responder makes the
answer "not checked: the responder timed out", never a slow audit.
"""

from __future__ import annotations

import datetime
import logging

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, SignatureAlgorithmOID

from tlsaudit.domain.scanfacts import (
    CRL,
    GOOD,
    NOT_TESTED,
    OCSP_RESPONDER,
    REVOKED,
    STAPLED_OCSP,
    UNKNOWN,
    Revocation,
)
from workers.net.deadline import Deadline
from workers.net.errors import PRIVATE_TARGET, TargetError
from workers.tls.aia import fetch_url
from workers.tls.certs import issued_by, signature_verifies

log = logging.getLogger(__name__)

# All revocation fetches of one audit, together (a responder that hangs costs this much at most).
BUDGET_S = 4.0
MAX_OCSP_BYTES = 64 * 1024
# Real CRLs reach a few megabytes (a large CA's); a bigger one is refused rather than read.
MAX_CRL_BYTES = 8 * 1024 * 1024
# Clocks differ: a response dated a little in the future, or just past its next update, still counts.
CLOCK_SKEW = datetime.timedelta(minutes=5)
# An answer without a next update never goes out of date by its own dates: one older than this could be a
# "good" stapled long before the certificate was revoked, so it is not trusted (browsers cap the age too).
MAX_UNDATED_AGE = datetime.timedelta(days=7)


def budget(within: Deadline | None) -> Deadline:
    """The revocation phase's deadline: `BUDGET_S` from now, never past the audit's."""
    return Deadline(BUDGET_S, connection_s=BUDGET_S, parent=within)


def check_revocation(deployment, *, allow_private: bool, timeout: float, deadline: Deadline,
                     resolver: tuple[str, int] | None = None) -> Revocation:
    """The revocation status of one sslyze certificate deployment's leaf (see the module docstring)."""
    try:
        return find_status(deployment, allow_private=allow_private, timeout=timeout, deadline=deadline,
                           resolver=resolver)
    except Exception as exc:        # a CA's odd encoding (or our bug) must not lose a finished scan
        log.exception("revocation check failed")
        return not_checked("bad_response", f"the revocation answer could not be read ({type(exc).__name__}: {exc})")


def find_status(deployment, *, allow_private: bool, timeout: float, deadline: Deadline,
                resolver: tuple[str, int] | None) -> Revocation:
    chain = list(deployment.received_certificate_chain)
    leaf = chain[0]
    issuer = find_issuer(leaf, chain[1:] + _verified_chain(deployment))
    stapled = deployment.ocsp_response
    if stapled is not None and issuer is not None:
        answer = read_ocsp_response(stapled, leaf, issuer, STAPLED_OCSP, "")
        if answer.checked:
            return answer
    ocsp_url, crl_url = ocsp_responder_url(leaf), crl_url_of(leaf)
    if ocsp_url is None and crl_url is None:
        return not_checked("no_url", "the certificate names no OCSP responder and no CRL (no AIA or CRL "
                                     "distribution point URL)")
    if issuer is None:
        return not_checked("no_issuer", "the issuer's certificate was not sent, so its answer could not be "
                                        "checked", source=ocsp_url or crl_url or "")
    fetch = dict(allow_private=allow_private, timeout=timeout, deadline=deadline, resolver=resolver)
    if ocsp_url is not None:
        return ask_responder(ocsp_url, leaf, issuer, **fetch)
    return read_crl(crl_url, leaf, issuer, **fetch)


def find_issuer(leaf: x509.Certificate, candidates: list[x509.Certificate]) -> x509.Certificate | None:
    return next((c for c in candidates if issued_by(leaf, c)), None)


def _verified_chain(deployment) -> list[x509.Certificate]:
    """The chain a store built, when one did: it holds the issuer when that is an anchor the server
    does not send (a leaf issued straight by the root of the custom CA file)."""
    for result in deployment.path_validation_results:
        if result.was_validation_successful and result.verified_certificate_chain:
            return list(result.verified_certificate_chain)
    return []


def ocsp_responder_url(cert: x509.Certificate) -> str | None:
    try:
        aia = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    except (x509.ExtensionNotFound, ValueError):
        return None
    return next((d.access_location.value for d in aia
                 if d.access_method == AuthorityInformationAccessOID.OCSP and _is_http(d.access_location)), None)


def crl_url_of(cert: x509.Certificate) -> str | None:
    try:
        points = cert.extensions.get_extension_for_class(x509.CRLDistributionPoints).value
    except (x509.ExtensionNotFound, ValueError):
        return None
    return next((name.value for point in points for name in (point.full_name or ()) if _is_http(name)), None)


def _is_http(name) -> bool:
    # ldap:// CRLs exist in old PKIs; like browsers we only speak HTTP.
    return isinstance(name, x509.UniformResourceIdentifier) and name.value.lower().startswith("http://")


# --- fetching, with every failure in words ------------------------------------------------------

def ask_responder(url: str, leaf: x509.Certificate, issuer: x509.Certificate, **fetch) -> Revocation:
    # SHA-1 only names the certificate in the request (CertID): RFC 5019 s2.1.1 makes it the hash
    # every lightweight responder must accept, and many accept nothing else. Nothing is signed with it.
    request = ocsp.OCSPRequestBuilder().add_certificate(leaf, issuer, hashes.SHA1()).build()  # nosec B303
    body = fetch_or_why(url, "OCSP responder", post=request.public_bytes(serialization.Encoding.DER),
                        content_type="application/ocsp-request", max_bytes=MAX_OCSP_BYTES, **fetch)
    if isinstance(body, Revocation):
        return body
    try:
        response = ocsp.load_der_ocsp_response(body)
    except ValueError:
        return not_checked("bad_response", "the OCSP responder's answer is not an OCSP response", source=url)
    return read_ocsp_response(response, leaf, issuer, OCSP_RESPONDER, url)


def read_crl(url: str, leaf: x509.Certificate, issuer: x509.Certificate, **fetch) -> Revocation:
    body = fetch_or_why(url, "CRL server", max_bytes=MAX_CRL_BYTES, **fetch)
    if isinstance(body, Revocation):
        return body
    try:
        crl = x509.load_pem_x509_crl(body) if body.lstrip().startswith(b"-----") else x509.load_der_x509_crl(body)
    except ValueError:
        return not_checked("bad_response", "the CRL could not be parsed", source=url)
    return judge_crl(crl, leaf, issuer, url)


def fetch_or_why(url: str, what: str, **fetch) -> bytes | Revocation:
    """The body at `url`, or the not-checked verdict saying why there is none."""
    try:
        return fetch_url(url, **fetch)
    except TimeoutError:            # DeadlineExceeded too: the budget or the connection's lifetime ran out
        return not_checked("timeout", f"the {what} timed out (revocation checks get {BUDGET_S:g} s in all)",
                           source=url)
    except TargetError as error:
        if error.code == PRIVATE_TARGET:
            return not_checked("blocked", f"the {what} was not asked: {error.message}", source=url)
        return not_checked("unreachable", f"the {what} could not be reached: {error.message}", source=url)
    except OSError as error:
        return not_checked("unreachable", f"the {what} could not be reached ({error.strerror or error})",
                           source=url)
    except ValueError as error:     # not a 200, too large, a malformed URL
        return not_checked("bad_response", f"the {what} gave no usable answer: {error}", source=url)


# --- OCSP -----------------------------------------------------------------------------------------

def read_ocsp_response(response: ocsp.OCSPResponse, leaf: x509.Certificate, issuer: x509.Certificate,
                       method: str, url: str) -> Revocation:
    """The verdict of a response for `leaf`, once it is known to be the CA's, for this leaf, and current."""
    if response.response_status != ocsp.OCSPResponseStatus.SUCCESSFUL:
        return not_checked("bad_response", f"the OCSP responder refused: {response.response_status.name.lower()}",
                           source=url, method=method)
    if not ocsp_signed_by_ca(response, issuer):
        return not_checked("bad_signature", "the OCSP response is not signed by the certificate's issuer nor by a "
                                            "responder it delegated to", source=url, method=method)
    single = matching_response(response, leaf, issuer)
    if single is None:
        return not_checked("bad_response", "the OCSP response is about another certificate", source=url,
                           method=method)
    stale = staleness(single.this_update_utc, single.next_update_utc)
    if stale:
        return not_checked("bad_response", f"the OCSP response is {stale}", source=url, method=method)
    status = single.certificate_status
    if status == ocsp.OCSPCertStatus.REVOKED:
        return revoked(method, url, single.revocation_reason, single.revocation_time_utc)
    if status == ocsp.OCSPCertStatus.UNKNOWN:
        return Revocation(UNKNOWN, method=method, source=url,
                          reason="the OCSP responder does not know this certificate")
    return Revocation(GOOD, method=method, source=url)


def ocsp_signed_by_ca(response: ocsp.OCSPResponse, issuer: x509.Certificate) -> bool:
    """RFC 6960 4.2.2.2: signed by the issuer itself, or by a certificate the issuer signed for
    OCSP signing (sent inside the response)."""
    signer = next((c for c in [issuer, *response.certificates] if _names_responder(response, c)), None)
    if signer is None or (signer is not issuer and not _delegated_by(signer, issuer)):
        return False
    if response.signature_algorithm_oid == SignatureAlgorithmOID.RSASSA_PSS:
        return pss_signature_verifies(signer.public_key(), response)
    try:
        algorithm = response.signature_hash_algorithm
    except Exception:               # an algorithm cryptography cannot name
        return False
    return signature_verifies(signer.public_key(), response.signature, response.tbs_response_bytes, algorithm)


# The hashes a CA signs RSASSA-PSS OCSP answers with (SHA-1 left out: nobody should trust a new one).
PSS_HASHES = (hashes.SHA256(), hashes.SHA384(), hashes.SHA512())


def pss_signature_verifies(key, response: ocsp.OCSPResponse) -> bool:
    """cryptography names no hash for a PSS-signed OCSP answer (its parameters are not parsed there), so
    each hash a CA uses is tried: a signature verifies under the one it was made with and no other."""
    return any(signature_verifies(key, response.signature, response.tbs_response_bytes, algorithm, pss=True)
               for algorithm in PSS_HASHES)


def _names_responder(response: ocsp.OCSPResponse, cert: x509.Certificate) -> bool:
    if response.responder_name is not None:
        return response.responder_name == cert.subject
    return response.responder_key_hash == x509.SubjectKeyIdentifier.from_public_key(cert.public_key()).digest


def _delegated_by(signer: x509.Certificate, issuer: x509.Certificate) -> bool:
    """An OCSP-signing certificate the issuer signed, valid now (an expired one speaks for no one)."""
    try:
        usages = signer.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except (x509.ExtensionNotFound, ValueError):
        return False
    now = datetime.datetime.now(datetime.timezone.utc)
    valid_now = signer.not_valid_before_utc - CLOCK_SKEW <= now <= signer.not_valid_after_utc + CLOCK_SKEW
    return ExtendedKeyUsageOID.OCSP_SIGNING in usages and valid_now and issued_by(signer, issuer)


def matching_response(response: ocsp.OCSPResponse, leaf: x509.Certificate, issuer: x509.Certificate):
    for single in response.responses:
        expected = ocsp.OCSPRequestBuilder().add_certificate(leaf, issuer, single.hash_algorithm).build()
        if (single.serial_number, single.issuer_key_hash, single.issuer_name_hash) == \
                (expected.serial_number, expected.issuer_key_hash, expected.issuer_name_hash):
            return single
    return None


# --- CRL ------------------------------------------------------------------------------------------

def judge_crl(crl: x509.CertificateRevocationList, leaf: x509.Certificate, issuer: x509.Certificate,
              url: str) -> Revocation:
    if crl.issuer != issuer.subject or not crl.is_signature_valid(issuer.public_key()):
        return not_checked("bad_signature", "the CRL is not signed by the certificate's issuer", source=url,
                           method=CRL)
    stale = staleness(crl.last_update_utc, crl.next_update_utc)
    if stale:
        return not_checked("bad_response", f"the CRL is {stale}", source=url, method=CRL)
    entry = crl.get_revoked_certificate_by_serial_number(leaf.serial_number)
    if entry is None:
        return Revocation(GOOD, method=CRL, source=url)
    try:
        reason = entry.extensions.get_extension_for_class(x509.CRLReason).value.reason
    except (x509.ExtensionNotFound, ValueError):
        reason = None
    return revoked(CRL, url, reason, entry.revocation_date_utc)


# --- verdicts -------------------------------------------------------------------------------------

def staleness(this_update: datetime.datetime, next_update: datetime.datetime | None) -> str:
    """"" for a current answer, else what is wrong with its dates."""
    now = datetime.datetime.now(datetime.timezone.utc)
    if this_update > now + CLOCK_SKEW:
        return f"dated in the future ({this_update:%Y-%m-%d %H:%M} UTC)"
    if next_update is not None and next_update < now - CLOCK_SKEW:
        return f"out of date (its next update was due {next_update:%Y-%m-%d %H:%M} UTC)"
    if next_update is None and this_update < now - MAX_UNDATED_AGE:
        return (f"too old to trust (issued {this_update:%Y-%m-%d %H:%M} UTC with no next update, more than "
                f"{MAX_UNDATED_AGE.days} days ago)")
    return ""


def revoked(method: str, url: str, reason: x509.ReasonFlags | None, when: datetime.datetime | None) -> Revocation:
    name = None if reason in (None, x509.ReasonFlags.unspecified) else reason.name
    return Revocation(REVOKED, method=method, source=url, revocation_reason=name, revoked_at=when)


def not_checked(why: str, reason: str, *, source: str = "", method: str = "") -> Revocation:
    return Revocation(NOT_TESTED, method=method, source=source, why=why, reason=reason)
