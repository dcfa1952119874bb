from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from tlsaudit.monitoring import history
from tlsaudit.sites.views import site_for


@login_required
def site_history(request, org, pk):
    org, site = site_for(request, org, pk)
    audits = list(history.done_audits(site))
    pair = history.pick_pair(audits, request.GET.get("a"), request.GET.get("b"))
    context = {"org": org, "site": site, "audits": audits, "chart": history.chart_series(audits),
               "pair": pair, "diff": history.diff_between(*pair) if pair else None,
               "nightly": history.latest_nightly_diff(audits), "schedule": getattr(site, "schedule", None)}
    return render(request, "monitoring/history.html", context)


@login_required
def portfolio(request, org):
    from django.utils import timezone

    from tlsaudit.monitoring.portfolio import expiry_calendar, portfolio_rows
    from tlsaudit.orgs.access import org_for

    org = org_for(request, org)
    tag, grade = request.GET.get("tag", ""), request.GET.get("grade", "")
    now = timezone.now()
    rows = portfolio_rows(org, now, tag=tag, grade=grade)
    context = {"org": org, "rows": rows, "calendar": expiry_calendar(rows, now), "tag": tag, "grade": grade,
               "tags": org.tags.values_list("name", flat=True), "grades": GRADES}
    return render(request, "monitoring/portfolio.html", context)


GRADES = ("A+", "A", "A-", "B", "C", "D", "E", "F", "T", "M")
