"""The organization portfolio: every site's grade, trend and certificate expiry in a constant
number of queries (a window function for each site's last two done audits, one aggregate for
their leaf certificates)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import F, Min, Window
from django.db.models.functions import RowNumber

from tlsaudit.audits.models import Audit, AuditCertificate
from tlsaudit.domain.diff import rank
from tlsaudit.sites.models import Site

CALENDAR_DAYS = 90


@dataclass
class Row:
    site: Site
    trend: str                  # "up" / "down" / "same" / ""
    expires: datetime | None    # earliest leaf not_after of the latest done audit
    days_left: int | None


def portfolio_rows(org, now: datetime, *, tag: str = "", grade: str = "") -> list[Row]:
    sites = Site.objects.filter(organization=org).prefetch_related("tags")
    if tag:
        sites = sites.filter(tags__name=tag)
    if grade:
        sites = sites.filter(last_grade=grade)
    sites = list(sites)
    scores = last_two_scores([s.pk for s in sites])
    expiry = leaf_expiry([pairs[0][0] for pairs in scores.values()])
    rows = []
    for site in sites:
        latest = scores.get(site.pk, [])
        expires = expiry.get(latest[0][0]) if latest else None
        rows.append(Row(site=site, trend=trend(latest), expires=expires,
                        days_left=(expires - now).days if expires else None))
    return sorted(rows, key=worst_first)


def worst_first(row: Row):
    graded = bool(row.site.last_grade)
    return (not graded, -rank(row.site.last_grade) if graded else 0, row.site.hostname)


def last_two_scores(site_ids: list[int]) -> dict[int, list[tuple[int, int | None]]]:
    """site id -> [(audit id, score) of its newest done audit, the one before]."""
    ranked = (Audit.objects.filter(site_id__in=site_ids, status=Audit.Status.DONE)
              .annotate(n=Window(RowNumber(), partition_by=F("site_id"), order_by=F("finished_at").desc()))
              .filter(n__lte=2).order_by("site_id", "n").values_list("site_id", "pk", "score"))
    result = defaultdict(list)
    for site_id, audit_id, score in ranked:
        result[site_id].append((audit_id, score))
    return result


def trend(latest: list[tuple[int, int | None]]) -> str:
    if len(latest) < 2 or latest[0][1] is None or latest[1][1] is None:
        return ""
    new, old = latest[0][1], latest[1][1]
    return "up" if new > old else "down" if new < old else "same"


def leaf_expiry(audit_ids: list[int]) -> dict[int, datetime]:
    return dict(AuditCertificate.objects.filter(audit_id__in=audit_ids, position=0)
                .values("audit_id").annotate(first=Min("not_after")).values_list("audit_id", "first"))


def expiry_calendar(rows: list[Row], now: datetime) -> list[tuple[date, list[Row]]]:
    """Certificates expiring within CALENDAR_DAYS, grouped by the Monday of their week."""
    horizon = now + timedelta(days=CALENDAR_DAYS)
    weeks = defaultdict(list)
    for row in sorted((r for r in rows if r.expires and now <= r.expires <= horizon), key=lambda r: r.expires):
        day = row.expires.date()
        weeks[day - timedelta(days=day.weekday())].append(row)
    return sorted(weeks.items())
