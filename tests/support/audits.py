"""Finished audits without the network, for tests of what is shown of them."""

from datetime import datetime, timezone

from tests.domain.factories import make_facts
from tlsaudit.audits import services as audit_services
from tlsaudit.audits.models import Audit


def done_audit(site, **facts_kwargs) -> Audit:
    """A finished audit of `site` from factory facts (no network), the site's summary updated."""
    audit = Audit.objects.create(site=site, organization=site.organization, status="running")
    audit.facts = make_facts(**facts_kwargs).to_dict()
    audit.status = "done"
    audit_services.apply_report(audit, save_fields=["facts", "status"])
    audit_services.update_site_summary(audit)
    return audit


def finished_audit(site, at=None, trigger="manual", **facts_kwargs) -> Audit:
    """A graded, finished audit of `site` at `at` (default 2026-03-02 03:00 UTC) from factory facts, its
    creation time set to `at` too, the site's summary updated."""
    at = at or datetime(2026, 3, 2, 3, 0, tzinfo=timezone.utc)
    audit = Audit.objects.create(site=site, organization=site.organization, status="running", trigger=trigger)
    audit.facts = make_facts(**facts_kwargs).to_dict()
    audit.status = "done"
    audit.finished_at = at
    audit_services.apply_report(audit, save_fields=["facts", "status", "finished_at"])
    Audit.objects.filter(pk=audit.pk).update(created_at=at)
    audit.refresh_from_db()
    audit_services.update_site_summary(audit)
    return audit
