"""ACME Renewal Information after each audit: ask the CA that issued the served certificate when
to renew it (RFC 9773) and keep the window on a row per site and certificate, with where it ended before
the CA last moved it earlier (the alert is tlsaudit.alerts.services'). Every request goes through the
outbound SSRF guard; no failure raises."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.x509.oid import NameOID
from django.conf import settings
from django.utils import timezone

from tlsaudit.alerts.models import AlertSettings
from tlsaudit.audits.models import Audit, AuditCertificate, RenewalInfo
from tlsaudit.core import outbound
from tlsaudit.domain import ari
from tlsaudit.domain import renewals as renewal_rules
from tlsaudit.domain.alerts import RENEWAL_SHARE, organization_of
from tlsaudit.domain.renewals import renewal_due
from tlsaudit.domain.scanfacts import ScanFacts
from tlsaudit.sites.models import Site

PURPOSE = "ACME Renewal Information requests"
USER_AGENT = "TLSAudit-ARI/1 (+RFC 9773)"
MAX_BYTES = 16 * 1024
MAX_CERT_ID = 200      # a 20-byte key id and a 20-byte serial take 56 characters


@dataclass(frozen=True)
class Answer:
    status: str                      # RenewalInfo.Status
    window: ari.Window | None = None
    error: str = ""


def directories() -> list[ari.CaDirectory]:
    """The deployment's own CAs first, then the built-in public ones."""
    return [ari.directory_from(entry) for entry in settings.ARI_DIRECTORIES] + list(ari.builtin_directories())


def is_builtin(ca: ari.CaDirectory) -> bool:
    return ca in ari.builtin_directories()


def publicly_trusted(facts: ScanFacts) -> bool:
    return bool(facts.certificates and any(
        t.trusted or t.dates_only for t in facts.certificates[0].trust if t.store != "Custom CA"))


def served_leaf(facts: ScanFacts | None) -> x509.Certificate | None:
    if facts is None or not facts.certificates or not facts.certificates[0].leaf.pem:
        return None
    try:
        return x509.load_pem_x509_certificate(facts.certificates[0].leaf.pem.encode())
    except ValueError:
        return None


def issuer_org(cert: x509.Certificate) -> str:
    try:
        names = cert.issuer.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    except ValueError:
        return ""
    return str(names[0].value) if names else ""


def key_identifier(cert: x509.Certificate) -> bytes | None:
    try:
        return cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    except (x509.ExtensionNotFound, ValueError):
        return None


@dataclass(frozen=True)
class Refreshed:
    audit: Audit
    row: RenewalInfo
    moved_from: ari.Window | None       # the window before, when the CA moved it earlier this time


def refresh(audit_id: int) -> Refreshed | None:
    """Fetch and store the window of the audit's served certificate; None when its CA runs no ARI we know
    (or the audit served no certificate)."""
    audit = Audit.objects.select_related("site").filter(pk=audit_id, status=Audit.Status.DONE).first()
    facts = audit.scan_facts() if audit else None
    leaf = served_leaf(facts)
    if leaf is None:
        return None
    ca = ari.directory_for(issuer_org(leaf), directories())
    if ca is None or (is_builtin(ca) and not publicly_trusted(facts)):
        return None    # a public CA is asked only about chains the public stores trust: not about any claimant
    aki = key_identifier(leaf)
    cert_id = ari.cert_id(aki, leaf.serial_number) if aki else ""
    if not aki:
        answer = Answer(RenewalInfo.Status.FAILED, error="The certificate names no authority key identifier, so "
                                                         "its CA cannot be asked for a renewal window (the "
                                                         "certificate's issuer left it out).")
    elif len(cert_id) > MAX_CERT_ID:
        answer, cert_id = Answer(RenewalInfo.Status.FAILED, error="The certificate's key identifier and serial are "
                                                                  "too long for an ARI request (its issuer's doing)."), ""
    else:
        answer = ask(ca, cert_id)
    fingerprint = audit.certificates.filter(deployment=0, position=0).values_list("fingerprint_sha256", flat=True).first()
    return store(audit, fingerprint or "", ca, cert_id, answer)


def ask(ca: ari.CaDirectory, cert_id: str) -> Answer:
    """The CA's directory, then its renewalInfo resource for `cert_id`."""
    directory = fetch(ca.directory)
    if directory.error or directory.status != 200:
        return failed(f"{ca.name}'s ACME directory ({ca.directory})", directory)
    try:
        base = json.loads(directory.body)["renewalInfo"]
        if not isinstance(base, str):
            raise TypeError("renewalInfo is not a URL")
    except (ValueError, KeyError, TypeError, RecursionError):
        return Answer(RenewalInfo.Status.FAILED, error=f"{ca.name}'s ACME directory names no renewalInfo resource: "
                                                        "the CA does not offer ARI there (the CA's side).")
    if urlsplit(base).hostname != urlsplit(ca.directory).hostname:
        return Answer(RenewalInfo.Status.FAILED, error=f"{ca.name}'s ACME directory sends renewal requests to another "
                                                        f"host ({urlsplit(base).hostname}): not followed.")
    info = fetch(f"{base.rstrip('/')}/{cert_id}")
    if info.error:
        return failed(f"{ca.name}'s renewal information", info)
    if info.status == 404:
        return Answer(RenewalInfo.Status.UNKNOWN, error=f"{ca.name} does not know this certificate (HTTP 404): "
                                                         "it was not issued by its ACME server.")
    if info.status != 200:
        return failed(f"{ca.name}'s renewal information", info)
    try:
        return Answer(RenewalInfo.Status.OK, window=ari.parse_window(info.body))
    except ari.BadRenewalInfo as exc:
        return Answer(RenewalInfo.Status.FAILED, error=f"{ca.name}'s renewal information is unreadable: {exc} "
                                                        "(the CA's side).")


def fetch(url: str) -> outbound.Fetched:
    return outbound.get(url, PURPOSE, max_bytes=MAX_BYTES, timeout_s=settings.ARI_TIMEOUT_SECONDS,
                        user_agent=USER_AGENT)


def failed(what: str, fetched: outbound.Fetched) -> Answer:
    if fetched.status is None and "public addresses" in fetched.error:
        why = f"{fetched.error.rstrip('.')} (this installation's guard: set TLSAUDIT_ALLOW_PRIVATE_TARGETS for a private CA)"
    elif fetched.error:
        why = f"{fetched.error} (the network or the CA's server)"
    else:
        why = f"HTTP {fetched.status} (the CA's server)"
    return Answer(RenewalInfo.Status.FAILED, error=f"{what} could not be read: {why}.")


def store(audit: Audit, fingerprint: str, ca: ari.CaDirectory, cert_id: str, answer: Answer) -> Refreshed:
    row = RenewalInfo.objects.filter(site_id=audit.site_id, fingerprint=fingerprint).first()
    before = ari.Window(row.window_start, row.window_end) if row and row.window_start and row.window_end else None
    values = {"ca_name": ca.name[:100], "cert_id": cert_id, "status": answer.status, "error": answer.error[:2000],
              "fetched_at": timezone.now()}
    moved = False
    if answer.window is not None:
        moved = before is not None and answer.window.moved_earlier_than(before)
        if moved:
            values.update(earlier_from_start=before.start, earlier_from_end=before.end)
        values.update(window_start=answer.window.start, window_end=answer.window.end,
                      explanation_url=answer.window.explanation_url)
    # update_or_create: two tasks of the same site and certificate meet at the unique key, not an error
    row, _ = RenewalInfo.objects.update_or_create(site_id=audit.site_id, fingerprint=fingerprint, defaults=values)
    if answer.window is not None and audit.site.last_audit_id == audit.pk:
        Site.objects.filter(pk=audit.site_id).update(cert_renew_at=renew_at(audit.site_id, audit.pk))
    return Refreshed(audit, row, before if moved else None)


def renew_at(site_id: int, audit_id: int):
    """When the audit's leaf is overdue for renewal (tlsaudit/domain/renewals.py): the end of its CA's ARI
    window when one was fetched, else the organization's renewal share plus the grace."""
    leaf = AuditCertificate.objects.filter(audit_id=audit_id, deployment=0, position=0).first()
    if leaf is None:
        return None
    ari = RenewalInfo.objects.filter(site_id=site_id, fingerprint=leaf.fingerprint_sha256,
                                     window_end__isnull=False).values_list("window_end", flat=True).first()
    prefs = AlertSettings.objects.filter(organization__sites=site_id).first()
    share = prefs.renewal_share_pct / 100 if prefs else RENEWAL_SHARE
    return renewal_due(leaf.not_before, leaf.not_after, ari, share)


def site_history(site, share: float | None = None) -> renewal_rules.History:
    """Every leaf the site's finished audits served, oldest first, judged (tlsaudit/domain/renewals.py)."""
    rows = (AuditCertificate.objects.filter(audit__site=site, audit__status=Audit.Status.DONE, deployment=0, position=0)
            .values_list("audit__finished_at", "audit__created_at", "fingerprint_sha256", "not_before", "not_after",
                         "issuer"))
    seen = [renewal_rules.Seen(finished or created, fingerprint, not_before, not_after, organization_of(issuer))
            for finished, created, fingerprint, not_before, not_after, issuer in rows]
    if share is None:
        prefs = AlertSettings.objects.filter(organization_id=site.organization_id).first()
        share = prefs.renewal_share_pct / 100 if prefs else RENEWAL_SHARE
    return renewal_rules.history(seen, share)


def current_window(site_id: int, fingerprint: str) -> RenewalInfo | None:
    """The last window the CA gave for this certificate (still the CA's word when tonight's fetch failed)."""
    return RenewalInfo.objects.filter(site_id=site_id, fingerprint=fingerprint, window_end__isnull=False).first()
