"""What a simulated client refuses after the server has chosen: its own minimum signature and key
sizes, which a replayed ClientHello cannot show.

A replay reads the server's choice (version, suite, group); the real client then judges what the
server sends with it. OpenSSL 3.0 at Debian's security level 2 (curl, Python) refuses the SHA-1/MD5
signature that TLS 1.0 and 1.1 put on an (EC)DHE key exchange ("legacy sigalg disallowed or
unsupported"), DH groups under 2048 bits ("dh key too small") and RSA keys under 2048 bits anywhere
in the chain it verifies ("EE/CA certificate key too weak"); an RSA key exchange on TLS 1.0 passes,
having no signature. Each profile lists the limits measured from its real client
(tlsaudit/domain/data/client_profiles.json, "limits").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tlsaudit.domain.scanfacts import Certificate, CertificateDeployment, ClientHandshake

LEGACY_VERSIONS = ("SSLv3", "TLSv1.0", "TLSv1.1")
ECDSA_SIGALGS = {0x0403, 0x0503, 0x0603, 0x0203}


@dataclass(frozen=True)
class ClientLimits:
    refuses_legacy_signatures: bool = False   # a signed (EC)DHE key exchange on TLS 1.0/1.1
    min_dh_bits: int = 0
    min_rsa_bits: int = 0                      # every RSA key of the chain it verifies, leaf first
    library: str = ""                          # "OpenSSL 3.0 at security level 2": said in each refusal

    @classmethod
    def from_profile(cls, profile: dict) -> ClientLimits:
        limits = profile.get("limits") or {}
        return cls(refuses_legacy_signatures=limits.get("refuses_legacy_signatures", False),
                   min_dh_bits=limits.get("min_dh_bits", 0), min_rsa_bits=limits.get("min_rsa_bits", 0),
                   library=limits.get("library", ""))


def enforce_limits(row: ClientHandshake, limits: ClientLimits, deployments: list[CertificateDeployment],
                   signature_algorithms: list[int]) -> ClientHandshake:
    """The row as the real client ends it: refused, with why, when the server's choice breaks one of
    the client's limits; else unchanged."""
    if row.protocol is None:
        return row
    why = refusal(row, limits, served_to(row, deployments, signature_algorithms))
    if not why:
        return row
    return dataclasses.replace(row, protocol=None, suite=None, group=None, dh_bits=None,
                               error=f"{why} ({limits.library})" if limits.library else why)


def refusal(row: ClientHandshake, limits: ClientLimits, deployment: CertificateDeployment | None) -> str:
    suite = row.suite or ""
    signed_kx = suite.startswith(("TLS_ECDHE_", "TLS_DHE_"))
    if limits.refuses_legacy_signatures and row.protocol in LEGACY_VERSIONS and signed_kx:
        version = row.protocol.replace("TLSv", "TLS ").replace("SSLv3", "SSL 3.0")
        return (f"refuses the SHA-1/MD5 signature {version} puts on the server's key exchange "
                "(legacy sigalg disallowed)")
    if limits.min_dh_bits and row.dh_bits and row.dh_bits < limits.min_dh_bits:
        return f"refuses the server's {row.dh_bits}-bit DH group, under its minimum of {limits.min_dh_bits} bits"
    weak = _weak_rsa(deployment, limits.min_rsa_bits) if deployment and limits.min_rsa_bits else None
    if weak is not None:
        role = "certificate" if weak is deployment.leaf else "intermediate"
        return (f"refuses the {role} {weak.subject}: its RSA key has {weak.key_bits} bits, under its minimum "
                f"of {limits.min_rsa_bits}")
    return ""


def _weak_rsa(deployment: CertificateDeployment, min_bits: int) -> Certificate | None:
    """The first sent certificate (roots aside: the client's own copy is the anchor) with a short RSA key."""
    extra = set(deployment.chain_extra or ())   # OpenSSL checks the chain it builds, not what rides along
    return next((c for i, c in enumerate(deployment.chain) if not c.self_signed and c.key_type == "RSA"
                 and c.key_bits < min_bits and (i == 0 or c.subject not in extra)), None)


def served_to(row: ClientHandshake, deployments: list[CertificateDeployment],
              signature_algorithms: list[int]) -> CertificateDeployment | None:
    """Which certificate the server sends this client: the one its suite authenticates (TLS 1.2 and
    earlier), or, on TLS 1.3, the kind the client's signature algorithms list first."""
    if not deployments:
        return None
    suite = row.suite or ""
    if "_ECDSA_" in suite:
        wanted = "EC"
    elif "_RSA_" in suite:
        wanted = "RSA"
    else:
        wanted = "EC" if signature_algorithms and signature_algorithms[0] in ECDSA_SIGALGS else "RSA"
    return next((d for d in deployments if d.leaf.key_type == wanted), deployments[0])
