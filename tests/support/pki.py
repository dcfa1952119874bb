"""A private test PKI (root CA -> intermediate CA -> leaves) and fixed DH groups, written as PEM files.

The profiles follow what sslyze 6.x's `cryptography` verifier demands (sslyze-notes §5, pitfalls 1
and 2): CAs carry a critical keyUsage with keyCertSign, leaves carry CA:FALSE, and every certificate
has SKI/AKI. So a chain from this CA validates when the root PEM is passed as the custom CA file.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dh, ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_KINDS = ("rsa1024", "rsa2048", "rsa4096", "ec256", "ec384")
EXPIRED_WINDOW = (
    datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc),
    datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc),
)
# CAs start before the expired window, so the expired leaf was validly issued in its time.
CA_NOT_BEFORE = datetime.datetime(2019, 1, 1, tzinfo=datetime.timezone.utc)
LAB_ORG = "TLS Audit test lab"


@dataclass(frozen=True)
class IssuedLeaf:
    """Paths of one leaf: `cert` is the leaf alone, `fullchain` is leaf + intermediate."""

    name: str
    cert: Path
    fullchain: Path
    key: Path
    certificate: x509.Certificate


@cache
def make_key(kind: str):
    """Return the private key for `kind`; cached per process because RSA-4096 keygen takes ~1 s."""
    if kind.startswith("rsa"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(kind[3:]))
    curves = {"ec256": ec.SECP256R1(), "ec384": ec.SECP384R1()}
    if kind not in curves:
        raise ValueError(f"unknown key kind {kind!r}; expected one of {KEY_KINDS}")
    return ec.generate_private_key(curves[kind])


def name_for(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, LAB_ORG),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def ca_key_usage() -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
        encipher_only=False, decipher_only=False,
    )


def leaf_key_usage(key) -> x509.KeyUsage:
    # keyEncipherment only makes sense for RSA (static RSA key exchange); EC keys sign only.
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False,
        key_encipherment=isinstance(key, rsa.RSAPrivateKey),
        data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
        encipher_only=False, decipher_only=False,
    )


def build_ca(common_name: str, key, issuer_name: x509.Name, issuer_key, path_length, not_after):
    public_key = key.public_key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(name_for(common_name))
        .issuer_name(issuer_name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(CA_NOT_BEFORE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(ca_key_usage(), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    )
    return builder.sign(issuer_key, hashes.SHA256())


def san_for(dns_names, ip_addresses) -> x509.SubjectAlternativeName:
    entries = [x509.DNSName(n) for n in dns_names]
    entries += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    return x509.SubjectAlternativeName(entries)


def build_leaf(key, dns_names, ip_addresses, not_before, not_after, issuer_cert, issuer_key, aia_url):
    """Sign a server certificate; with `issuer_cert=None` it is self-signed (but still CA:FALSE)."""
    subject = name_for(dns_names[0])
    signer_key = issuer_key if issuer_cert is not None else key
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(leaf_key_usage(key), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(san_for(dns_names, ip_addresses), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()), critical=False
        )
    )
    if aia_url:
        # Lets an AIA-fetching client complete a chain the server sends incomplete.
        access = x509.AccessDescription(x509.AuthorityInformationAccessOID.CA_ISSUERS,
                                        x509.UniformResourceIdentifier(aia_url))
        builder = builder.add_extension(x509.AuthorityInformationAccess([access]), critical=False)
    return builder.sign(signer_key, hashes.SHA256())


def pem_of_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_of_key(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_file(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


class TestPki:
    """Root and intermediate CA in `directory`; `issue_leaf` adds server certificates next to them.

    Files: root.pem (give this to scanners as the custom CA), intermediate.pem, intermediate.der,
    and per leaf <name>.crt, <name>.fullchain.pem, <name>.key.
    """

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.root_key = make_key("rsa2048")
        # A separate key object for the intermediate: same-key CAs would confuse AKI matching.
        self.intermediate_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        far = now() + datetime.timedelta(days=3650)
        self.root = build_ca("TLS Audit Test Root CA", self.root_key, name_for("TLS Audit Test Root CA"),
                             self.root_key, path_length=1, not_after=far)
        self.intermediate = build_ca("TLS Audit Test Intermediate CA", self.intermediate_key,
                                     self.root.subject, self.root_key, path_length=0, not_after=far)
        self.ca_file = write_file(self.directory / "root.pem", pem_of_cert(self.root))
        self.intermediate_file = write_file(self.directory / "intermediate.pem", pem_of_cert(self.intermediate))
        self.intermediate_der = write_file(
            self.directory / "intermediate.der", self.intermediate.public_bytes(serialization.Encoding.DER)
        )

    def issue_leaf(
        self,
        name: str,
        key: str = "rsa2048",
        dns_names: tuple[str, ...] = ("localhost",),
        ip_addresses: tuple[str, ...] = ("127.0.0.1",),
        not_before: datetime.datetime | None = None,
        not_after: datetime.datetime | None = None,
        self_signed: bool = False,
        aia_url: str | None = None,
    ) -> IssuedLeaf:
        """Issue (or self-sign) a leaf for `dns_names`/`ip_addresses` and write its PEM files."""
        private_key = make_key(key)
        not_before = not_before or now() - datetime.timedelta(days=1)
        not_after = not_after or now() + datetime.timedelta(days=90)
        issuer_cert, issuer_key = (None, None) if self_signed else (self.intermediate, self.intermediate_key)
        cert = build_leaf(private_key, dns_names, ip_addresses, not_before, not_after,
                          issuer_cert, issuer_key, aia_url)
        chain = pem_of_cert(cert) + (b"" if self_signed else pem_of_cert(self.intermediate))
        return IssuedLeaf(
            name=name,
            cert=write_file(self.directory / f"{name}.crt", pem_of_cert(cert)),
            fullchain=write_file(self.directory / f"{name}.fullchain.pem", chain),
            key=write_file(self.directory / f"{name}.key", pem_of_key(private_key), mode=0o600),
            certificate=cert,
        )


# --- DH groups -----------------------------------------------------------------------------------
# Decision: compute the two standard groups from their RFC formulas instead of generating params.
# `openssl dhparam 1024` takes seconds and gives a fresh random group each run; the standard groups
# are instant, reproducible and are what real servers use (and what Logjam "common prime" checks know).


def pi_fixed_point(bits: int) -> int:
    """floor(pi * 2**bits), by Machin's formula in integer arithmetic (guard bits absorb rounding)."""
    guard = 32
    one = 1 << (bits + guard)

    def arctan_inverse(x: int) -> int:
        total, term, k, sign = 0, one // x, 1, 1
        while term:
            total += sign * (term // k)
            term //= x * x
            k += 2
            sign = -sign
        return total

    return (4 * (4 * arctan_inverse(5) - arctan_inverse(239))) >> guard


def e_fixed_point(bits: int) -> int:
    """floor(e * 2**bits), summing 1/k! in integer arithmetic."""
    guard = 32
    term = total = 1 << (bits + guard)
    k = 1
    while term:
        term //= k
        total += term
        k += 1
    return total >> guard


def rfc2409_group2_prime() -> int:
    """The 1024-bit MODP prime of RFC 2409 §6.2 (Oakley group 2).

    p = 2^1024 - 2^960 - 1 + 2^64 * (floor(2^894 pi) + 129093)
    """
    return 2**1024 - 2**960 - 1 + 2**64 * (pi_fixed_point(894) + 129093)


def rfc7919_ffdhe2048_prime() -> int:
    """The ffdhe2048 prime of RFC 7919 App. A.1: 2^2048 - 2^1984 + (floor(2^1918 e) + 560316) * 2^64 - 1."""
    return 2**2048 - 2**1984 + (e_fixed_point(1918) + 560316) * 2**64 - 1


DH_GROUPS = {"dh1024": rfc2409_group2_prime, "dh2048": rfc7919_ffdhe2048_prime}


def dh_params_pem(group: str) -> bytes:
    """PKCS#3 PEM ("DH PARAMETERS") for `group` ("dh1024" or "dh2048"), generator 2, as nginx's ssl_dhparam reads it."""
    numbers = dh.DHParameterNumbers(DH_GROUPS[group](), 2)
    return numbers.parameters().parameter_bytes(serialization.Encoding.PEM, serialization.ParameterFormat.PKCS3)


def write_dh_params(directory: Path, group: str) -> Path:
    return write_file(Path(directory) / f"{group}.pem", dh_params_pem(group))

