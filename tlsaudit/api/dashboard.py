"""Creating and revoking keys in the dashboard (owners and admins). The plaintext is in the
response to the creating POST only: never stored, never put in the session, never logged."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from tlsaudit.api.forms import ApiKeyForm
from tlsaudit.api.models import ApiKey
from tlsaudit.api.services import create_key
from tlsaudit.core.auditlog import record
from tlsaudit.orgs.access import org_for


@login_required
def key_list(request, org):
    org = org_for(request, org, "manage_org")
    return render(request, "api/keys.html", key_context(org, ApiKeyForm(org=org)))


@login_required
@require_POST
def key_create(request, org):
    org = org_for(request, org, "manage_org")
    form = ApiKeyForm(request.POST, org=org)
    if not form.is_valid():
        return render(request, "api/keys.html", key_context(org, form), status=400)
    key, plaintext = create_key(org, name=form.cleaned_data["name"], scope=form.cleaned_data["scope"],
                                rate_per_minute=form.cleaned_data["rate_per_minute"], created_by=request.user)
    record("api_key.created", org=org, target=key.name, request=request, key_prefix=key.display_prefix,
           scope=key.scope)
    response = render(request, "api/keys.html", key_context(org, ApiKeyForm(org=org), created=key,
                                                             plaintext=plaintext))
    response["Cache-Control"] = "no-store"   # the one page that shows the key must not be cached
    return response


@login_required
@require_POST
def key_revoke(request, org, pk):
    org = org_for(request, org, "manage_org")
    key = get_object_or_404(ApiKey, organization=org, pk=pk)
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        record("api_key.revoked", org=org, target=key.name, request=request, key_prefix=key.display_prefix)
        messages.info(request, f"Key “{key.name}” revoked: requests with it now get 401.")
    return redirect("api_keys:list", org.slug)


def key_context(org, form, created=None, plaintext=None) -> dict:
    return {"org": org, "form": form, "created": created, "plaintext": plaintext,
            "keys": ApiKey.objects.filter(organization=org).select_related("created_by")}
