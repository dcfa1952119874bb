"""Distrust by date on certificates built as CAs issue them (#29 item 4): an Entrust-like and a Chunghwa-like
chain (an intermediate whose authority key identifier is the real root's key, read from Debian's
ca-certificates), leaves with embedded SCT lists dated before and after the distrust dates, read by the
engine (workers/tls/certs.py) from their DER and graded. The roots stay in every store: only the dates
tell Chrome's verdict apart.
"""

from __future__ import annotations

import struct
from datetime import datetime, timedelta, timezone

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from tests.domain.factories import deployment, make_facts
from tests.support.pki import make_key
from tlsaudit.domain.distrust import distrusts, table
from tlsaudit.domain.findings import derive_findings
from tlsaudit.domain.grading import grade
from workers.tls.certs import describe_certificate

UTC = timezone.utc
SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
ENTRUST_G2 = next(e for e in table() if "G2" in e.root and e.ca == "Entrust" and e.store == "Chrome")
CHUNGHWA = next(e for e in table() if "ePKI" in e.root and e.store == "Chrome")


def sct_list(*timestamps: datetime) -> x509.UnrecognizedExtension:
    """RFC 6962 §3.3: a TLS-encoded list of v1 SCTs (log id, ms timestamp, no extensions, a signature the
    reader does not check), inside the extension's OCTET STRING."""
    scts = b""
    for i, when in enumerate(timestamps):
        signature = b"\x30\x06\x02\x01\x01\x02\x01\x01"
        sct = (b"\x00" + bytes([i + 1]) * 32 + struct.pack(">Q", int(when.timestamp() * 1000)) + b"\x00\x00"
               + b"\x04\x03" + struct.pack(">H", len(signature)) + signature)
        scts += struct.pack(">H", len(sct)) + sct
    body = struct.pack(">H", len(scts)) + scts
    return x509.UnrecognizedExtension(SCT_LIST, b"\x04" + der_length(len(body)) + body)


def der_length(n: int) -> bytes:
    return bytes([n]) if n < 0x80 else bytes([0x81, n]) if n < 0x100 else bytes([0x82]) + n.to_bytes(2, "big")


def chain_under(root_key_id: str, first_logged: datetime, not_before: datetime) -> tuple:
    """An intermediate naming the root's key as its issuer's, and a 90-day leaf it signs with two SCTs."""
    ca_key, leaf_key = make_key("ec256"), make_key("ec256")
    ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Distrust Lab"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "Distrust Lab Issuing CA")])
    intermediate = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                    .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
                    .not_valid_before(not_before - timedelta(days=400)).not_valid_after(not_before + timedelta(days=2000))
                    .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                    .add_extension(x509.AuthorityKeyIdentifier(bytes.fromhex(root_key_id), None, None), critical=False)
                    .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])).issuer_name(ca_name)
            .public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_before + timedelta(days=90))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .add_extension(sct_list(first_logged + timedelta(minutes=3), first_logged), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return describe_certificate(leaf), describe_certificate(intermediate)


def audited(root_key_id: str, first_logged: datetime, not_before: datetime | None = None, now: datetime | None = None):
    leaf, intermediate = chain_under(root_key_id, first_logged, not_before or first_logged - timedelta(hours=1))
    facts = make_facts(cert=deployment(leaf, chain=(leaf, intermediate)),
                       started_at=now or (not_before or first_logged) + timedelta(days=10))
    return facts, leaf


@pytest.mark.parametrize("entry, first_logged, expected_grade", [
    (ENTRUST_G2, datetime(2024, 11, 11, 23, 0, tzinfo=UTC), "A+"),        # an hour before Chrome's date
    (ENTRUST_G2, datetime(2024, 11, 12, 0, 30, tzinfo=UTC), "T"),        # half an hour after it
    (CHUNGHWA, datetime(2025, 7, 31, 23, 0, tzinfo=UTC), "A+"),
    (CHUNGHWA, datetime(2025, 8, 1, 0, 0, 30, tzinfo=UTC), "T"),
])
def test_chrome_dates_the_leaf_by_its_earliest_sct(entry, first_logged, expected_grade):
    facts, leaf = audited(entry.key_id, first_logged)
    assert leaf.earliest_sct == first_logged                     # the earlier of its two SCTs, from the DER
    result = grade(facts)
    assert result.grade == expected_grade
    [finding] = [f for f in derive_findings(facts) if f.id == "cert.distrusted_after"]
    assert finding.status == "fail"
    if expected_grade == "T":
        [issue] = [i for i in result.trust_issues if i.rule_id == "trust.distrusted_after"]
        assert issue.reason.startswith(f"Chrome distrusts {entry.ca} certificates issued after ")
        assert finding.severity == "critical" and "refuses this one" in finding.evidence
    else:
        assert finding.severity == "medium" and "its renewal must come from another CA" in finding.evidence


def test_mozilla_dates_the_same_leaf_by_its_not_before():
    """Logged by CT on 2024-11-20 (after Chrome's date) but valid from 2024-11-20 too: Chrome refuses it, and
    Mozilla, whose date is 2024-11-30 by notBefore, still trusts it; one of 2024-12-02 both refuse."""
    facts, _ = audited(ENTRUST_G2.key_id, datetime(2024, 11, 20, tzinfo=UTC))
    stores = {d.entry.store: d.applies for d in distrusts(facts.certificates[0])}
    assert stores == {"Chrome": True, "Mozilla": False}
    facts, _ = audited(ENTRUST_G2.key_id, datetime(2024, 12, 2, tzinfo=UTC))
    assert {d.entry.store: d.applies for d in distrusts(facts.certificates[0])} == {"Chrome": True, "Mozilla": True}


def test_a_lab_chain_with_another_root_key_is_left_alone():
    facts, _ = audited("00" * 20, datetime(2025, 9, 1, tzinfo=UTC))
    assert grade(facts).grade == "A+"
    [finding] = [f for f in derive_findings(facts) if f.id == "cert.distrusted_after"]
    assert finding.status == "pass"
