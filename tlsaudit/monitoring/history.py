"""The history page's data: the score series of done audits, and diffs between two of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe

from tlsaudit.audits.models import Audit
from tlsaudit.audits.queries import UNSHOWN_FIELDS, with_site
from tlsaudit.domain.diff import AuditDiff, Snapshot, diff_audits


@dataclass(frozen=True)
class Point:
    """A done audit as the chart, the compare form and the table show it: a year of them is 365
    rows, read as plain values (no JSON, no model instances); `load_audits` fetches the few to diff."""
    pk: int
    trigger: str
    finished_at: datetime
    grade: str
    score: int | None

    @property
    def stamp(self) -> str:
        """The finish time as the template's date:"Y-m-d H:i" would show it."""
        return timezone.localtime(self.finished_at).strftime("%Y-%m-%d %H:%M")


def done_audits(site) -> list[Point]:
    """The site's done audits, oldest first."""
    rows = (Audit.objects.filter(site=site, status=Audit.Status.DONE).order_by("finished_at", "pk")
            .values_list("pk", "trigger", "finished_at", "grade", "score"))
    return [Point(*row) for row in rows]


def load_audits(points, site) -> dict[int, Audit]:
    """The audits behind `points` (Nones skipped) with their facts and report, in one query."""
    wanted = {p.pk for p in points if p is not None}
    if not wanted:
        return {}
    audits = Audit.objects.filter(pk__in=wanted).defer(*UNSHOWN_FIELDS)
    return {a.pk: a for a in with_site(audits, site)}


# The grade axis, worst first: users think in grades (a T -> A+ fix was a flat line at score 93).
GRADE_SCALE = ("M", "T", "F", "E", "D", "C", "B", "A-", "A", "A+")


def chart_series(audits) -> dict:
    """Chart.js points: x = finish time, y = the grade's step on GRADE_SCALE, with the letter, the score
    (in the tooltip) and a marker per trigger."""
    return {"grades": list(GRADE_SCALE),
            "points": [{"x": a.finished_at.isoformat(), "y": grade_step(a.grade), "grade": a.grade,
                        "score": a.score, "id": a.pk, "trigger": a.trigger} for a in audits]}


def grade_step(grade: str) -> int | None:
    return GRADE_SCALE.index(grade) if grade in GRADE_SCALE else None


def audit_options(points: list[Point], pair) -> tuple[str, str]:
    """The compare form's two lists of <option>s, the pair selected. Built here rather than in the
    template: a year of nightly audits is 730 options and 365 table rows, where the template engine
    took most of the page's time."""
    stamps = [p.stamp for p in points]
    options = [f'<option value="{p.pk}">{stamp} · {escape(p.grade)}</option>' for p, stamp in zip(points, stamps)]
    position = {p.pk: i for i, p in enumerate(points)}
    lists = []
    for chosen in pair or (None, None):
        marked = options.copy()
        if chosen is not None and chosen.pk in position:
            i = position[chosen.pk]
            marked[i] = marked[i].replace("<option ", "<option selected ", 1)
        # Safe: grades are escaped; pks and stamps are numbers and dates we formatted.
        lists.append(mark_safe("".join(marked)))  # nosec: reviewed, see the comment above
    return lists[0], lists[1]


def audit_rows(points: list[Point], site) -> str:
    """The table of audits, newest first (one reverse() for all the links)."""
    link = escape(reverse("audits:detail", args=[site.organization.slug, site.pk, 0]).removesuffix("0/"))
    triggers = dict(Audit.Trigger.choices)
    # Safe: the link, grades and trigger labels are escaped; pks, scores and stamps are ours.
    return mark_safe("".join(  # nosec: reviewed, see the comment above
        f'<tr><td><a href="{link}{p.pk}/">{p.stamp}</a></td><td>{escape(p.grade)}</td>'
        f'<td>{"" if p.score is None else p.score}</td><td>{escape(triggers.get(p.trigger, p.trigger))}</td></tr>'
        for p in reversed(points)))


def diff_between(old: Audit, new: Audit) -> AuditDiff:
    return diff_audits(Snapshot(old.facts or {}, old.report or {}), Snapshot(new.facts or {}, new.report or {}))


def pick_pair(audits: list[Point], a: str | None, b: str | None) -> tuple[Point, Point] | None:
    """The two audits to compare: ?a=&b= when both are this site's done audits, else the last two."""
    by_id = {str(x.pk): x for x in audits}
    if a in by_id and b in by_id and a != b:
        old, new = sorted((by_id[a], by_id[b]), key=lambda x: (x.finished_at, x.pk))
        return old, new
    return (audits[-2], audits[-1]) if len(audits) >= 2 else None


def nightly_pair(audits: list[Point]) -> tuple[Point, Point] | None:
    """The newest scheduled audit and the audit before it."""
    for i in range(len(audits) - 1, 0, -1):
        if audits[i].trigger == Audit.Trigger.SCHEDULE:
            return audits[i - 1], audits[i]
    return None


def nightly_diff(pair: tuple[Audit, Audit] | None) -> tuple[Audit, Audit, AuditDiff] | None:
    """The newest scheduled audit against the audit before it, when something changed."""
    if pair is None:
        return None
    diff = diff_between(*pair)
    return (*pair, diff) if diff.changed else None
