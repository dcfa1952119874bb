"""Rows the API tests read, made the way the app makes them: audits graded from factory facts by
the real grader (no network), and a helper to show that a list's query count does not grow."""

from __future__ import annotations

from datetime import datetime, timezone

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.domain.factories import make_facts
from tlsaudit.audits import services
from tlsaudit.audits.models import Audit


def done_audit(site, at: datetime | None = None, trigger: str = "manual", raw: dict | None = None,
               **facts_kwargs) -> Audit:
    """A graded, finished audit of `site` (make_facts kwargs describe the server), created at `at`."""
    at = at or datetime(2026, 3, 2, 3, 0, tzinfo=timezone.utc)
    audit = Audit.objects.create(site=site, organization=site.organization, status="running", trigger=trigger,
                                 host=site.hostname, port=site.https_port)
    audit.facts = make_facts(**facts_kwargs).to_dict()
    audit.raw = raw
    audit.status, audit.finished_at = "done", at
    services.apply_report(audit, save_fields=["facts", "raw", "status", "finished_at"])
    Audit.objects.filter(pk=audit.pk).update(created_at=at)
    audit.refresh_from_db()
    services.update_site_summary(audit)
    return audit


def queries_of(client, url: str, **params) -> int:
    """How many SQL queries one GET costs (and that it answered 200)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200, response.content
    return len(captured.captured_queries)
