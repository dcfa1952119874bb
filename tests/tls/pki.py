"""A tiny test PKI: a root CA, intermediates and leaves with the profile browsers (and
cryptography's verifier, which sslyze uses) require: CA certs with keyUsage keyCertSign and
basicConstraints CA:TRUE; leaves with CA:FALSE, serverAuth and a SAN."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    cert: x509.Certificate
    key: object

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())


def make_key(kind: str = "ec256"):
    """kind: rsa1024, rsa2048, ec256, ec384, ed25519."""
    if kind == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    if kind.startswith("rsa"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(kind[3:]))
    curves = {"ec256": ec.SECP256R1(), "ec384": ec.SECP384R1()}
    return ec.generate_private_key(curves[kind])


def make_ca(name: str = "TLS Audit Test Root", key: str = "ec256", issuer: Issued | None = None,
            days: int = 3650) -> Issued:
    """A root (issuer None) or an intermediate CA."""
    private_key = make_key(key)
    subject = _name(name)
    builder = (_base(subject, issuer.cert.subject if issuer else subject, private_key.public_key(), days)
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False, decipher_only=False), critical=True))
    builder = _add_key_ids(builder, private_key, issuer)
    signer = issuer.key if issuer else private_key
    return Issued(builder.sign(signer, hashes.SHA256()), private_key)


def issue_leaf(issuer: Issued, dns: tuple[str, ...] = ("localhost",), ips: tuple[str, ...] = ("127.0.0.1",),
               key: str = "rsa2048", days: int = 30, not_before: datetime | None = None,
               extensions: tuple[x509.ExtensionType, ...] = ()) -> Issued:
    """`extensions`: more non-critical ones, e.g. AIA (OCSP responder) and CRL distribution points."""
    private_key = make_key(key)
    sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    builder = (_base(_name(dns[0] if dns else "leaf"), issuer.cert.subject, private_key.public_key(), days, not_before)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                            key_encipherment=key.startswith("rsa"), data_encipherment=False,
                                            key_agreement=False, key_cert_sign=False, crl_sign=False,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .add_extension(x509.SubjectAlternativeName(sans), critical=False))
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    builder = _add_key_ids(builder, private_key, issuer)
    return Issued(builder.sign(issuer.key, hashes.SHA256()), private_key)


def write_pem(path: Path, *items: Issued) -> Path:
    path.write_bytes(b"".join(item.cert_pem for item in items))
    return path


def write_key(path: Path, item: Issued) -> Path:
    path.write_bytes(item.key_pem)
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "TLS Audit tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _base(subject, issuer_name, public_key, days: int, not_before: datetime | None = None) -> x509.CertificateBuilder:
    start = not_before or datetime.now(timezone.utc) - timedelta(hours=1)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name).public_key(public_key)
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + timedelta(days=days)))


def _add_key_ids(builder: x509.CertificateBuilder, private_key, issuer: Issued | None) -> x509.CertificateBuilder:
    builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(private_key.public_key()), critical=False)
    authority = issuer.key.public_key() if issuer else private_key.public_key()
    return builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(authority), critical=False)
