"""Certificates: turn sslyze's certificate deployments into `CertificateDeployment` facts.

Also our own SAN matcher (`leaf_matches`) and the chain-completeness rule, neither of
which sslyze 6 provides.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, padding, rsa
from cryptography.x509 import DNSName, IPAddress
from cryptography.x509.oid import ExtendedKeyUsageOID, SignatureAlgorithmOID

from tlsaudit.domain.hostmatch import hostname_matches
from tlsaudit.domain.scanfacts import BAD, OK, Certificate, CertificateDeployment, Check, TrustResult
from tlsaudit.domain.trustwords import DATES, is_dates_error, trust_error_words

# sslyze's name for the CA file we pass in -> the name the rest of TLS Audit uses.
CUSTOM_CA_STORE = "Custom CA"
_STORE_NAMES = {"Supplied CA file": CUSTOM_CA_STORE}


def leaf_matches(cert: x509.Certificate, hostname: str) -> bool:
    """Browser rules: subjectAltName only (no CN fallback), one-label wildcards, IPs vs IP SANs."""
    dns_names, ip_names = san_names(cert)
    return hostname_matches(hostname, dns_names, ip_names)


def san_names(cert: x509.Certificate) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (x509.ExtensionNotFound, ValueError):
        return (), ()
    dns_names = tuple(san.get_values_for_type(x509.DNSName))
    ip_names = tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
    return dns_names, ip_names


def describe_certificate(cert: x509.Certificate) -> Certificate:
    key_type, key_bits, curve, exponent = describe_public_key(cert.public_key())
    dns_names, ip_names = san_names(cert)
    return Certificate(
        subject=_name_text(lambda: cert.subject),
        issuer=_name_text(lambda: cert.issuer),
        serial_hex=format(cert.serial_number, "x"),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
        key_type=key_type,
        key_bits=key_bits,
        curve=curve,
        signature_hash=signature_hash_name(cert),
        san_dns=dns_names,
        san_ip=ip_names,
        is_ca=is_ca_certificate(cert),
        self_signed=is_self_signed(cert),
        fingerprint_sha256=cert.fingerprint(hashes.SHA256()).hex(),
        rsa_exponent=exponent,
        pem=cert.public_bytes(serialization.Encoding.PEM).decode("ascii"),
        ocsp_urls=ocsp_urls(cert),
        spki_sha256=spki_sha256(cert),
        authority_key_id=authority_key_id(cert),
        earliest_sct=earliest_sct(cert),
        ekus=extended_key_usages(cert),
        signature_algorithm=signature_algorithm_name(cert),
    )


def signature_algorithm_name(cert: x509.Certificate) -> str:
    """cryptography's name of the OID, the spelling sslyze's checker and Mozilla's guidelines use."""
    try:
        return cert.signature_algorithm_oid._name
    except Exception:               # an OID cryptography cannot parse
        return ""


EKU_NAMES = {ExtendedKeyUsageOID.SERVER_AUTH: "serverAuth", ExtendedKeyUsageOID.CLIENT_AUTH: "clientAuth",
             ExtendedKeyUsageOID.CODE_SIGNING: "codeSigning", ExtendedKeyUsageOID.EMAIL_PROTECTION: "emailProtection",
             ExtendedKeyUsageOID.TIME_STAMPING: "timeStamping", ExtendedKeyUsageOID.OCSP_SIGNING: "OCSPSigning",
             ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE: "anyExtendedKeyUsage"}


def spki_sha256(cert: x509.Certificate) -> str:
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(spki).hexdigest()


def authority_key_id(cert: x509.Certificate) -> str:
    try:
        key_id = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    except (x509.ExtensionNotFound, ValueError):
        return ""
    return key_id.hex() if key_id else ""


def earliest_sct(cert: x509.Certificate):
    """When the first CT log saw it: Chrome dates a certificate's issuance by this, not by notBefore."""
    try:
        scts = cert.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps).value
    except (x509.ExtensionNotFound, ValueError):
        return None
    times = [sct.timestamp.replace(tzinfo=datetime.timezone.utc) for sct in scts]
    return min(times) if times else None


def extended_key_usages(cert: x509.Certificate) -> tuple[str, ...]:
    """() when the certificate has no EKU extension (any purpose, as RFC 5280 reads it)."""
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except (x509.ExtensionNotFound, ValueError):
        return ()
    return tuple(EKU_NAMES.get(oid, oid.dotted_string) for oid in usages)


def ocsp_urls(cert: x509.Certificate) -> tuple[str, ...]:
    """The OCSP responders its AIA names: none for Let's Encrypt since 2025 (CRL only)."""
    try:
        aia = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    except (x509.ExtensionNotFound, ValueError):
        return ()
    return tuple(d.access_location.value for d in aia
                 if d.access_method == x509.AuthorityInformationAccessOID.OCSP
                 and isinstance(d.access_location, x509.UniformResourceIdentifier))


def describe_public_key(key) -> tuple[str, int, str | None, int | None]:
    """(type, bits, curve, RSA exponent)."""
    if isinstance(key, rsa.RSAPublicKey):
        return "RSA", key.key_size, None, key.public_numbers().e
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "EC", key.key_size, key.curve.name, None
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519", 256, None, None
    if isinstance(key, ed448.Ed448PublicKey):
        return "Ed448", 456, None, None
    if isinstance(key, dsa.DSAPublicKey):
        return "DSA", key.key_size, None, None
    return type(key).__name__, 0, None, None


def signature_hash_name(cert: x509.Certificate) -> str | None:
    try:
        algorithm = cert.signature_hash_algorithm
    except Exception:               # UnsupportedAlgorithm for exotic signatures: report as unknown
        return None
    return algorithm.name if algorithm is not None else None


def is_ca_certificate(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except (x509.ExtensionNotFound, ValueError):
        return False


def is_self_signed(cert: x509.Certificate) -> bool:
    return cert.subject == cert.issuer and issued_by(cert, cert)


def issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """Did `issuer` sign `cert`? Name and signature, so cross-signs sharing a name do not confuse us."""
    if cert.issuer != issuer.subject:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except ValueError:              # an algorithm cryptography will not verify here: SHA-1, MD5
        return _legacy_signature_verifies(cert, issuer)
    except Exception:               # bad signature
        return False


def _legacy_signature_verifies(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """verify_directly_issued_by refuses SHA-1; a SHA-1 leaf signed by a root is still *issued* by it,
    and calling it "intermediate missing" would send the owner looking for the wrong fix."""
    try:
        algorithm = cert.signature_hash_algorithm
    except Exception:               # an algorithm even the primitives lack
        return False
    return signature_verifies(issuer.public_key(), cert.signature, cert.tbs_certificate_bytes, algorithm,
                              pss=cert.signature_algorithm_oid == SignatureAlgorithmOID.RSASSA_PSS)


def signature_verifies(key, signature: bytes, data: bytes, algorithm, *, pss: bool = False) -> bool:
    """Does `key` (RSA PKCS#1 v1.5 or, with `pss`, RSASSA-PSS; ECDSA; Ed25519/Ed448) sign `data` with
    `signature`? Also for OCSP responses (revocation.py), which cryptography parses but does not verify."""
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, data, rsa_padding(algorithm, pss), algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, data, ec.ECDSA(algorithm))
        elif isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
            key.verify(signature, data)
        else:
            return False
        return True
    except Exception:               # bad signature, or an algorithm even the primitives lack
        return False


def rsa_padding(algorithm, pss: bool):
    """PSS signatures name their salt length in parameters cryptography does not expose for OCSP
    responses: AUTO reads it from the signature, and MGF1 uses the signature's hash, as every CA does."""
    if not pss:
        return padding.PKCS1v15()
    return padding.PSS(mgf=padding.MGF1(algorithm), salt_length=padding.PSS.AUTO)


def trust_results(path_validation_results, received: list[x509.Certificate] = (), hostname: str = "",
                  ) -> tuple[TrustResult, ...]:
    return tuple(trust_result(r, list(received), hostname) for r in path_validation_results)


def trust_result(result, received: list[x509.Certificate], hostname: str) -> TrustResult:
    """One store's verdict in words. A store that refused for the dates alone is asked again at a
    moment inside every sent certificate's validity: cryptography stops at the first expired
    certificate, so only then do we know whether the chain is otherwise trusted (an expired
    certificate from the organisation's own CA is an expiry, not an unknown CA)."""
    store = store_name(result.trust_store.name)
    if result.was_validation_successful:
        return TrustResult(store=store, trusted=True)
    error = result.validation_error or ""
    if is_name_error(error) and received:
        # cryptography checks the leaf's names first and stops there: "does not cover the host name"
        # hides whether the chain is good (an unknown root reads the same). Ask again under a name the
        # leaf carries: the mismatch is hostname_matches' business (grade M), the store judges the chain.
        hostname = own_hostname(received[0])
        if hostname is None:
            return TrustResult(store=store, trusted=False, error="chain not checked: the leaf names no host")
        result = result.trust_store.verify_certificate_chain(_pems(received), server_subject(hostname))
        if result.was_validation_successful:
            return TrustResult(store=store, trusted=True)
        error = result.validation_error or ""
    if is_weak_key_error(error) and received and chain_to_anchor(received, load_anchors(result.trust_store.path)):
        return TrustResult(store=store, trusted=True, weak_key_only=True)
    if not (is_dates_error(error) and received and hostname):
        return TrustResult(store=store, trusted=False, error=trust_error_words(error))
    again = verify_inside_dates(result.trust_store, received, hostname)
    if again is None or again.was_validation_successful or is_name_error(again.validation_error or ""):
        return TrustResult(store=store, trusted=False, error=trust_error_words(error), dates_only=again is not None)
    return TrustResult(store=store, trusted=False, error=and_the_dates(trust_error_words(again.validation_error or "")))


def and_the_dates(words: str) -> str:
    """The store's refusal inside the dates, and the dates: once each ("a certificate is outside its
    validity dates, and a certificate is outside its validity dates" when an issuer's dates fail too)."""
    return DATES if words in ("", DATES) else f"{words}, and {DATES}"


def is_weak_key_error(error: str) -> bool:
    """cryptography's verifier refuses RSA keys under 2048 bits anywhere in the chain ("RSA key is too
    weak"); Chromium, Firefox and GnuTLS accept a 1024-bit intermediate, only OpenSSL at Debian's security
    level 2 refuses it as well."""
    return "key is too weak" in error.lower()


def chain_to_anchor(received: list[x509.Certificate], anchors: tuple[x509.Certificate, ...],
                    now: datetime.datetime | None = None) -> bool:
    """A path from the leaf through the sent certificates to one of `anchors`, each link signed by the
    next (name and signature), every certificate on it inside its dates, whatever the key sizes: the
    judgement browsers make of a chain cryptography refuses only for a weak key."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    path = issuance_path(received)
    top = path[-1]
    anchor = top if is_self_signed(top) and top in anchors else next(
        (a for a in anchors if issued_by(top, a)), None)
    if anchor is None:
        return False
    issuers = path[1:] + ([] if anchor is top else [anchor])
    return (all(c.not_valid_before_utc <= now <= c.not_valid_after_utc for c in {*path, anchor})
            and all(may_issue_here(ca, below) for below, ca in enumerate(issuers)))


def may_issue_here(ca: x509.Certificate, intermediates_below: int) -> bool:
    """The CA rules a verifier applies besides key sizes: a CA (basicConstraints) allowed to sign
    certificates (keyUsage), whose path length admits the intermediates below it. A CA with name
    constraints is never accepted here: cryptography stops at the weak key before judging names, and we
    do not judge them ourselves, so the store's refusal stands."""
    try:
        extensions = ca.extensions
    except ValueError:              # extensions cryptography cannot parse: the store's refusal stands
        return False
    try:
        constraints = extensions.get_extension_for_class(x509.BasicConstraints).value
        if not constraints.ca or (constraints.path_length is not None and intermediates_below > constraints.path_length):
            return False
        extensions.get_extension_for_class(x509.NameConstraints)
        return False
    except x509.ExtensionNotFound as missing:
        if missing.oid == x509.ExtensionOID.BASIC_CONSTRAINTS:
            return False
    try:
        return extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    except x509.ExtensionNotFound:
        return True


def verify_inside_dates(trust_store, received: list[x509.Certificate], hostname: str):
    """The store's verdict at the latest start date of the sent chain (None when no moment lies
    inside every certificate's dates, or the store cannot be asked)."""
    moment = max(c.not_valid_before_utc for c in received) + datetime.timedelta(seconds=1)
    if moment > min(c.not_valid_after_utc for c in received):
        return None
    try:
        return trust_store.verify_certificate_chain(_pems(received), server_subject(hostname), moment)
    except Exception:               # an unreadable store file: keep the first answer
        return None


def server_subject(hostname: str):
    try:
        return IPAddress(ipaddress.ip_address(hostname))
    except ValueError:
        return DNSName(hostname)


def is_name_error(error: str) -> bool:
    return trust_error_words(error) == "the certificate does not cover the host name"


def _pems(received: list[x509.Certificate]) -> list[str]:
    return [c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in received]


def own_hostname(leaf: x509.Certificate) -> str | None:
    """A name the leaf covers: its first non-wildcard DNS name, a name under its wildcard, or its IP."""
    dns_names, ip_names = san_names(leaf)
    usable = [n for n in dns_names if "*" not in n]
    if usable:
        return usable[0]
    if dns_names:
        return "x" + dns_names[0].lstrip("*")
    return ip_names[0] if ip_names else None


def store_name(sslyze_name: str) -> str:
    return _STORE_NAMES.get(sslyze_name, sslyze_name)


def chain_is_complete(received: list[x509.Certificate], path_validation_results) -> bool | None:
    """Did the server send every certificate a client needs between the leaf and a root?

    1. If some store validated the chain, complete means every certificate of the verified
       chain except its anchor was sent (a client cannot fetch what is missing; we do not
       follow AIA either).
    2. Otherwise walk from the leaf through the sent certificates by issuer + signature.
       The top of that walk is complete when it is self-signed (a full chain to an
       untrusted root) or when its issuer is an anchor in any store we validated against,
       including the custom CA file.
    3. Otherwise (issuer neither sent nor an anchor) it is incomplete. For a private CA
       scanned without its CA file this also reads "incomplete": we cannot tell a missing
       intermediate from an unknown root, and the trust results already say "untrusted".
    """
    if not received:
        return None
    verified = next((r.verified_certificate_chain for r in path_validation_results
                     if r.was_validation_successful and r.verified_certificate_chain), None)
    if verified:
        return all(cert in received for cert in verified[:-1])
    top = top_of_sent_chain(received)
    if is_self_signed(top):
        return True
    stores = {r.trust_store.path for r in path_validation_results}
    return any(issued_by(top, anchor) for path in stores for anchor in load_anchors(path))


def issuance_path(received: list[x509.Certificate]) -> list[x509.Certificate]:
    """The sent certificates on the way from the leaf up, each the issuer of the one before, ending at
    a self-signed one or where no sent certificate issued the last."""
    path, unused = [received[0]], list(received[1:])
    while not is_self_signed(path[-1]):
        issuer = next((c for c in unused if issued_by(path[-1], c)), None)
        if issuer is None:
            break
        unused.remove(issuer)
        path.append(issuer)
    return path


def chain_layout(received: list[x509.Certificate]) -> tuple[bool | None, tuple[str, ...] | None]:
    """(in order, the subjects of the extra certificates) of a sent chain. sslyze's
    `received_chain_has_valid_order` says False for both an unrelated certificate and a swapped pair;
    SSL Labs reports them apart ("Contains extra certificates", "Incorrect order"), and so do we."""
    if not received:
        return None, None
    path = issuance_path(received)
    extra = tuple(_name_text(lambda c=c: c.subject) for c in received if c not in path)
    return [c for c in received if c in path] == path, extra


def top_of_sent_chain(received: list[x509.Certificate]) -> x509.Certificate:
    current, unused = received[0], list(received[1:])
    while True:
        issuer = next((c for c in unused if issued_by(current, c)), None)
        if issuer is None or issuer == current:
            return current
        unused.remove(issuer)
        current = issuer


@functools.lru_cache(maxsize=16)
def load_anchors(path: Path) -> tuple[x509.Certificate, ...]:
    """Certificates of a trust store file, parsed once per process (the bundled stores never change)."""
    try:
        return tuple(x509.load_pem_x509_certificates(Path(path).read_bytes()))
    except (OSError, ValueError):
        return ()


def describe_deployment(deployment, hostname: str) -> CertificateDeployment:
    """One sslyze CertificateDeploymentAnalysisResult -> our facts."""
    received = list(deployment.received_certificate_chain)
    in_order, extra = chain_layout(received)
    return CertificateDeployment(
        chain=tuple(describe_certificate(c) for c in received),
        trust=trust_results(deployment.path_validation_results, received, hostname),
        hostname_matches=leaf_matches(received[0], hostname),
        chain_in_order=in_order,
        chain_extra=extra,
        chain_complete=chain_is_complete(received, deployment.path_validation_results),
        chain_has_anchor=_anchor_sent(received, deployment),
        chain_has_sha1=_chain_has_sha1(received, deployment),
        symantec_distrusted=deployment.verified_chain_has_legacy_symantec_anchor,
        ocsp_stapled=ocsp_check(deployment),
        must_staple=deployment.leaf_certificate_has_must_staple_extension,
        sct_count=deployment.leaf_certificate_signed_certificate_timestamps_count,
        is_ev=deployment.leaf_certificate_is_ev,
    )


def _chain_has_sha1(received: list[x509.Certificate], deployment) -> bool:
    """sslyze answers only for a verified chain; and cryptography refuses to verify SHA-1 chains, so
    exactly the SHA-1 case came back unknown. Then the sent chain (roots aside) answers."""
    if deployment.verified_chain_has_sha1_signature is not None:
        return deployment.verified_chain_has_sha1_signature
    return any(signature_hash_name(c) == "sha1" for c in received if not is_self_signed(c))


def _anchor_sent(received: list[x509.Certificate], deployment) -> bool | None:
    """sslyze only knows when a store validated; a sent self-signed root also counts when none did."""
    if deployment.received_chain_contains_anchor_certificate is not None:
        return deployment.received_chain_contains_anchor_certificate
    return any(is_self_signed(c) for c in received[1:])


def ocsp_check(deployment) -> Check:
    response = deployment.ocsp_response
    if response is None:
        return Check(BAD, detail="no OCSP response stapled", value={"stapled": False})
    status = response.response_status.name
    trusted = deployment.ocsp_response_is_trusted
    value = {"stapled": True, "status": status, "trusted": trusted}
    if status == "SUCCESSFUL" and trusted:
        return Check(OK, detail="a trusted OCSP response is stapled", value=value)
    if status != "SUCCESSFUL":
        return Check(BAD, detail=f"the stapled OCSP response is not usable ({status})", value=value)
    return Check(BAD, detail="an OCSP response is stapled but could not be verified as trusted", value=value)


def _name_text(get_name) -> str:
    try:
        return get_name().rfc4514_string()
    except ValueError:              # cryptography could not parse the name (sslyze issue #495)
        return ""
