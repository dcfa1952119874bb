"""The site's Performance tab: ownership proof, run forms, live progress, results, CSV.

Every view finds the site through site_for(): other organizations get 404, viewers see results
but get 403 on anything that starts, stops or checks.
"""


from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tlsaudit.core.csvexport import csv_download
from tlsaudit.domain import roles
from tlsaudit.domain.applicability import not_applicable_reason
from tlsaudit.loadtests import checks, plans, presets, services
from tlsaudit.loadtests import verification as proofs
from tlsaudit.loadtests.models import LoadLimits, PerfRun
from tlsaudit.loadtests.presenters import csv_tables, present_run
from tlsaudit.orgs.access import site_for

RUN_ACTION = "run_audits"


def overview_context(org, site, **extra) -> dict:
    limits = LoadLimits.for_org(org)
    # kind -> why it means nothing for this service (a load test of an SMTP server)
    refused = {kind: reason for kind in PerfRun.Kind.values if (reason := not_applicable_reason(site.tls_service, kind))}
    return {"org": org, "site": site, "verification": proofs.host_proof(site), "limits": limits,
            "presets": [{**p, "not_applicable": refused.get(p["kind"])} for p in presets.presets_within(limits)],
            "not_applicable": refused, "can_run": roles.can(org.role, RUN_ACTION),
            "default_repeats": checks.DEFAULT_REPEATS, "max_repeats": checks.MAX_REPEATS,
            "default_per_agent": checks.DEFAULT_PER_AGENT,
            "run_time_limit_s": f"{plans.RUN_TIME_LIMIT_S:g}", "min_seconds": f"{plans.MIN_RUN_SECONDS:g}",
            "max_seconds": f"{plans.MAX_RUN_SECONDS:g}",
            # The list shows no results: leave the (large) JSON of twenty runs in the database.
            "runs": list(site.perf_runs.select_related("requested_by").defer("params", "progress", "results",
                                                                              "summary")[:20]),
            "active": site.perf_runs.filter(status__in=services.ACTIVE).first(), **extra}


@login_required
def perf_overview(request, org, pk):
    org, site = site_for(request, org, pk)
    return render(request, "loadtests/overview.html", overview_context(org, site))


@login_required
def verification_page(request, org, pk):
    org, site = site_for(request, org, pk)
    return render(request, "loadtests/verification.html", {
        "org": org, "site": site, "verification": proofs.host_proof(site),
        "can_run": roles.can(org.role, RUN_ACTION)})


@login_required
@require_POST
def verification_check(request, org, pk):
    org, site = site_for(request, org, pk, RUN_ACTION)
    method = request.POST.get("method") or None
    if method not in (None, "http", "dns"):
        method = None
    # A site covered by a sibling's proof (same host, other port) re-checks that proof, not a new one.
    covering = proofs.host_proof(site)
    proofs.check_now(covering.site if covering.is_verified else site, method)
    verification = proofs.host_proof(site)
    context = {"org": org, "site": site, "verification": verification, "can_run": True}
    if request.htmx:
        return render(request, "loadtests/verification.html#verification-state", context)
    if verification.is_verified:
        messages.success(request, f"{site.label} is verified.")
    else:
        messages.error(request, f"Not verified yet: {verification.last_error}")
    return redirect("loadtests:verification", org.slug, site.pk)


@login_required
@require_POST
def run_start(request, org, pk):
    org, site = site_for(request, org, pk, RUN_ACTION)
    kind = request.POST.get("kind", "")
    if kind not in PerfRun.Kind.values:
        raise Http404("No such kind of run.")
    try:
        run = services.queue_run(site, kind, params_from_post(kind, request.POST), user=request.user)
    except checks.RunRefused as refusal:
        return render(request, "loadtests/overview.html",
                      overview_context(org, site, refusal=refusal), status=400)
    return redirect(run)


def params_from_post(kind: str, post) -> dict:
    """Form fields to the raw params checks.validate_params checks (the API sends the same dict)."""
    fields = {
        "load": {"scheme": post.get("scheme", "https"), "requests": post.get("requests", 100),
                 "concurrency": post.get("concurrency", 1), "keepalive": post.get("keepalive") == "on",
                 "path": post.get("path", "/"), "timeout_s": post.get("timeout_s") or 10},
        "sweep": {"levels": post.get("levels", ""), "requests": post.get("requests", 500),
                  "modes": post.getlist("modes") or ["new"], "path": post.get("path", "/")},
        "handshakes": {"versions": post.getlist("versions") or ["1.2", "1.3"],
                       "agents_levels": post.get("agents_levels", ""), "per_agent": post.get("per_agent", checks.DEFAULT_PER_AGENT),
                       "resume": post.get("resume") == "on"},
    }
    for optional in ("repeats", "seconds"):   # left empty: the default (seconds: the longest that fits)
        if post.get(optional):
            fields[kind][optional] = post[optional]
    return fields[kind]


@login_required
def run_detail(request, org, pk, run_id):
    org, site = site_for(request, org, pk)
    run = get_object_or_404(PerfRun, site=site, pk=run_id)
    context = {"org": org, "site": site, "run": run, "can_run": roles.can(org.role, RUN_ACTION),
               **present_run(run)}
    template = "loadtests/run.html#run-body" if request.htmx else "loadtests/run.html"
    return render(request, template, context)


@login_required
@require_POST
def run_stop(request, org, pk, run_id):
    org, site = site_for(request, org, pk, RUN_ACTION)
    run = services.request_stop(get_object_or_404(PerfRun, site=site, pk=run_id))
    if not run.is_finished:
        messages.info(request, "Stopping: the agents stop within a few seconds.")
    return redirect(run)


@login_required
def run_csv(request, org, pk, run_id, table):
    org, site = site_for(request, org, pk)
    run = get_object_or_404(PerfRun, site=site, pk=run_id)
    return csv_download(csv_tables(run), table, f"run-{run.pk}-{table}.csv")
