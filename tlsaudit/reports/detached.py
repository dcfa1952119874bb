"""An audit that lives only in memory, for `manage.py audit HOST --pdf FILE` (no database): the
same unsaved Audit, AuditFinding and AuditSuite objects the stored report is made of, so the PDF
goes through audits.presenters.present_report like the dashboard and shows the same numbers."""

from __future__ import annotations

from types import SimpleNamespace

from django.utils import timezone

from tlsaudit.audits.models import Audit, AuditFinding
from tlsaudit.audits.services import suite_row
from tlsaudit.domain.hostnames import display_hostname
from tlsaudit.domain.services import HTTPS, service_named
from tlsaudit.sites.models import service_origin


class Rows(list):
    """Enough of a related manager for present_report: all() and filter(field=value)."""

    def all(self):
        return self

    def filter(self, **fields):
        return Rows(row for row in self if all(getattr(row, k) == v for k, v in fields.items()))

    def count(self):
        return len(self)


class DetachedAudit:
    """An unsaved Audit with in-memory findings and suites (a model's reverse managers cannot be assigned)."""

    def __init__(self, audit: Audit, findings: Rows, suites: Rows):
        self._audit, self.findings, self.suites = audit, findings, suites

    def __getattr__(self, name):
        return getattr(self._audit, name)


def detached_audit(facts, report, duration_s: float) -> DetachedAudit:
    audit = Audit(status=Audit.Status.DONE, host=facts.host, port=facts.port, ip=facts.ip,
                  duration_s=round(duration_s, 2), finished_at=timezone.now(), facts=facts.to_dict(),
                  rules_version=report.rules_version, grade=report.grade.grade,
                  grade_ignoring_trust=report.grade.grade_ignoring_trust, score=report.grade.score,
                  report=report.to_dict(), best_profile=report.best_profile or "")
    findings = Rows(AuditFinding(finding_id=f.id, severity=f.severity, status=f.status, title=f.title[:200],
                                explanation=f.explanation, evidence=f.evidence, reason=f.reason)
                     for f in report.findings)
    return DetachedAudit(audit, findings, Rows(suite_row(None, facts, s) for s in facts.suites))


def detached_site(host: str, port: int, service: str = HTTPS):
    """What the site report template reads of a Site, for a host that is not stored."""
    tls_service = service_named(service)
    return SimpleNamespace(pk=None, hostname=host, https_port=port, name="", service=tls_service.scheme,
                           tls_service=tls_service, is_http=tls_service.http,
                           display_origin=service_origin(tls_service.scheme, display_hostname(host), port))
