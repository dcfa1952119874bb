"""What a PDF report shows, as plain dicts: the audit report page's numbers (audits.presenters),
the grade history, the latest performance and browser charts, and the organization's branding.

Charts are specs {id, title, type, labels, datasets, stacked, x_title, y_title, table}; the print
template draws them with Chart.js (inlined) and prints each table under its chart.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.utils import timezone
from django.utils.safestring import mark_safe

from tlsaudit.audits.presenters import present_report
from tlsaudit.audits.visitor import with_visitor_effects
from tlsaudit.domain import images
from tlsaudit.domain.applicability import tools_not_applicable
from tlsaudit.domain.renewals import Forecast, forecast_bounds
from tlsaudit.domain.text import days_until, expiry_words
from tlsaudit.loadtests import presenters as perf_presenters
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.probes import presenters as probe_presenters
from tlsaudit.probes.models import Probe
from tlsaudit.reports.models import ReportBranding

GRADE_ORDER = {"A+": 0, "A": 1, "A-": 2, "B": 3, "C": 4, "D": 5, "E": 6, "F": 7, "T": 8, "M": 9}
PRINTABLE_CHARTS = ("bar", "line")
MAX_TABLE_ROWS = 20
HISTORY_POINTS = 60


def site_report(site, audit, *, org=None) -> dict:
    """The context of templates/reports/site_report.html for `site` and its finished `audit` (or None)."""
    org = org or site.organization
    context = {"org": org, "site": site, "audit": audit, "branding": branding_of(org), "generated_at": timezone.now(),
               "charts": []}
    if audit is not None:
        context.update(present_report(audit))
        if site.pk:
            context["recommendations"] = with_visitor_effects(context["recommendations"], site)
    context["tools_not_applicable"] = tools_not_applicable(site.tls_service)
    if site.pk:
        history = history_chart(site)
        perf, probe = latest_perf_run(site), latest_probe(site)
        context.update(history=history, perf=perf, probe=probe,
                       perf_charts=printable(perf_charts(perf)), probe_charts=printable(probe_charts(probe)))
        context["charts"] = [c for c in [history, *context["perf_charts"], *context["probe_charts"]] if c]
    if audit is not None:
        context["charts"].insert(0, scores_spec(context["scores_chart"]))
    return context


def portfolio_report(org) -> dict:
    """Every site of `org` with its grade, score and certificate expiry, worst first."""
    now = timezone.now()
    rows = [portfolio_row(site, now) for site in org.sites.all()]
    rows.sort(key=lambda r: (GRADE_ORDER.get(r["grade"], 10) * -1, r["score"] if r["score"] is not None else -1,
                             r["site"].hostname))
    grades = {}
    for row in rows:
        grades[row["grade"] or "none"] = grades.get(row["grade"] or "none", 0) + 1
    chart = {"id": "grades", "title": "Sites per grade", "type": "bar", "x_title": "grade", "y_title": "sites",
             "labels": list(grades), "datasets": [{"label": "sites", "data": list(grades.values())}], "stacked": False}
    return {"org": org, "branding": branding_of(org), "generated_at": timezone.now(), "rows": rows,
            "charts": [chart] if rows else [], "forecast": forecast_of_rows(rows, now)}


def forecast_of_rows(rows: list[dict], now) -> Forecast:
    """The renewal forecast from the rows' sites (their cert_renew_at column): no query of its own."""
    week, month = forecast_bounds(now)
    due = [r["site"].cert_renew_at for r in rows if r["status"] == "done" and r["site"].cert_renew_at]
    return Forecast(overdue=sum(d < now for d in due), next_week=sum(now <= d < week for d in due),
                    next_month=sum(now <= d < month for d in due))


def portfolio_row(site, now) -> dict:
    """From the site's summary columns (no query): grade, score and leaf expiry of its last audit when
    done. Dates come formatted: a date filter per row was a third of a 150-site portfolio's HTML time."""
    done = site.last_audit_status == "done"
    expiry = site.cert_expires_at if done else None
    return {"site": site, "grade": site.last_grade if done else "", "score": site.latest_score if done else None,
            "expires": expiry, "days_left": days_until(expiry, now),
            "expiry_words": expiry_words(days_until(expiry, now)),
            "expires_day": formatted(expiry, "%Y-%m-%d"), "audited": formatted(site.last_audit_at, "%Y-%m-%d %H:%M"),
            "renew_day": formatted(site.cert_renew_at if done else None, "%Y-%m-%d"),
            "renewal_overdue": bool(done and site.cert_renew_at and site.cert_renew_at < now),
            "audited_at": site.last_audit_at, "status": site.last_audit_status}


def formatted(moment, pattern: str) -> str:
    return timezone.localtime(moment).strftime(pattern) if moment else "–"


def history_chart(site) -> dict | None:
    audits = list(site.audits.filter(status="done", score__isnull=False)
                  .order_by("-finished_at", "-created_at").values("finished_at", "created_at", "score", "grade")
                  [:HISTORY_POINTS])[::-1]
    if not audits:
        return None
    labels = [f"{(a['finished_at'] or a['created_at']):%Y-%m-%d %H:%M}" for a in audits]
    return {"id": "history", "title": "Grade history (score per audit)", "type": "line", "x_title": "audit",
            "y_title": "score", "labels": labels, "stacked": False, "min": 0, "max": 100,
            "datasets": [{"label": "score", "data": [a["score"] for a in audits],
                          "point_labels": [a["grade"] for a in audits]}],
            "table": {"header": ["audit", "grade", "score"],
                      "rows": [[label, a["grade"], a["score"]] for label, a in zip(labels, audits)][-MAX_TABLE_ROWS:]}}


def scores_spec(scores: dict) -> dict:
    return {"id": "scores", "title": "Score breakdown", "type": "bar", "horizontal": True, "x_title": "", "y_title": "",
            "labels": scores["labels"], "min": 0, "max": 100, "stacked": False,
            "datasets": [{"label": "score", "data": scores["values"]}]}


def latest_perf_run(site):
    return PerfRun.objects.filter(site=site, status=PerfRun.Status.DONE).order_by("-created_at").first()


def latest_probe(site):
    return Probe.objects.filter(site=site, status=Probe.Status.DONE).order_by("-created_at").first()


def perf_charts(run) -> list[dict]:
    return perf_presenters.charts_for(run) if run else []


def probe_charts(probe) -> list[dict]:
    return probe_presenters.charts_for(probe) if probe and probe.result else []


def printable(charts: list[dict]) -> list[dict]:
    """Bar and line charts (the waterfall is an interactive view), tables cut to fit a page."""
    out = []
    for chart in charts:
        if chart.get("type") not in PRINTABLE_CHARTS:
            continue
        table = chart.get("table") or {"header": [], "rows": []}
        out.append({**chart, "id": f"{chart['id']}-{len(out)}",
                    "table": {"header": table["header"], "rows": table["rows"][:MAX_TABLE_ROWS]}})
    return out


def chart_specs(charts: list[dict]) -> list[dict]:
    """What the page's script needs (no tables)."""
    return [{k: v for k, v in c.items() if k != "table"} for c in charts]


def branding_of(org) -> dict:
    branding = ReportBranding.objects.filter(organization_id=org.pk).first() if org.pk else None
    return {"logo": printable_logo(branding.logo_data_uri) if branding else "",
            "accent": branding.accent_color if branding else "#1f4e9c"}


def printable_logo(data_uri: str) -> str:
    """The logo, unless it is one the form would refuse now (saved before the pixel limit): a
    decompression bomb is left out of the PDF rather than handed to Chromium."""
    if not data_uri.startswith(("data:image/png;", "data:image/jpeg;")):
        return data_uri   # empty, or an SVG an administrator stored (the form takes PNG and JPEG only)
    try:
        data = base64.b64decode(data_uri.partition(",")[2], validate=True)
    except ValueError:
        return ""
    return "" if images.too_large(data) else data_uri


# --- inlined assets: the PDF page loads nothing from the network ------------------------------

@cache
def inlined_assets() -> dict:
    """Chart.js and the print CSS/JS as text for <script>/<style>. Inline scripts are fine here:
    this page is rendered offline by our own Chromium, never served under the app's CSP; it carries
    its own, stricter one (`csp`: only these two scripts, no network)."""
    templates = Path(settings.BASE_DIR) / "templates" / "reports"
    chartjs, js = read_static("vendor/chart.umd.min.js"), (templates / "report.js").read_text()
    # bandit B308/B703 (nosec): these are our own files from the repository, never user input.
    return {"chartjs": mark_safe(chartjs),  # nosec B308 B703
            "css": mark_safe((templates / "print.css").read_text()),  # nosec B308 B703
            "js": mark_safe(js),  # nosec B308 B703
            "csp": print_page_policy(chartjs, js)}


def print_page_policy(*scripts: str) -> str:
    """The print page's own CSP (a <meta>): exactly these inline scripts run, by hash, and nothing is
    fetched, so text that slipped into a report can neither run code nor make the worker's Chromium
    call an internal address. Styles stay inline (the accent colour, print layout): no network, no harm."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:; "
            "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'")


def read_static(path: str) -> str:
    found = finders.find(path)
    if not found:
        raise FileNotFoundError(f"static file {path} is missing")
    text = Path(found).read_text()
    assert "</script" not in text.lower(), f"{path} would close its inline <script> early"
    return text
