"""The history page's data: the score series of done audits, and diffs between two of them."""

from __future__ import annotations

from tlsaudit.audits.models import Audit
from tlsaudit.domain.diff import AuditDiff, Snapshot, diff_audits


def done_audits(site):
    return Audit.objects.filter(site=site, status=Audit.Status.DONE).order_by("finished_at", "pk")


def chart_series(audits) -> dict:
    """Chart.js points: x = finish time, y = score, with the grade letter and a marker per trigger."""
    return {"points": [{"x": a.finished_at.isoformat(), "y": a.score, "grade": a.grade, "id": a.pk,
                        "trigger": a.trigger} for a in audits]}


def diff_between(old: Audit, new: Audit) -> AuditDiff:
    return diff_audits(Snapshot(old.facts or {}, old.report or {}), Snapshot(new.facts or {}, new.report or {}))


def pick_pair(audits: list[Audit], a: str | None, b: str | None) -> tuple[Audit, Audit] | None:
    """The two audits to compare: ?a=&b= when both are this site's done audits, else the last two."""
    by_id = {str(x.pk): x for x in audits}
    if a in by_id and b in by_id and a != b:
        old, new = sorted((by_id[a], by_id[b]), key=lambda x: (x.finished_at, x.pk))
        return old, new
    return (audits[-2], audits[-1]) if len(audits) >= 2 else None


def latest_nightly_diff(audits: list[Audit]) -> tuple[Audit, Audit, AuditDiff] | None:
    """The newest scheduled audit against the audit before it, when something changed."""
    for i in range(len(audits) - 1, 0, -1):
        if audits[i].trigger == Audit.Trigger.SCHEDULE:
            diff = diff_between(audits[i - 1], audits[i])
            return (audits[i - 1], audits[i], diff) if diff.changed else None
    return None
