"""A leaf's revocation status in words, the same on every report (page, PDF, JSON, CLI, findings)."""

from __future__ import annotations

from tlsaudit.domain.scanfacts import CRL, GOOD, REVOKED, STAPLED_OCSP, UNKNOWN, Revocation

# RFC 5280 CRLReason, as cryptography's ReasonFlags names them -> words.
REASONS = {
    "key_compromise": "key compromise",
    "ca_compromise": "CA compromise",
    "affiliation_changed": "affiliation changed",
    "superseded": "superseded",
    "cessation_of_operation": "cessation of operation",
    "certificate_hold": "certificate on hold",
    "privilege_withdrawn": "privilege withdrawn",
    "aa_compromise": "attribute authority compromise",
    "remove_from_crl": "removed from the CRL",
}
NOT_RECORDED = "revocation not checked (audit made before revocation checks)"


def reason_words(revocation: Revocation) -> str:
    name = revocation.revocation_reason
    return REASONS.get(name, name.replace("_", " ")) if name else "no reason given"


def revoked_words(revocation: Revocation) -> str:
    """'revoked on 2026-11-20 (key compromise), according to OCSP'"""
    when = f" on {revocation.revoked_at:%Y-%m-%d %H:%M} UTC" if revocation.revoked_at else ""
    return f"revoked{when} ({reason_words(revocation)}), according to {_answered_by(revocation)}"


def revocation_words(revocation: Revocation | None) -> str:
    """One clause: 'good (OCSP, http://ocsp.example/)', 'revoked on …', 'unknown: …', 'not checked: …'."""
    if revocation is None:
        return NOT_RECORDED
    if revocation.status == GOOD:
        return f"good, according to {_answered_by(revocation)}"
    if revocation.status == REVOKED:
        return revoked_words(revocation)
    if revocation.status == UNKNOWN:
        return f"unknown: {revocation.reason}"
    return f"not checked: {revocation.reason}"


def _answered_by(revocation: Revocation) -> str:
    if revocation.method == STAPLED_OCSP:
        return "the OCSP response the server staples"
    if revocation.method == CRL:
        return f"the CRL at {revocation.source}"
    return f"the OCSP responder {revocation.source}"
