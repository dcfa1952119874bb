from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from tlsaudit.audits.presenters import error_label, present_report, progress_steps
from tlsaudit.audits.queries import UNSHOWN_FIELDS
from tlsaudit.audits.visitor import with_visitor_effects
from tlsaudit.domain import roles
from tlsaudit.orgs.access import site_for


@login_required
@require_POST
def audit_now(request, org, pk):
    org, site = site_for(request, org, pk, "run_audits")
    if not request.user.email_verified:
        messages.error(request, "Verify your email address before running audits: audits send traffic to the "
                                "site, so we need to know who asks.")
        return redirect(site)
    try:
        audit, created = services.queue_audit(site, user=request.user)
    except services.AuditRateLimited as refusal:
        messages.error(request, refusal.message)
        return redirect(site)
    if not created:
        messages.info(request, "An audit of this site is already queued or running: here it is.")
    return redirect(audit)


@login_required
def audit_detail(request, org, pk, audit_id):
    org, site = site_for(request, org, pk)
    audit = get_object_or_404(Audit.objects.defer(*UNSHOWN_FIELDS), site=site, pk=audit_id)
    audit.site = site
    context = {"org": org, "site": site, "audit": audit, "can_run": roles.can(org.role, "run_audits"),
               "can_request_pdf": roles.can(org.role, "request_reports"),
               "percent": services.progress_percent(audit), "steps": progress_steps(audit.progress),
               "error_label": error_label(audit.error_code)}
    if audit.status == Audit.Status.DONE:
        context.update(present_report(audit))
        context["recommendations"] = with_visitor_effects(context["recommendations"], site)
    template = "audits/detail.html#audit-body" if request.htmx else "audits/detail.html"
    return render(request, template, context)


@login_required
@require_POST
def audit_retry(request, org, pk, audit_id):
    org, site = site_for(request, org, pk, "run_audits")
    failed = get_object_or_404(Audit, site=site, pk=audit_id, status=Audit.Status.FAILED)
    try:
        audit, _ = services.queue_audit(site, user=request.user)
    except services.AuditRateLimited as refusal:
        messages.error(request, refusal.message)
        return redirect(failed)
    return redirect(audit)
