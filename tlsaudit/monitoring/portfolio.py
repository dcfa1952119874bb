"""The organization portfolio: every site's grade, trend and certificate expiry in a constant
number of queries. The trend and the expiry come from the site's denormalised columns
(latest_score, previous_score, cert_expires_at, kept by audits.services.update_site_summary),
so the page never reads the audit history.

An agency's portfolio runs to 10,000 sites: the table is one page of PAGE_SIZE rows ordered
worst first by PostgreSQL, the counts (sites, PQ-ready) are one aggregate, and the expiry lists
show the soonest certificates with the rest counted, so the page costs the same at 30 sites and
at 10,000."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone
from html import escape

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import TruncWeek
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe

from tlsaudit.domain.diff import GRADE_ORDER, grades_at_or_below, rank
from tlsaudit.domain.renewals import Forecast, forecast_bounds
from tlsaudit.domain.text import days_until, expiry_words
from tlsaudit.sites.models import Site, tagged

CALENDAR_DAYS = 90
PAGE_SIZE = 100
# The expiry card lists this many certificates by name and counts the rest per week: with 90-day
# certificates nearly every site of a large portfolio expires within the calendar's 90 days.
EXPIRED_LISTED = 50
CALENDAR_LISTED = 100


@dataclass
class Row:
    site: Site
    trend: str                  # "up" / "down" / "same" / ""
    expires: datetime | None    # earliest leaf not_after of the latest done audit
    days_left: int | None
    url: str = ""               # the site's history page
    tags: list[str] = field(default_factory=list)
    audited: str = "never"      # the last audit's finish, as the page shows it
    expires_day: str = ""       # "Mon 2026-12-07", for the expiry calendar


@dataclass
class Week:
    monday: date
    rows: list[Row]
    count: int                  # certificates expiring that week, listed or not

    @property
    def more(self) -> int:
        return self.count - len(self.rows)


@dataclass
class Portfolio:
    page: Page                  # the table's page of Rows, worst first
    total: int
    pq_ready: int
    pq_untested: int
    expired: list[Row]          # the longest expired first, at most EXPIRED_LISTED
    expired_count: int
    calendar: list[Week]
    forecast: Forecast | None = None

    @property
    def rows(self) -> list[Row]:
        return self.page.object_list

    @property
    def expired_more(self) -> int:
        return self.expired_count - len(self.expired)


def portfolio(org, now: datetime, *, tag: str = "", grade: str = "", grade_max: str = "",
              page: str | int | None = None) -> Portfolio:
    """The table's page and the cards' summaries over every site that matches the filters."""
    sites = matching_sites(org, tag=tag, grade=grade, grade_max=grade_max)
    counts = sites.aggregate(n_total=Count("pk"), n_ready=Count("pk", filter=Q(pq_ready=True)),
                             n_untested=Count("pk", filter=Q(pq_ready__isnull=True)),
                             n_expired=Count("pk", filter=Q(cert_expires_at__lt=now)), **forecast_counts(now))
    paginator = Paginator(worst_first_in_sql(sites), PAGE_SIZE)
    paginator.count = counts["n_total"]  # already counted by the aggregate: no second COUNT(*)
    table = paginator.get_page(page)
    table.object_list = build_rows(list(table.object_list), org, now, with_tags=True)
    expired, coming = soonest_expiries(sites, org, now)
    return Portfolio(page=table, total=counts["n_total"], pq_ready=counts["n_ready"],
                     pq_untested=counts["n_untested"], expired=expired, expired_count=counts["n_expired"],
                     calendar=expiry_weeks(coming, sites, now), forecast=forecast_of(counts))


def forecast_counts(now: datetime) -> dict:
    """Aggregates of renewals overdue and due soon, from the sites' cert_renew_at column (for one aggregate)."""
    week, month = forecast_bounds(now)
    due = Q(last_audit_status="done")
    return {"renew_overdue": Count("pk", filter=due & Q(cert_renew_at__lt=now)),
            "renew_week": Count("pk", filter=due & Q(cert_renew_at__gte=now, cert_renew_at__lt=week)),
            "renew_month": Count("pk", filter=due & Q(cert_renew_at__gte=now, cert_renew_at__lt=month))}


def forecast_of(counts: dict) -> Forecast:
    return Forecast(overdue=counts["renew_overdue"], next_week=counts["renew_week"], next_month=counts["renew_month"])


def renewal_forecast(sites: QuerySet, now: datetime) -> Forecast:
    """The forecast of `sites` on its own: one aggregate query."""
    return forecast_of(sites.aggregate(**forecast_counts(now)))


def matching_sites(org, *, tag: str = "", grade: str = "", grade_max: str = "") -> QuerySet:
    """`grade` matches exactly; `grade_max` keeps that grade or worse, as the API's parameters do."""
    sites = Site.objects.filter(organization=org)
    if tag:
        sites = tagged(sites, org.pk, tag)
    if grade:
        sites = sites.filter(last_grade=grade)
    if grade_max in GRADE_ORDER:
        sites = sites.filter(last_grade__in=grades_at_or_below(grade_max))
    return sites


def worst_first_in_sql(sites: QuerySet) -> QuerySet:
    """Down sites first, then grades from worst to best, then sites never audited (nothing to fix
    yet); by hostname within a grade. Computed by PostgreSQL, so that only one page of sites is read."""
    tier = Case(When(Q(last_grade="") & Q(last_audit_status="failed"), then=Value(0)),
                When(~Q(last_grade=""), then=Value(1)), default=Value(2), output_field=IntegerField())
    by_rank = Case(*(When(last_grade=g, then=Value(-rank(g))) for g in GRADE_ORDER),
                   default=Value(-len(GRADE_ORDER)), output_field=IntegerField())
    return sites.annotate(_tier=tier, _rank=by_rank).order_by("_tier", "_rank", "hostname", "pk")


def build_rows(sites: list[Site], org, now: datetime, *, with_tags: bool = False) -> list[Row]:
    """Links, tag names and dates are prepared here: rendered per row in the template, they took
    most of the page's time."""
    tags = tag_names([s.pk for s in sites]) if with_tags else {}
    link = reverse("monitoring:history", args=[org.slug, 0]).replace("/0/", "/{}/")
    rows = []
    for site in sites:
        site.organization = org
        expires = site.cert_expires_at
        rows.append(Row(site=site, trend=trend(site.latest_score, site.previous_score), expires=expires,
                        days_left=days_until(expires, now), url=link.format(site.pk),
                        tags=tags.get(site.pk, []), audited=stamp(site.last_audit_at),
                        expires_day=timezone.localtime(expires).strftime("%a %Y-%m-%d") if expires else ""))
    return rows


def tag_names(site_ids: list[int]) -> dict[int, list[str]]:
    """site id -> its tag names, sorted, in one query."""
    names = defaultdict(list)
    pairs = Site.tags.through.objects.filter(site_id__in=site_ids).values_list("site_id", "tag__name")
    for site_id, name in sorted(pairs, key=lambda pair: pair[1]):
        names[site_id].append(name)
    return names


def stamp(moment: datetime | None) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M") if moment else "never"


def rows_html(rows: list[Row]) -> str:
    """The table's rows. Built here: through the template engine a 150-site portfolio spent three
    quarters of its time on this loop (a node per cell and tag), 1,000 sites would take seconds."""
    # Safe: row_html escapes every user-supplied value (labels, tags, grades, URLs).
    return mark_safe("".join(row_html(r) for r in rows))  # nosec: reviewed, see the comment above


def row_html(r: Row) -> str:
    tags = "".join(f' <span class="tag">{escape(t)}</span>' for t in r.tags)
    return (f'<tr data-testid="portfolio-row" data-site="{r.site.pk}">'
            f'<td><a href="{escape(r.url)}">{escape(r.site.label)}</a>{tags}</td>'
            f'<td>{grade_badge(r.site)}</td><td data-trend="{r.trend}">{ARROWS.get(r.trend, "")}</td>'
            f'<td{expiry_class(r)}>{escape(expiry_words(r.days_left))}</td>'
            f'<td data-pq="{PQ_DATA[r.site.pq_ready]}">{PQ_CELLS[r.site.pq_ready]}</td><td>{r.audited}</td></tr>\n')


def grade_badge(site: Site) -> str:
    """The grade in its colour, as on the site list; a site whose last audit failed says so."""
    if site.last_grade:
        grade = escape(site.last_grade)
        return f'<span class="grade small grade-{grade}">{grade}</span>'
    if is_down(site):
        return '<span class="grade small grade-none" title="the last audit failed">!</span> down'
    return '<span class="muted">not audited</span>'


def expiry_class(r: Row) -> str:
    return ' class="expired"' if r.days_left is not None and r.days_left < 0 else ""


ARROWS = {"up": "↑", "down": "↓", "same": "→"}
PQ_CELLS = {True: "yes", False: "no", None: "–"}
PQ_DATA = {True: "ready", False: "no", None: "untested"}


def pq_summary(ready: int, untested: int, total: int) -> str:
    """'PQ-ready: 12 of 40 sites' (and how many were never probed, which are not counted as 'no')."""
    text = f"PQ-ready: {ready} of {total} site{'s' if total != 1 else ''}"
    return text + (f" ({untested} not tested)" if untested else "")


def is_down(site: Site) -> bool:
    """The last audit failed (no TLS answer, refused, timed out): no grade, and worse than an F."""
    return not site.last_grade and site.last_audit_status == "failed"


def trend(new: int | None, old: int | None) -> str:
    """The latest done audit's score against the one before it."""
    if new is None or old is None:
        return ""
    return "up" if new > old else "down" if new < old else "same"


def soonest_expiries(sites: QuerySet, org, now: datetime) -> tuple[list[Row], list[Row]]:
    """The longest expired (at most EXPIRED_LISTED) and the soonest to expire within CALENDAR_DAYS
    (at most CALENDAR_LISTED + 1, to tell whether there are more). Two queries, not a UNION of the
    two: SQLite (`make run`'s database) refuses LIMIT inside a compound statement."""
    horizon = now + timedelta(days=CALENDAR_DAYS)
    expired = sites.filter(cert_expires_at__lt=now).order_by("cert_expires_at", "pk")[:EXPIRED_LISTED]
    coming = (sites.filter(cert_expires_at__gte=now, cert_expires_at__lte=horizon)
              .order_by("cert_expires_at", "pk")[:CALENDAR_LISTED + 1])
    return build_rows(list(expired), org, now), build_rows(list(coming), org, now)


def expiry_weeks(coming: list[Row], sites: QuerySet, now: datetime) -> list[Week]:
    """Certificates expiring within CALENDAR_DAYS, grouped by the Monday of their week, the soonest
    CALENDAR_LISTED by name and every week's full count (the expired ones are listed apart)."""
    listed, counts = coming[:CALENDAR_LISTED], None
    if len(coming) > CALENDAR_LISTED:  # more than the card names: count every week in SQL
        horizon = now + timedelta(days=CALENDAR_DAYS)
        per_week = (sites.filter(cert_expires_at__gte=now, cert_expires_at__lte=horizon)
                    .annotate(week=TruncWeek("cert_expires_at", tzinfo=dt_timezone.utc)).values("week"))
        counts = {row["week"].date(): row["n"] for row in per_week.annotate(n=Count("pk")).order_by()}
    weeks = defaultdict(list)
    for row in listed:
        weeks[monday_of(row.expires)].append(row)
    if counts is None:
        counts = {monday: len(rows) for monday, rows in weeks.items()}
    return [Week(monday, weeks.get(monday, []), n) for monday, n in sorted(counts.items())]


def monday_of(moment: datetime) -> date:
    day = moment.astimezone(dt_timezone.utc).date()
    return day - timedelta(days=day.weekday())
