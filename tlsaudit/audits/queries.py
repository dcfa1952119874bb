"""How pages read audits without paying for their JSON.

A done audit carries ~40 KB of JSON (facts, report) and sslyze's raw output; a list of a year of
nightly audits must not load, transfer and parse that. Lists take `LIST_FIELDS` (the history, plain
values: monitoring.history.Point); a report or a diff loads the JSON of just the audits it shows,
without the columns no page shows (`UNSHOWN_FIELDS`).
"""

from __future__ import annotations

from tlsaudit.audits.models import Audit

# What lists, charts and headers show of an audit (and what get_absolute_url needs).
LIST_FIELDS = ("id", "site_id", "status", "trigger", "created_at", "finished_at", "grade", "score", "best_profile",
               "error_code", "error_message")
# Never shown on a page: kept for re-grading and support.
UNSHOWN_FIELDS = ("raw", "mozilla_raw", "timings")


def listed(queryset):
    return queryset.only(*LIST_FIELDS)


def with_site(audits, site) -> list[Audit]:
    """Give each audit its (already loaded) site, so links cost no query per row. Straight into the
    relation cache: the descriptor's checks cost more than the rest of a history row."""
    audits = list(audits)
    relation = Audit._meta.get_field("site")
    for audit in audits:
        relation.set_cached_value(audit, site)
    return audits
