"""Small builders of ScanFacts for rule tests (grading, findings, remediation).

The defaults describe a model server that earns A+: TLS 1.2 + 1.3, ECDHE AEAD suites over
X25519, a trusted RSA-2048 certificate for localhost, HSTS for a year, every check passed.
Each test changes only what its story needs:

    make_facts(protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"))
    make_facts(cert=rsa_cert(bits=1024), hsts_max_age=None, heartbleed="bad")
    make_facts(suites=[suite("TLS_RSA_WITH_AES_128_GCM_SHA256")], protocols=("TLSv1.2",))
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tlsaudit.domain.ciphers import classify, nominal_bits
from tlsaudit.domain.scanfacts import (
    BAD,
    CHECK_NAMES,
    NOT_TESTED,
    OK,
    PROTOCOLS,
    Certificate,
    CertificateDeployment,
    Check,
    CipherSuite,
    Hsts,
    ScanFacts,
    ServerPreference,
    TrustResult,
    WithoutSni,
)

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)
HOST = "localhost"
ONE_YEAR = 31536000
INTERMEDIATE = "CN=Test Intermediate CA,O=TLS Audit Tests"
ROOT = "CN=Test Root CA,O=TLS Audit Tests"
NAME_MISMATCH_ERROR = "leaf certificate has no matching subjectAltName"
UNKNOWN_ISSUER_ERROR = "candidates exhausted: chain construction exceeds max depth"

# What make_facts accepts on each protocol when no suites are given.
DEFAULT_SUITES = {
    "SSLv2": (),
    "SSLv3": ("TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"),
    "TLSv1.0": ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    "TLSv1.1": ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    "TLSv1.2": ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    "TLSv1.3": ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"),
}
_CURVES = {253: "X25519", 256: "prime256v1", 384: "secp384r1", 448: "X448", 521: "secp521r1"}
_DEFAULT = object()  # "not given", where None is a meaningful value


def suite(name: str, protocol: str | None = None, *, kx_bits=_DEFAULT, curve: str | None = None,
          key_size: int | None = None) -> CipherSuite:
    """An accepted suite with the ephemeral key a typical server uses.

    The protocol defaults to TLSv1.3 for TLS 1.3 names and TLSv1.2 otherwise. ECDHE gets
    X25519 (reported as 253 bits, like nassl), DHE a 2048-bit group (512 for export suites);
    pass kx_bits=None for "size not reported".
    """
    kx = classify(CipherSuite(name, "", protocol or "TLSv1.2", 0)).kx
    protocol = protocol or ("TLSv1.3" if kx == "TLS13" else "TLSv1.2")
    kx_type = _ephemeral_type(name, kx)
    if kx_bits is _DEFAULT:
        kx_bits = _default_kx_bits(name, kx_type)
    if kx_type == "ECDH" and kx_bits is not None and curve is None:
        curve = _CURVES.get(kx_bits, f"curve{kx_bits}")
    return CipherSuite(
        name=name, openssl_name="", protocol=protocol,
        key_size=nominal_bits(name) if key_size is None else key_size,
        is_anonymous="_anon_" in name, kx_type=kx_type,
        kx_bits=kx_bits if kx_type else None, kx_curve=curve if kx_type == "ECDH" else None,
    )


def _ephemeral_type(name: str, kx: str) -> str | None:
    if kx in ("ECDHE", "TLS13") or name.startswith("TLS_ECDH_anon"):
        return "ECDH"
    if kx == "DHE" or name.startswith("TLS_DH_anon"):
        return "DH"
    return None


def _default_kx_bits(name: str, kx_type: str | None) -> int | None:
    if kx_type == "ECDH":
        return 253
    if kx_type == "DH":
        return 512 if "EXPORT" in name else 2048
    return None


def suites_for(protocols, names=None) -> list[CipherSuite]:
    """The same suite names accepted on every given protocol (defaults per protocol)."""
    return [suite(n, p) for p in protocols for n in (names if names is not None else DEFAULT_SUITES[p])]


def rsa_cert(bits: int = 2048, **kwargs) -> Certificate:
    return _cert("RSA", bits, None, **kwargs)


def ec_cert(curve: str = "secp256r1", bits: int = 256, **kwargs) -> Certificate:
    return _cert("EC", bits, curve, **kwargs)


def ca_cert(subject: str = INTERMEDIATE, *, issuer: str = ROOT, signature_hash: str = "sha256",
            root: bool = False, bits: int = 4096) -> Certificate:
    return Certificate(
        subject=subject, issuer=subject if root else issuer, serial_hex="0a",
        not_before=NOW - timedelta(days=3000), not_after=NOW + timedelta(days=3000),
        key_type="RSA", key_bits=bits, curve=None, signature_hash=signature_hash,
        is_ca=True, self_signed=root, rsa_exponent=65537, spki_sha256="ef" * 32, ekus=("serverAuth", "clientAuth"),
    )


def _cert(key_type: str, bits: int, curve: str | None, *, subject: str = f"CN={HOST}",
          issuer: str = INTERMEDIATE, san: tuple[str, ...] = (HOST,), san_ip: tuple[str, ...] = (),
          not_before: datetime | None = None, not_after: datetime | None = None,
          signature_hash: str | None = "sha256", self_signed: bool = False,
          exponent: int | None = 65537, ocsp_urls: tuple[str, ...] | None = None) -> Certificate:
    return Certificate(
        subject=subject, issuer=subject if self_signed else issuer, serial_hex="1f2e3d",
        not_before=not_before or NOW - timedelta(days=30), not_after=not_after or NOW + timedelta(days=60),
        key_type=key_type, key_bits=bits, curve=curve, signature_hash=signature_hash,
        san_dns=tuple(san), san_ip=tuple(san_ip), self_signed=self_signed,
        fingerprint_sha256="ab" * 32, rsa_exponent=exponent if key_type == "RSA" else None, ocsp_urls=ocsp_urls,
        spki_sha256="cd" * 32, ekus=("serverAuth",),
    )


def deployment(leaf: Certificate | None = None, *, chain: tuple[Certificate, ...] | None = None,
               trusted: bool | None = None, error: str = "", custom_ca: bool | None = None,
               hostname_matches: bool = True, chain_complete: bool | None = True,
               chain_has_sha1: bool | None = False, symantec_distrusted: bool | None = False,
               ocsp_stapled: Check | None = None, must_staple: bool = False) -> CertificateDeployment:
    """A certificate as served, with its validation in the public stores.

    Like sslyze, a hostname mismatch makes every store fail with "no matching subjectAltName",
    and a self-signed leaf is untrusted, unless `trusted` says otherwise. `custom_ca` adds a
    "Custom CA" store result.
    """
    leaf = leaf or rsa_cert()
    if trusted is None:
        trusted = hostname_matches and not leaf.self_signed
        error = error or ("" if hostname_matches else NAME_MISMATCH_ERROR)
    if not trusted and not error:
        error = "self signed certificate" if leaf.self_signed else UNKNOWN_ISSUER_ERROR
    stores = [TrustResult(s, trusted, "" if trusted else error) for s in ("Mozilla", "Apple", "Android", "Windows")]
    if custom_ca is not None:
        stores.append(TrustResult("Custom CA", custom_ca, "" if custom_ca else error or UNKNOWN_ISSUER_ERROR))
    return CertificateDeployment(
        chain=chain or ((leaf,) if leaf.self_signed else (leaf, ca_cert())),
        trust=tuple(stores), hostname_matches=hostname_matches, chain_in_order=True, chain_extra=(),
        chain_complete=chain_complete, chain_has_anchor=False, chain_has_sha1=chain_has_sha1,
        symantec_distrusted=symantec_distrusted,
        ocsp_stapled=ocsp_stapled or Check(OK, detail="stapled, trusted response"),
        must_staple=must_staple, sct_count=2,
    )


def preference(protocol: str, *names: str, enforced: bool | None = True) -> ServerPreference:
    return ServerPreference(protocol=protocol, enforced=enforced, order=tuple(names))


def make_facts(protocols=("TLSv1.2", "TLSv1.3"), suites=None, cert=None, certs=None, *,
               hsts_max_age: int | None = ONE_YEAR, hsts_valid: bool = True, hsts_tested: bool = True,
               not_tested_protocols=(), preferences=None, trust_use_custom_ca: bool = False,
               host: str = HOST, started_at: datetime = NOW, post_quantum=None, client_simulation=None,
               without_sni: WithoutSni | None = WithoutSni("same"), client_auth: str | None = "not_required",
               **checks) -> ScanFacts:
    """ScanFacts for `host`, A+ unless told otherwise.

    suites: CipherSuites or bare names (names go on TLSv1.2, or TLSv1.3 for 1.3 names);
    default DEFAULT_SUITES for each supported protocol. cert: a Certificate or a
    CertificateDeployment; certs: several deployments. hsts_max_age=None means no header;
    hsts_valid=False an unparseable one. Checks by name: heartbleed="bad", robot=Check(...).
    """
    return ScanFacts(
        host=host, port=443, ip="127.0.0.1", started_at=started_at, duration_s=2.0, scanner="factories",
        protocols=_protocol_checks(protocols, not_tested_protocols),
        suites=_suites(suites, protocols),
        preferences={p.protocol: p for p in (preferences or [])},
        curves=["X25519", "prime256v1"], curves_check=Check(OK),
        alpn=["h2", "http/1.1"], alpn_check=Check(OK),
        certificates=_deployments(cert, certs),
        trust_use_custom_ca=trust_use_custom_ca,
        hsts=_hsts(hsts_max_age, hsts_valid) if hsts_tested else None,
        hsts_check=_hsts_check(hsts_max_age, hsts_valid, hsts_tested),
        checks=_checks(checks),
        post_quantum=post_quantum,
        client_simulation=client_simulation,
        without_sni=without_sni,
        client_auth=client_auth,
    )


def _protocol_checks(supported, not_tested) -> dict[str, Check]:
    unknown = set(supported) | set(not_tested)
    if unknown - set(PROTOCOLS):
        raise ValueError(f"unknown protocols {sorted(unknown - set(PROTOCOLS))}; use {PROTOCOLS}")
    return {p: Check(OK) if p in supported else
            Check(NOT_TESTED, reason="handshakes timed out") if p in not_tested else Check(BAD)
            for p in PROTOCOLS}


def _suites(suites, protocols) -> list[CipherSuite]:
    if suites is None:
        return suites_for(protocols)
    return [suite(s) if isinstance(s, str) else s for s in suites]


def _deployments(cert, certs) -> list[CertificateDeployment]:
    if certs is not None:
        return list(certs)
    if isinstance(cert, CertificateDeployment):
        return [cert]
    return [deployment(cert)]


def _hsts(max_age: int | None, valid: bool) -> Hsts:
    if not valid:
        return Hsts(header='max-age="soon"', max_age=None, valid=False)
    if max_age is None:
        return Hsts(header=None, max_age=None)
    return Hsts(header=f"max-age={max_age}", max_age=max_age)


def _hsts_check(max_age: int | None, valid: bool, tested: bool) -> Check:
    if not tested:
        return Check(NOT_TESTED, reason="http_headers: BUG_IN_SSLYZE")
    good = valid and max_age is not None and max_age >= 15552000
    return Check(OK if good else BAD)


def _checks(overrides: dict) -> dict[str, Check]:
    unknown = set(overrides) - set(CHECK_NAMES)
    if unknown:
        raise TypeError(f"unknown checks {sorted(unknown)}; known: {sorted(CHECK_NAMES)}")
    checks = {name: Check(OK) for name in CHECK_NAMES}
    # A server set to resume no TLS 1.2 ticket resumes no TLS 1.3 one either, unless told otherwise.
    if "session_ticket_resumption" in overrides and "tls13_resumption" not in overrides:
        overrides = {**overrides, "tls13_resumption": overrides["session_ticket_resumption"]}
    for name, value in overrides.items():
        checks[name] = value if isinstance(value, Check) else Check(value, reason="probe failed"
                                                                    if value == NOT_TESTED else "")
    return checks
