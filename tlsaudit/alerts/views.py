
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from tlsaudit.alerts import services
from tlsaudit.alerts.forms import AlertSettingsForm, WebhookForm
from tlsaudit.alerts.models import AlertEvent, AlertSettings, Webhook, WebhookDelivery
from tlsaudit.core.auditlog import record
from tlsaudit.domain import roles
from tlsaudit.orgs.access import org_for
from tlsaudit.orgs.models import Organization

LOG_SIZE = 50


@login_required
def alert_settings(request, org):
    org = org_for(request, org, "view")
    prefs, _ = AlertSettings.objects.get_or_create(organization=org)
    form = AlertSettingsForm(request.POST or None, instance=prefs)
    if request.method == "POST":
        if not roles.can(org.role, "manage_org"):
            raise PermissionDenied("Only owners and admins can change the alerts.")
        if form.is_valid():
            form.save()
            messages.success(request, "Alert settings saved.")
            return redirect("alerts:settings", org.slug)
    return render(request, "alerts/settings.html", _context(org, form=form), status=400 if form.errors else 200)


@login_required
@require_POST
def add_webhook(request, org):
    org = org_for(request, org, "manage_org")
    form = WebhookForm(request.POST, org=org)
    if not form.is_valid():
        return render(request, "alerts/settings.html", _context(org, webhook_form=form), status=400)
    hook = form.save(commit=False)
    hook.organization = org
    hook.save()
    record("webhook.created", org=org, target=webhook_target(hook), request=request, webhook_id=hook.pk)
    # Rendered, not redirected: the only time the whole secret is shown. no-store keeps that page
    # out of the browser's caches, so Back or a restored tab cannot show the secret again.
    response = render(request, "alerts/settings.html", _context(org, new_webhook=hook))
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
def delete_webhook(request, org, pk):
    org = org_for(request, org, "manage_org")
    hook = get_object_or_404(Webhook, organization=org, pk=pk)
    hook.delete()
    record("webhook.deleted", org=org, target=webhook_target(hook), request=request, webhook_id=pk)
    messages.info(request, "Webhook deleted.")
    return redirect("alerts:settings", org.slug)


@login_required
@require_POST
def test_webhook(request, org, pk):
    org = org_for(request, org, "manage_org")
    hook = get_object_or_404(Webhook, organization=org, pk=pk)
    with transaction.atomic():
        services.queue_delivery(hook, event=None)
    messages.info(request, "Test delivery queued: its result appears in the delivery log.")
    return redirect("alerts:settings", org.slug)


@login_required
@require_POST
def redeliver(request, org, pk):
    org = org_for(request, org, "manage_org")
    delivery = get_object_or_404(WebhookDelivery, webhook__organization=org, pk=pk)
    try:
        services.redeliver(delivery)
    except services.RedeliveryRefused as refusal:
        messages.error(request, str(refusal))
    else:
        messages.info(request, "Redelivery queued: its result appears in the delivery log.")
    return redirect("alerts:settings", org.slug)


def webhook_target(hook) -> str:
    """What the audit log keeps of a webhook: its origin, never the path's token."""
    return hook.origin


def _context(org, form=None, webhook_form=None, new_webhook=None):
    return {
        "org": org,
        "can_manage": roles.can(org.role, "manage_org"),
        "can_see_targets": roles.can(org.role, "see_alert_targets"),
        "form": form or AlertSettingsForm(instance=AlertSettings.objects.get_or_create(organization=org)[0]),
        "webhook_form": webhook_form or WebhookForm(org=org),
        "new_webhook": new_webhook,
        "webhooks": Webhook.objects.filter(organization=org),
        "deliveries": with_redeliverable(WebhookDelivery.objects.filter(webhook__organization=org)
                                         .select_related("webhook", "event")[:LOG_SIZE]),
        "events": with_org_sites(AlertEvent.objects.filter(organization=org).select_related("site")[:20], org),
    }


def with_redeliverable(deliveries) -> list:
    """The log's rows, newest first, each with `redeliverable`: the last attempt of its delivery, failed,
    and no retry to come."""
    rows, seen = list(deliveries), set()
    for row in rows:
        chain = row.first_id or row.pk
        row.redeliverable = chain not in seen and row.status == row.Status.FAILED and row.next_attempt_at is None
        seen.add(chain)
    return rows


def with_org_sites(events, org) -> list:
    """The events' sites get the organization already loaded: their links cost no query per row."""
    events = list(events)
    for event in events:
        event.site.organization = org
    return events


# The signed token in the link is the credential: no login, and no CSRF token either, so that
# mail clients can POST it themselves (RFC 8058 one-click unsubscribe).
@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request, org, token):
    """GET: confirm; POST: remove the token's address from the organization's alert recipients."""
    try:
        address, org_id = services.read_unsubscribe_token(token)
    except signing.SignatureExpired:
        return _bad_link(request, "This unsubscribe link has expired. Sign in and change the alert recipients instead.")
    except signing.BadSignature:
        return _bad_link(request, "This unsubscribe link is not valid: it may have been cut or changed.")
    organization = Organization.objects.filter(pk=org_id, slug=org).first()
    if organization is None:
        return _bad_link(request, "This unsubscribe link is not valid: it may have been cut or changed.")
    context = {"org": organization, "address": address, "done": False}
    if request.method == "POST":
        with transaction.atomic():
            prefs = AlertSettings.objects.select_for_update().filter(organization=organization).first()
            kept = [a for a in (prefs.recipients if prefs else []) if a.strip().lower() != address]
            context["was_recipient"] = bool(prefs) and len(kept) != len(prefs.recipients)
            if context["was_recipient"]:
                prefs.recipients = kept
                prefs.save(update_fields=["recipients"])
        context["done"] = True
    else:
        prefs = AlertSettings.objects.filter(organization=organization).first()
        context["was_recipient"] = bool(prefs) and address in [a.strip().lower() for a in prefs.recipients]
    return render(request, "alerts/unsubscribe.html", context)


def _bad_link(request, message):
    return render(request, "alerts/unsubscribe.html", {"error": message}, status=400)
