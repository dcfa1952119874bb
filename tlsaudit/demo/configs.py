"""A handful of realistic server configurations, as the ScanFacts a real scan would produce.

Each configuration is graded once per certificate period by the real pure domain
(`build_report`), and the seed inserts copies; the host name, the certificate fingerprint and
serial, the scan time and the "in N days" of the expiry check are placeholders that the seed
replaces per site and per audit (see seed.py), so every page renders a real report.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from tlsaudit.domain.ciphers import classify, nominal_bits
from tlsaudit.domain.scanfacts import (
    BAD,
    CHECK_NAMES,
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
)

# Placeholders replaced in the JSON text of facts and reports (see seed.personalise / seed.stamp).
HOST = "demo-host.placeholder.invalid"
IP = "192.0.2.254"
FINGERPRINT = "0f" * 32
SERIAL = "5eed5eed5eed5eed"
STARTED_AT = datetime.fromisoformat("1999-09-09T09:09:09+00:00")
DURATION_S = 4242.4242

STORES = ("Mozilla", "Apple", "Android", "Windows")
SELF_SIGNED_ERROR = "self-signed certificate"
ONE_YEAR, TWO_YEARS = 31536000, 63072000


@dataclass(frozen=True)
class Issuer:
    """A CA that issues site certificates: its intermediate and root, and how long leaves last."""
    key: str
    intermediate: str
    root: str
    lifetime_days: int
    renew_before_days: int      # how many days before expiry the site usually renews


ISSUERS = {
    "letsencrypt": Issuer("letsencrypt", "CN=R11,O=Let's Encrypt,C=US",
                          "CN=ISRG Root X1,O=Internet Security Research Group,C=US", 90, 30),
    "sectigo": Issuer("sectigo", "CN=Sectigo RSA Domain Validation Secure Server CA,O=Sectigo Limited,L=Salford,"
                                 "ST=Greater Manchester,C=GB",
                      "CN=USERTrust RSA Certification Authority,O=The USERTRUST Network,L=Jersey City,ST=New Jersey,C=US",
                      364, 21),
    "digicert": Issuer("digicert", "CN=DigiCert Global G2 TLS RSA SHA256 2020 CA1,O=DigiCert Inc,C=US",
                       "CN=DigiCert Global Root G2,OU=www.digicert.com,O=DigiCert Inc,C=US", 396, 14),
}

TLS12_ECDHE_AEAD = ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256")
TLS12_DHE = ("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384")
TLS12_CBC = ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
             "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA")
TLS12_RSA_KX = ("TLS_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_CBC_SHA",
                "TLS_RSA_WITH_AES_256_CBC_SHA")
LEGACY_CBC = ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
              "TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_CBC_SHA")
TRIPLE_DES = ("TLS_RSA_WITH_3DES_EDE_CBC_SHA",)
TLS13 = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
STRONG_ECDSA = ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256")
STRONG_TLS13 = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")


@dataclass(frozen=True)
class Config:
    """What a server offers, apart from its certificate's dates."""
    name: str
    description: str
    suites: dict[str, tuple[str, ...]]      # protocol -> accepted IANA names, in the server's order
    server_order: bool = True
    hsts_max_age: int | None = ONE_YEAR
    hsts_preload: bool = False
    ec_leaf: bool = False
    self_signed: bool = False
    hostname_matches: bool = True
    ocsp_stapled: bool = True
    bad_checks: tuple[str, ...] = ()
    dh_bits: int = 2048

    @property
    def protocols(self) -> tuple[str, ...]:
        return tuple(p for p in PROTOCOLS if self.suites.get(p))


CONFIGS = {c.name: c for c in (
    Config("modern", "TLS 1.2 and 1.3, ECDSA certificate, AEAD suites only, HSTS preload",
           {"TLSv1.2": STRONG_ECDSA, "TLSv1.3": STRONG_TLS13}, hsts_max_age=TWO_YEARS, hsts_preload=True, ec_leaf=True),
    Config("intermediate", "Mozilla intermediate: TLS 1.2 and 1.3, ECDHE and DHE AEAD suites, HSTS",
           {"TLSv1.2": TLS12_ECDHE_AEAD + TLS12_DHE, "TLSv1.3": TLS13}),
    Config("no_hsts", "Mozilla intermediate without an HSTS header",
           {"TLSv1.2": TLS12_ECDHE_AEAD + TLS12_CBC, "TLSv1.3": TLS13}, hsts_max_age=None, ocsp_stapled=False),
    Config("legacy", "TLS 1.0 and 1.1 still on, CBC suites, short HSTS",
           {"TLSv1.0": LEGACY_CBC, "TLSv1.1": LEGACY_CBC, "TLSv1.2": TLS12_ECDHE_AEAD + TLS12_CBC + TLS12_RSA_KX,
            "TLSv1.3": TLS13}, hsts_max_age=86400, ocsp_stapled=False),
    Config("old", "No TLS 1.3, RSA key exchange and 3DES accepted, client order, 1024-bit DH",
           {"TLSv1.0": LEGACY_CBC + TRIPLE_DES, "TLSv1.1": LEGACY_CBC + TRIPLE_DES,
            "TLSv1.2": TLS12_RSA_KX + TLS12_CBC + ("TLS_DHE_RSA_WITH_AES_128_CBC_SHA",) + TRIPLE_DES},
           server_order=False, hsts_max_age=None, ocsp_stapled=False, dh_bits=1024,
           bad_checks=("fallback_scsv", "extended_master_secret")),
    Config("self_signed", "A self-signed certificate left in place after a migration",
           {"TLSv1.2": TLS12_ECDHE_AEAD, "TLSv1.3": TLS13}, self_signed=True, ocsp_stapled=False),
    Config("wrong_name", "The certificate of another site served on this name",
           {"TLSv1.2": TLS12_ECDHE_AEAD, "TLSv1.3": TLS13}, hostname_matches=False),
    Config("heartbleed", "An unpatched OpenSSL: Heartbleed and CCS injection",
           {"TLSv1.0": LEGACY_CBC, "TLSv1.1": LEGACY_CBC, "TLSv1.2": TLS12_ECDHE_AEAD + TLS12_CBC},
           hsts_max_age=None, ocsp_stapled=False, bad_checks=("heartbleed", "ccs_injection", "fallback_scsv")),
)}

# What a site usually runs (weights), what it may be upgraded to, and what a bad deploy looks like.
BASELINE_WEIGHTS = {"modern": 18, "intermediate": 34, "no_hsts": 22, "legacy": 17, "old": 7, "heartbleed": 2}
UPGRADES = {"no_hsts": "intermediate", "legacy": "intermediate", "old": "legacy", "heartbleed": "no_hsts",
            "intermediate": "modern"}
REGRESSIONS = ("self_signed", "wrong_name", "legacy", "no_hsts")


@dataclass(frozen=True)
class CertPeriod:
    """One leaf certificate of a site: who issued it and when it is valid."""
    issuer: str
    not_before: datetime
    not_after: datetime


def scan_facts(config: Config, cert: CertPeriod) -> ScanFacts:
    """The facts a scan of `config` serving `cert` reports (host, IP, time and ids are placeholders)."""
    return ScanFacts(
        host=HOST, port=443, ip=IP, started_at=STARTED_AT, duration_s=DURATION_S, scanner="sslyze 6.3.1",
        protocols={p: Check(OK) if config.suites.get(p) else Check(BAD) for p in PROTOCOLS},
        suites=[suite(name, protocol, config.dh_bits) for protocol in PROTOCOLS
                for name in config.suites.get(protocol, ())],
        preferences={p: ServerPreference(p, config.server_order if len(names) > 1 else None, tuple(names),
                                         "" if len(names) > 1 else "only one suite accepted")
                     for p, names in config.suites.items() if names},
        curves=["X25519", "prime256v1", "secp384r1"], curves_check=Check(OK),
        alpn=["h2", "http/1.1"], alpn_check=Check(OK),
        certificates=[deployment(config, cert)],
        hsts=Hsts(header=hsts_header(config), max_age=config.hsts_max_age,
                  include_subdomains=config.hsts_preload, preload=config.hsts_preload),
        hsts_check=Check(OK if (config.hsts_max_age or 0) >= 15552000 else BAD),
        checks={name: Check(BAD if name in config.bad_checks else OK) for name in CHECK_NAMES},
    )


def suite(name: str, protocol: str, dh_bits: int) -> CipherSuite:
    kx = classify(CipherSuite(name, "", protocol, 0)).kx
    kx_type = "ECDH" if kx in ("ECDHE", "TLS13") else "DH" if kx == "DHE" else None
    bits = 253 if kx_type == "ECDH" else dh_bits if kx_type == "DH" else None
    return CipherSuite(name=name, openssl_name="", protocol=protocol, key_size=nominal_bits(name), kx_type=kx_type,
                       kx_bits=bits, kx_curve="X25519" if kx_type == "ECDH" else None)


def hsts_header(config: Config) -> str | None:
    if config.hsts_max_age is None:
        return None
    extra = "; includeSubDomains; preload" if config.hsts_preload else ""
    return f"max-age={config.hsts_max_age}{extra}"


def deployment(config: Config, cert: CertPeriod) -> CertificateDeployment:
    issuer = ISSUERS[cert.issuer]
    leaf = leaf_certificate(config, cert, issuer)
    # Stores judge the chain; a wrong name is hostname_matches' business (as the engine records it).
    trusted = not config.self_signed
    error = "" if trusted else SELF_SIGNED_ERROR
    chain = (leaf,) if config.self_signed else (leaf, intermediate_certificate(issuer))
    return CertificateDeployment(
        chain=chain, trust=tuple(TrustResult(store, trusted, error) for store in STORES),
        hostname_matches=config.hostname_matches, chain_in_order=True, chain_extra=(), chain_complete=True,
        chain_has_anchor=False, chain_has_sha1=False, symantec_distrusted=False,
        ocsp_stapled=Check(OK, detail="stapled, trusted response") if config.ocsp_stapled else
        Check(BAD, detail="no OCSP response stapled"),
        must_staple=False, sct_count=0 if config.self_signed else 2)


def leaf_certificate(config: Config, cert: CertPeriod, issuer: Issuer) -> Certificate:
    names = ("www.other-site.example",) if not config.hostname_matches else (HOST, f"www.{HOST}")
    subject = f"CN={names[0]}"
    return Certificate(
        subject=subject, issuer=subject if config.self_signed else issuer.intermediate, serial_hex=SERIAL,
        not_before=cert.not_before, not_after=cert.not_after,
        key_type="EC" if config.ec_leaf else "RSA", key_bits=256 if config.ec_leaf else 2048,
        curve="secp256r1" if config.ec_leaf else None,
        signature_hash="sha256", san_dns=names, self_signed=config.self_signed,
        fingerprint_sha256=FINGERPRINT, rsa_exponent=None if config.ec_leaf else 65537)


def intermediate_certificate(issuer: Issuer) -> Certificate:
    return Certificate(
        subject=issuer.intermediate, issuer=issuer.root, serial_hex="0a0141420000015385736a0b85eca708",
        not_before=datetime.fromisoformat("2024-03-13T00:00:00+00:00"),
        not_after=datetime.fromisoformat("2030-03-12T23:59:59+00:00"),
        key_type="RSA", key_bits=2048, curve=None, signature_hash="sha256", is_ca=True,
        fingerprint_sha256=hashlib.sha256(issuer.intermediate.encode()).hexdigest(), rsa_exponent=65537)
