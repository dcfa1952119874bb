"""Audit lifecycle: queue, claim, record progress, store the outcome, fail, re-derive, reap.

Called by views, the Celery task and management commands; nothing here imports sslyze.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from tlsaudit.alerts.services import evaluate_on_commit as evaluate_alerts_on_commit
from tlsaudit.audits.models import Audit, AuditCertificate, AuditFinding, AuditSuite
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.ciphers import classify, strength_label
from tlsaudit.domain.scanfacts import ScanFacts

AUDIT_TASK = "workers.tasks.audit.run_audit"
ACTIVE = (Audit.Status.QUEUED, Audit.Status.RUNNING)
# Phases a full scan reports (resolve, connectivity, sslyze, 18 commands, probes, mozilla):
# the denominator of the progress bar.
EXPECTED_STEPS = 28


def queue_audit(site, *, user=None, trigger=Audit.Trigger.MANUAL) -> tuple[Audit, bool]:
    """The site's active audit if there is one, else a new queued audit sent on commit."""
    with transaction.atomic():
        active = Audit.objects.select_for_update().filter(site=site, status__in=ACTIVE).first()
        if active:
            return active, False
        audit = Audit.objects.create(site=site, organization_id=site.organization_id, trigger=trigger,
                                     requested_by=user if user and user.is_authenticated else None,
                                     host=site.hostname, port=site.https_port)
        transaction.on_commit(lambda: send(audit.pk))
    return audit, True


def send(audit_id: int) -> None:
    from workers.celery import app

    app.send_task(AUDIT_TASK, args=[audit_id])


def claim(audit_id: int) -> bool:
    """One atomic UPDATE: whoever flips queued -> running owns the audit."""
    return Audit.objects.filter(pk=audit_id, status=Audit.Status.QUEUED).update(
        status=Audit.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1, progress=[]) == 1


class ProgressRecorder:
    """Appends each finished check to the row. sslyze calls back from its own threads, so
    writes are serialised and a thread's database connection is closed after use."""

    def __init__(self, audit_id: int):
        self.audit_id = audit_id
        self.events: list[dict] = []
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.owner = threading.current_thread()

    def __call__(self, name: str, status: str) -> None:
        with self.lock:
            self.events.append({"name": name, "status": status, "t": round(time.monotonic() - self.started, 2)})
            Audit.objects.filter(pk=self.audit_id, status=Audit.Status.RUNNING).update(progress=list(self.events))
        if threading.current_thread() is not self.owner:
            connection.close()  # a connection sslyze's thread opened would otherwise leak


def progress_percent(audit: Audit) -> int:
    if audit.is_finished:
        return 100
    finished = {e["name"] for e in audit.progress if e.get("status") != "started"}
    done = len(finished)
    return min(95, round(100 * done / EXPECTED_STEPS))


def store_outcome(audit_id: int, outcome) -> Audit:
    """Save a finished scan (engine ScanOutcome) and everything derived from it."""
    audit = Audit.objects.get(pk=audit_id)
    if outcome.error is not None:
        return fail(audit, outcome.error.code, outcome.error.message, outcome.error.detail,
                    duration_s=outcome.duration_s)
    audit.facts = outcome.facts.to_dict()
    audit.raw = outcome.raw
    audit.mozilla_raw = outcome.mozilla
    audit.ip = outcome.facts.ip
    audit.duration_s = round(outcome.duration_s, 2)
    audit.timings = outcome.timings
    audit.status = Audit.Status.DONE
    audit.finished_at = timezone.now()
    with transaction.atomic():
        apply_report(audit, save_fields=["facts", "raw", "mozilla_raw", "ip", "duration_s", "timings", "status",
                                         "finished_at"])
        update_site_summary(audit)
    evaluate_alerts_on_commit(audit)
    return audit


def fail(audit: Audit, code: str, message: str, detail: str = "", duration_s: float | None = None) -> Audit:
    Audit.objects.filter(pk=audit.pk).update(
        status=Audit.Status.FAILED, finished_at=timezone.now(), error_code=code, error_message=message,
        error_detail=detail[:4000], duration_s=duration_s)
    audit.refresh_from_db()
    update_site_summary(audit)
    evaluate_alerts_on_commit(audit)
    return audit


def apply_report(audit: Audit, save_fields: list[str] = ()) -> None:
    """Derive grade, findings and recommendations from the stored inputs and save them."""
    facts = ScanFacts.from_dict(audit.facts)
    report = build_report(facts, audit.mozilla_raw)
    audit.rules_version = report.rules_version
    audit.grade = report.grade.grade
    audit.grade_ignoring_trust = report.grade.grade_ignoring_trust
    audit.score = report.grade.score
    audit.report = report.to_dict()
    audit.protocols = [p for p in facts.protocols if facts.supports(p)]
    audit.best_profile = report.best_profile or ""
    audit.save(update_fields=[*save_fields, "rules_version", "grade", "grade_ignoring_trust", "score", "report",
                              "protocols", "best_profile"])
    replace_normalised_rows(audit, facts, report)


def replace_normalised_rows(audit: Audit, facts: ScanFacts, report) -> None:
    audit.findings.all().delete()
    audit.suites.all().delete()
    audit.certificates.all().delete()
    AuditFinding.objects.bulk_create([
        AuditFinding(audit=audit, finding_id=f.id, severity=f.severity, status=f.status, title=f.title[:200],
                     explanation=f.explanation, evidence=f.evidence, reason=f.reason) for f in report.findings])
    AuditSuite.objects.bulk_create([suite_row(audit, facts, s) for s in facts.suites])
    AuditCertificate.objects.bulk_create([
        AuditCertificate(audit=audit, deployment=d, position=p, subject=c.subject, issuer=c.issuer,
                         not_before=c.not_before, not_after=c.not_after, key_type=c.key_type, key_bits=c.key_bits,
                         signature_hash=c.signature_hash or "", fingerprint_sha256=c.fingerprint_sha256,
                         san_dns=list(c.san_dns))
        for d, dep in enumerate(facts.certificates) for p, c in enumerate(dep.chain)])


def suite_row(audit: Audit, facts: ScanFacts, suite) -> AuditSuite:
    info = classify(suite)
    preference = facts.preferences.get(suite.protocol)
    # A rank only means something when the server imposes its order.
    order = list(preference.order) if preference and preference.enforced else []
    return AuditSuite(audit=audit, protocol=suite.protocol, name=suite.name, openssl_name=suite.openssl_name,
                      key_exchange=info.kx, bits=suite.key_size, kx_bits=suite.kx_bits, kx_curve=suite.kx_curve or "",
                      forward_secret=info.is_forward_secret, aead=info.is_aead, strength=strength_label(info),
                      preference=order.index(suite.name) + 1 if suite.name in order else None)


def update_site_summary(audit: Audit) -> None:
    """Denormalised 'latest' columns on the site, for lists that must not join every audit."""
    from tlsaudit.sites.models import Site

    Site.objects.filter(pk=audit.site_id).update(
        last_audit=audit, last_audit_at=audit.finished_at or timezone.now(),
        last_grade=audit.grade if audit.status == Audit.Status.DONE else "",
        last_audit_status=audit.status)


def reap_abandoned(now=None) -> dict:
    """Audits 'running' past the hard time limit lost their worker: re-queue once, then fail."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.AUDIT_HARD_TIME_LIMIT + 60)
    stale = Audit.objects.filter(status=Audit.Status.RUNNING, started_at__lt=cutoff)
    requeued = failed = 0
    for audit in stale:
        if audit.attempts < 2 and Audit.objects.filter(pk=audit.pk, status=Audit.Status.RUNNING).update(
                status=Audit.Status.QUEUED) == 1:
            send(audit.pk)
            requeued += 1
        else:
            fail(audit, "worker_lost", "The audit was interrupted twice (the worker stopped). Please retry.")
            failed += 1
    return {"requeued": requeued, "failed": failed}
