"""Monitoring fixtures: finished audits built from factory facts (no network), at chosen times."""

from datetime import datetime, timezone

import pytest

from tests.domain.factories import make_facts


@pytest.fixture
def done_audit():
    """done_audit(site, at=datetime, trigger="schedule", **make_facts kwargs) -> a graded, finished Audit."""
    from tlsaudit.audits import services
    from tlsaudit.audits.models import Audit

    def make(site, at=None, trigger="manual", **facts_kwargs):
        at = at or datetime(2026, 3, 2, 3, 0, tzinfo=timezone.utc)
        audit = Audit.objects.create(site=site, organization=site.organization, status="running", trigger=trigger)
        audit.facts = make_facts(**facts_kwargs).to_dict()
        audit.status = "done"
        audit.finished_at = at
        services.apply_report(audit, save_fields=["facts", "status", "finished_at"])
        Audit.objects.filter(pk=audit.pk).update(created_at=at)
        audit.refresh_from_db()
        services.update_site_summary(audit)
        return audit
    return make
