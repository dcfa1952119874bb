"""The site's Browser tab: run a probe (with K), follow it live, read its charts and tables, CSV.

Every view finds the site through site_for(): other organizations get 404, viewers see results
but get 403 on "Run".
"""


from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tlsaudit.core.csvexport import csv_download
from tlsaudit.domain import roles
from tlsaudit.domain.applicability import PROBE, not_applicable_reason
from tlsaudit.orgs.access import site_for
from tlsaudit.probes import services
from tlsaudit.probes.models import Probe
from tlsaudit.probes.presenters import csv_tables, present_probe

RUN_ACTION = "run_audits"
HISTORY = 20


def overview_context(request, org, site, **extra) -> dict:
    # The history table needs no engine JSON (page loads and waterfalls): only the latest probe's.
    probes = list(site.probes.select_related("requested_by").defer("result")[:HISTORY])
    latest = probes[0] if probes else None
    if latest is not None:
        latest.result = Probe.objects.values_list("result", flat=True).get(pk=latest.pk)
    context = {"org": org, "site": site, "probes": probes, "probe": latest, "can_run": roles.can(org.role, RUN_ACTION),
               "email_verified": request.user.email_verified, "max_runs": settings.PROBE_MAX_RUNS,
               "default_seconds": settings.PROBE_DEFAULT_SECONDS, "max_seconds": services.max_seconds(),
               "min_seconds": services.MIN_SECONDS, "setup_s": services.SETUP_S,
               "runs_per_day": settings.PROBE_RUNS_PER_DAY,
               "not_applicable": not_applicable_reason(site.tls_service, PROBE), **extra}
    if latest is not None:
        context.update(present_probe(latest))
    return context


@login_required
def browser_overview(request, org, pk):
    org, site = site_for(request, org, pk)
    return render(request, "probes/overview.html", overview_context(request, org, site))


@login_required
@require_POST
def probe_start(request, org, pk):
    org, site = site_for(request, org, pk, RUN_ACTION)
    raw = {"runs": request.POST.get("runs"), "seconds": request.POST.get("seconds"),
           "path": request.POST.get("path") or "/",
           "variants": request.POST.getlist("variants") or None}
    try:
        probe = services.queue_probe(site, raw, user=request.user)
    except services.ProbeRefused as refusal:
        limited = isinstance(refusal, services.ProbeRateLimited)
        response = render(request, "probes/overview.html", overview_context(request, org, site, refusal=refusal),
                          status=429 if limited else 400)
        if limited:
            response["Retry-After"] = str(refusal.retry_after)
        return response
    return redirect(probe)


@login_required
def probe_detail(request, org, pk, probe_id):
    org, site = site_for(request, org, pk)
    probe = get_object_or_404(Probe.objects.select_related("requested_by", "site__organization"), site=site,
                              pk=probe_id)
    context = {"org": org, "site": site, "probe": probe, "can_run": roles.can(org.role, RUN_ACTION),
               **present_probe(probe)}
    template = "probes/detail.html#probe-body" if request.htmx else "probes/detail.html"
    return render(request, template, context)


@login_required
def probe_csv(request, org, pk, probe_id, table):
    org, site = site_for(request, org, pk)
    probe = get_object_or_404(Probe, site=site, pk=probe_id)
    return csv_download(csv_tables(probe), table, f"probe-{probe.pk}-{table}.csv")
