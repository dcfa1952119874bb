from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tlsaudit.core.auditlog import record
from tlsaudit.core.ratelimits import RateLimited
from tlsaudit.domain import roles
from tlsaudit.orgs.access import org_for, site_for
from tlsaudit.reports import digests, services
from tlsaudit.reports.forms import BrandingForm, DigestForm
from tlsaudit.reports.models import DigestDelivery, Report, ReportBranding, ReportSchedule

RECENT_DELIVERIES = 20


@login_required
@require_POST
def request_site(request, org, pk):
    org, site = site_for(request, org, pk, "request_reports")
    try:
        report, created = services.queue_report(org, site=site, user=request.user)
    except RateLimited as refusal:
        messages.error(request, refusal.message)
        return redirect(site)
    if not created:
        messages.info(request, "A report of this site is already being made: here it is.")
    return redirect(report)


@login_required
@require_POST
def request_portfolio(request, org):
    org = org_for(request, org, "request_reports")
    try:
        report, created = services.queue_report(org, user=request.user)
    except RateLimited as refusal:
        messages.error(request, refusal.message)
        return redirect("monitoring:portfolio", org.slug)
    if not created:
        messages.info(request, "A portfolio report is already being made: here it is.")
    return redirect(report)


@login_required
def report_detail(request, org, report_id):
    org = org_for(request, org)
    report = get_object_or_404(Report.objects.select_related("site", "organization"), organization=org, pk=report_id)
    context = {"org": org, "report": report, "can_request": roles.can(org.role, "request_reports")}
    template = "reports/detail.html#report-status" if request.htmx else "reports/detail.html"
    return render(request, template, context)


@login_required
def download(request, org, report_id):
    org = org_for(request, org)
    report = get_object_or_404(Report.objects.select_related("site", "organization"), organization=org,
                               pk=report_id, status=Report.Status.DONE)
    try:
        handle = report.file.open("rb")
    except (FileNotFoundError, ValueError):
        raise Http404("The PDF file is gone.") from None
    return FileResponse(handle, as_attachment=True, filename=report.filename, content_type="application/pdf")


@login_required
@require_POST
def branding(request, org):
    """The logo and accent colour of the organization's PDF reports (a form on the settings page)."""
    org = org_for(request, org, "manage_org")
    current = ReportBranding.objects.filter(organization=org).first() or ReportBranding(organization=org)
    form = BrandingForm(request.POST, request.FILES, instance=current)
    if form.is_valid():
        form.save()
        record("org.settings_changed", org=org, target=org.name, request=request,
               fields=form.changed_data)
        messages.success(request, "Report branding saved.")
    else:
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
    return redirect("orgs:settings", org.slug)


@login_required
def digest_settings(request, org):
    """The emailed PDF digest: who gets it and how often (owners and admins change it; members see the
    addresses, viewers how many), the recent deliveries, and "Send now"."""
    org = org_for(request, org)
    schedule = ReportSchedule.objects.filter(organization=org).first() or ReportSchedule(organization=org)
    can_manage = roles.can(org.role, "manage_org")
    form = DigestForm(request.POST or None, instance=schedule)
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only owners and admins can change the digest.")
        if form.is_valid():
            form.save()
            record("org.settings_changed", org=org, target=org.name, request=request, fields=form.changed_data)
            messages.success(request, f"Digest saved: {digest_words(form.instance)}.")
            return redirect("reports:digests", org.slug)
    return render(request, "reports/digests.html", {
        "org": org, "form": form, "schedule": schedule, "can_manage": can_manage, "words": digest_words(schedule),
        "can_see_targets": roles.can(org.role, "see_alert_targets"),
        "deliveries": DigestDelivery.objects.filter(organization=org).order_by("-created_at")[:RECENT_DELIVERIES],
        "send_now_minutes": settings.DIGEST_SEND_NOW_MINUTES, "send_now_per_day": settings.DIGEST_SEND_NOW_PER_DAY,
    }, status=400 if form.errors else 200)


@login_required
@require_POST
def digest_send_now(request, org):
    org = org_for(request, org, "manage_org")
    schedule = ReportSchedule.objects.filter(organization=org).first()
    try:
        report = digests.send_now(schedule or ReportSchedule(organization=org))
    except ValueError as refusal:
        messages.error(request, str(refusal))
    except digests.SentTooRecently as refusal:
        messages.error(request, refusal.message)
    else:
        messages.success(request, f"The digest is being made for {len(schedule.recipients)} recipient"
                                  f"{'s' if len(schedule.recipients) != 1 else ''}; each gets it by email in a "
                                  "minute or two (the deliveries below say when).")
        record("report.requested", org=org, target=f"digest {report.pk}", request=request)
    return redirect("reports:digests", org.slug)


def digest_words(schedule: ReportSchedule) -> str:
    count = len(schedule.recipients)
    if schedule.frequency == ReportSchedule.Frequency.OFF or not count:
        return "off: no digest is sent"
    return f"{schedule.get_frequency_display().lower()} to {count} recipient{'s' if count != 1 else ''}"
