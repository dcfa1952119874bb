from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import F, Q, prefetch_related_objects
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from tlsaudit.audits import waiting
from tlsaudit.audits.models import Audit, RenewalInfo, WaitingAudit
from tlsaudit.audits.queries import UNSHOWN_FIELDS, listed
from tlsaudit.audits.services import queue_audits
from tlsaudit.audits.visitor import with_visitor_effects
from tlsaudit.core.auditlog import record
from tlsaudit.domain import roles
from tlsaudit.domain.applicability import tools_not_applicable
from tlsaudit.monitoring.history import diff_between
from tlsaudit.orgs.access import org_for, site_for
from tlsaudit.sites import services
from tlsaudit.sites.forms import BulkImportForm, SiteForm
from tlsaudit.sites.importer import import_sites, rejected_lines, rows_from_csv, rows_from_lines
from tlsaudit.sites.models import Site, tagged

SORTS = {"host": "hostname", "-host": "-hostname", "name": "name", "-name": "-name",
         "audited": F("last_audit_at").asc(nulls_first=True), "-audited": F("last_audit_at").desc(nulls_last=True),
         "added": "created_at", "-added": "-created_at", "port": "https_port", "-port": "-https_port"}
PAGE_SIZE = 25


@login_required
def site_list(request, org):
    org = org_for(request, org)
    sites = Site.objects.filter(organization=org).prefetch_related("tags")
    tag = request.GET.get("tag", "").strip().lower()
    if tag:
        sites = tagged(sites, org.pk, tag)
    query = request.GET.get("q", "").strip()
    if query:
        sites = sites.filter(Q(hostname__icontains=query) | Q(name__icontains=query))
    sort = request.GET.get("sort", "host")
    sites = sites.order_by(SORTS.get(sort, "hostname"), "https_port", "pk")
    page = Paginator(sites, PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = with_active_audits(with_org(page.object_list, org))
    template = "sites/list.html#site-table" if request.htmx else "sites/list.html"
    return render(request, template, {
        "org": org, "page": page, "tag": tag, "q": query, "sort": sort,
        "polling": any(site.active_audit for site in page.object_list),
        # A row waiting for a free slot turns "queued" within the hour: look again now and then, not every 3 s.
        "slow_polling": any(site.waits_for_slot for site in page.object_list),
        "all_tags": org.tags.order_by("name").values_list("name", flat=True),
        "can_edit": roles.can(org.role, "manage_sites"),
        "can_run": (can_run := roles.can(org.role, "run_audits")),
        "audit_budget": waiting.budget(org.pk) if can_run else None,
        "total": page.paginator.count if not (tag or query) else Site.objects.filter(organization=org).count(),
    })


def with_active_audits(sites: list) -> list:
    """Each site's queued or running audit status ("" when none), in one query: after "Audit all" the
    rows say what is happening and the table refreshes itself until it is over."""
    ids = [site.pk for site in sites]
    active = dict(Audit.objects.filter(site_id__in=ids, status__in=(Audit.Status.QUEUED, Audit.Status.RUNNING))
                  .order_by("status").values_list("site_id", "status"))
    in_line = set(WaitingAudit.objects.filter(site_id__in=ids).values_list("site_id", flat=True))
    for site in sites:
        site.active_audit = active.get(site.pk, "")
        site.waits_for_slot = site.pk in in_line
    return sites


def with_org(sites, org) -> list:
    """Give each site the organization already loaded, so links (its slug) cost no query per row."""
    sites = list(sites)
    for site in sites:
        site.organization = org
    return sites


@login_required
def site_add(request, org):
    org = org_for(request, org, "manage_sites")
    form = SiteForm(request.POST or None, org=org)
    if request.method == "POST" and form.is_valid():
        site = services.save_from_form(form, created_by=request.user)
        messages.success(request, f"{site.label} added.")
        return redirect(site)
    return render(request, "sites/form.html", {"org": org, "form": form}, status=400 if form.errors else 200)


@login_required
def site_edit(request, org, pk):
    org, site = site_for(request, org, pk, "manage_sites")
    form = SiteForm(request.POST or None, instance=site, org=org)
    if request.method == "POST" and form.is_valid():
        services.save_from_form(form)
        messages.success(request, f"{site.label} saved.")
        return redirect(site)
    return render(request, "sites/form.html", {"org": org, "form": form, "site": site},
                  status=400 if form.errors else 200)


@login_required
@require_POST
def site_delete(request, org, pk):
    org, site = site_for(request, org, pk, "manage_sites")
    label, origin, site_id = site.label, site.display_origin, site.pk
    site.delete()
    record("site.deleted", org=org, target=origin, request=request, site_id=site_id, name=label)
    messages.info(request, f"{label} deleted.")
    return redirect("sites:list", org.slug)


@login_required
def site_detail(request, org, pk):
    org, site = site_for(request, org, pk)
    prefetch_related_objects([site], "tags")  # the header shows them; the site's other pages do not
    audits = list(listed(site.audits.all())[:20])
    latest = next((a for a in audits if a.status == "done"), None)
    return render(request, "sites/detail.html", {
        "org": org, "site": site, "can_edit": roles.can(org.role, "manage_sites"), "audits": audits,
        "latest": latest, "since_previous": since_previous(site),
        "tools_not_applicable": tools_not_applicable(site.tls_service),
        "side_by_side": side_by_side(site, latest), "renewal": renewal_of(latest),
    })


def renewal_of(latest) -> dict | None:
    """The latest audit's leaf and what its CA says about renewing it (ARI), for the Renewal card."""
    if latest is None:
        return None
    leaf = latest.certificates.filter(deployment=0, position=0).first()
    if leaf is None:
        return None
    lifetime = leaf.not_after - leaf.not_before
    used = (timezone.now() - leaf.not_before) / lifetime if lifetime.total_seconds() > 0 else 1.0
    return {"leaf": leaf, "lifetime_days": round(lifetime.total_seconds() / 86400),
            "used_pct": max(0, min(100, round(100 * used))),
            "ari": RenewalInfo.objects.filter(site_id=latest.site_id, fingerprint=leaf.fingerprint_sha256).first()}


def side_by_side(site, latest) -> list[dict]:
    """The latest audit's recommendations with their grade effect and their effect on a visitor's time."""
    if latest is None:
        return []
    report = Audit.objects.values_list("report", flat=True).get(pk=latest.pk) or {}
    return with_visitor_effects(report.get("recommendations") or [], site)


def since_previous(site):
    """(previous, latest, diff) of the site's last two done audits when something changed, else None."""
    last_two = list(Audit.objects.filter(site=site, status=Audit.Status.DONE).defer(*UNSHOWN_FIELDS)
                    .order_by("-finished_at", "-pk")[:2])
    if len(last_two) < 2:
        return None
    new, old = last_two
    diff = diff_between(old, new)
    return (old, new, diff) if diff.changed else None


@login_required
def site_import(request, org):
    org = org_for(request, org, "manage_sites")
    form = BulkImportForm(request.POST or None, request.FILES or None)
    results, kept, from_file = None, "", 0
    if request.method == "POST" and form.is_valid():
        pasted = rows_from_lines(form.cleaned_data.get("lines") or "")
        rows = list(pasted)
        if form.cleaned_data.get("csv_file"):
            rows += rows_from_csv(form.cleaned_data["csv_file"])
        results = import_sites(org, request.user, rows, form.cleaned_data["tags_text"])
        # Nothing typed is lost: the rejected lines come back in the box (added ones are saved).
        kept = rejected_lines(results, pasted) if pasted else ""
        from_file = sum(not r.added for r in results[len(pasted):]) if len(results) == len(rows) else 0
        form = BulkImportForm(initial={"lines": kept, "tags_text": request.POST.get("tags_text", "")})
    added = sum(r.added for r in results or [])
    rejected = len(results or []) - added
    return render(request, "sites/import.html", {
        "org": org, "form": form, "results": results, "added": added, "rejected": rejected,
        "kept_lines": bool(kept), "rejected_from_file": from_file,
    }, status=400 if form.errors else 200)


@login_required
@require_POST
def site_audit_bulk(request, org):
    """"Audit selected" (the ticked rows) or "Audit all": one audit per site, as many clicks would, under the
    same permissions and rate limits (audits.services.queue_audits)."""
    org = org_for(request, org, "run_audits")
    if not request.user.email_verified:
        messages.error(request, "Verify your email address before running audits: audits send traffic to the "
                                "site, so we need to know who asks.")
        return redirect("sites:list", org.slug)
    sites = Site.objects.filter(organization=org).order_by("hostname", "https_port", "pk")
    if request.POST.get("scope") != "all":
        ids = [int(value) for value in request.POST.getlist("site") if value.isdigit()]
        if not ids:
            messages.error(request, "Tick the sites to audit first, or press \"Audit all\".")
            return redirect("sites:list", org.slug)
        sites = sites.filter(pk__in=ids)   # another organization's ids match nothing here
    outcome = queue_audits(sites, user=request.user)
    report_bulk(request, outcome, org)
    return redirect("sites:list", org.slug)


def report_bulk(request, outcome, org) -> None:
    started = [f"{outcome.queued} audit{'s' if outcome.queued != 1 else ''} queued"]
    if outcome.already:
        started.append(f"{outcome.already} already queued, running or waiting")
    if outcome.unsent:
        started.append(f"{outcome.unsent} saved, starting when the task queue is back")
    messages.success(request, ", ".join(started) + ".")
    if outcome.waiting:
        messages.info(request, f"{waiting.waiting_words(outcome.waiting)} "
                               f"{waiting.budget(org.pk).wait_words(outcome.waiting)}")
    if outcome.refused:
        messages.error(request, f"{outcome.refused} not started: " + " ".join(outcome.reasons))


@login_required
@require_POST
def site_audit_cancel_waiting(request, org):
    """Take every audit waiting for a free slot out of line (the ones queued or running go on)."""
    org = org_for(request, org, "run_audits")
    cancelled = waiting.cancel(org.pk)
    record("audits.waiting_cancelled", org=org, target=f"{cancelled} audits", request=request)
    messages.success(request, f"{cancelled:,} waiting audit{'s' if cancelled != 1 else ''} cancelled; "
                              "audits already queued or running go on.")
    return redirect("sites:list", org.slug)
