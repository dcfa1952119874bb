from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from tlsaudit.alerts.models import AlertSettings
from tlsaudit.audits.renewals import site_history as renewal_history
from tlsaudit.core.queue import QueueUnavailable, enqueue
from tlsaudit.domain import roles
from tlsaudit.domain.alerts import RENEWAL_SHARE_PCT
from tlsaudit.domain.text import expiry_words
from tlsaudit.monitoring import history, schedules
from tlsaudit.monitoring import portfolio as folios
from tlsaudit.monitoring.forms import ScheduleForm, WindowForm
from tlsaudit.orgs.access import org_for, site_for


@login_required
def site_history(request, org, pk):
    org, site = site_for(request, org, pk)
    return render(request, "monitoring/history.html", _history_context(request, org, site))


def _history_context(request, org, site, schedule_form=None):
    points = history.done_audits(site)
    chosen = history.pick_pair(points, request.GET.get("a"), request.GET.get("b"))
    last_night = history.nightly_pair(points)
    audits = history.load_audits([*(chosen or ()), *(last_night or ())], site)
    pair = tuple(audits[p.pk] for p in chosen) if chosen else None
    schedule = getattr(site, "schedule", None)
    if schedule_form is None and schedule is not None:
        schedule_form = ScheduleForm(initial={"frequency": schedule.frequency, "weekday": schedule.weekday})
    options_a, options_b = history.audit_options(points, chosen)
    return {"org": org, "site": site, "audits": points, "chart": history.chart_series(points),
            "options_a": options_a, "options_b": options_b, "audit_rows": history.audit_rows(points, site),
            "pair": pair, "diff": history.diff_between(*pair) if pair else None,
            "nightly": history.nightly_diff(tuple(audits[p.pk] for p in last_night) if last_night else None),
            "schedule": schedule,
            "schedule_form": schedule_form, "can_schedule": roles.can(org.role, "manage_sites"),
            "renewals": renewal_history(site)}


@login_required
@require_POST
def site_schedule(request, org, pk):
    """Owners, admins and members change a site's schedule; viewers 403, other orgs 404."""
    org, site = site_for(request, org, pk, "manage_sites")
    schedule = schedules.ensure_schedule(site)
    site.schedule = schedule
    form = ScheduleForm(request.POST)
    if not form.is_valid():
        return render(request, "monitoring/history.html", _history_context(request, org, site, form), status=400)
    weekday = form.cleaned_data["weekday"]
    schedules.update_schedule(schedule, frequency=form.cleaned_data["frequency"],
                              weekday=schedule.weekday if weekday is None else weekday)
    messages.success(request, f"Schedule saved: {schedule.get_frequency_display().lower()}.")
    return redirect("monitoring:history", org.slug, site.pk)


@login_required
def portfolio(request, org):
    org = org_for(request, org)
    return render(request, "monitoring/portfolio.html", _portfolio_context(request, org))


def _portfolio_context(request, org, window_form=None):
    tag, grade = request.GET.get("tag", ""), request.GET.get("grade", "")
    # A hand-edited grade_max the page does not offer filters nothing (the select shows "All").
    grade_max = request.GET.get("grade_max", "") if request.GET.get("grade_max") in GRADES else ""
    folio = folios.portfolio(org, timezone.now(), tag=tag, grade=grade, grade_max=grade_max, page=request.GET.get("page"))
    policy = schedules.policy_with_load(org)
    if window_form is None:
        window_form = WindowForm(initial={"start": policy.window_start_hour, "end": policy.window_end_hour})
    return {"org": org, "folio": folio, "page": folio.page, "rows": folio.rows, "row_html": folios.rows_html(folio.rows),
            "calendar": folio.calendar, "expired": [(r, expiry_words(r.days_left)) for r in folio.expired],
            "pq_summary": folios.pq_summary(folio.pq_ready, folio.pq_untested, folio.total),
            "filters": urlencode({k: v for k, v in (("tag", tag), ("grade", grade), ("grade_max", grade_max)) if v}),
            "tag": tag, "grade": grade, "grade_max": grade_max,
            "tags": org.tags.values_list("name", flat=True), "grades": GRADES, "policy": policy,
            "window_verdict": schedules.window_verdict(policy), "crowded": schedules.crowded_addresses(policy),
            "window_form": window_form, "can_manage_org": roles.can(org.role, "manage_org"),
            "can_run_audits": roles.can(org.role, "run_audits"), "renewal_share_pct": renewal_share_pct(org),
            "can_request_pdf": roles.can(org.role, "request_reports")}


def renewal_share_pct(org) -> int:
    prefs = AlertSettings.objects.filter(organization=org).first()
    return prefs.renewal_share_pct if prefs else RENEWAL_SHARE_PCT


@login_required
@require_POST
def schedule_window(request, org):
    """Owners and admins set the hours in which the organization's scheduled audits start."""
    org = org_for(request, org, "manage_org")
    form = WindowForm(request.POST)
    if not form.is_valid():
        return render(request, "monitoring/portfolio.html", _portfolio_context(request, org, form), status=400)
    moved = schedules.update_policy(schedules.policy_for(org), start=form.cleaned_data["start"],
                                    end=form.cleaned_data["end"])
    messages.success(request, f"Audit window saved; {moved} site schedule(s) moved into it.")
    return redirect("monitoring:portfolio", org.slug)


@login_required
@require_POST
def run_next_now(request, org):
    """Owners and admins run the nightly audits due in the next 24 hours now (schedules.run_next_now, in a
    task: a large portfolio is thousands of claims)."""
    org = org_for(request, org, "manage_org")
    due = len(schedules.due_within_a_day(org))
    if not due:
        messages.info(request, "No scheduled site has an audit due in the next 24 hours.")
        return redirect("monitoring:portfolio", org.slug)
    try:
        enqueue(RUN_NEXT_NOW_TASK, org.pk)
    except QueueUnavailable:
        messages.error(request, "The task queue is unavailable for a moment: nothing was started. Try again shortly.")
        return redirect("monitoring:portfolio", org.slug)
    messages.success(request, run_now_words(due))
    return redirect("monitoring:portfolio", org.slug)


def run_now_words(due: int) -> str:
    sites = f"{due} scheduled site{'s' if due != 1 else ''}"
    return (f"The next nightly audits of {sites} (due within 24 hours) are starting now, {schedules.capacity()} a "
            "minute as the window would; those runs are then skipped. Sites whose run for that night already "
            "started are left as they are.")


RUN_NEXT_NOW_TASK = "workers.tasks.schedule.run_next_now"
GRADES = ("A+", "A", "A-", "B", "C", "D", "E", "F", "T", "M")
