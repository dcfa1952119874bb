from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from tlsaudit.alerts.models import AlertSettings
from tlsaudit.api import services as api_services
from tlsaudit.api.models import ApiKey
from tlsaudit.core import ratelimits
from tlsaudit.core.auditlog import record
from tlsaudit.domain import roles
from tlsaudit.orgs import invitations
from tlsaudit.orgs.access import org_for, remember_org
from tlsaudit.orgs.forms import InviteForm, OrganizationForm, OrganizationSettingsForm, RoleForm, ca_certificates
from tlsaudit.orgs.models import Invitation, Membership, Organization
from tlsaudit.reports.forms import BrandingForm
from tlsaudit.reports.models import ReportBranding


@login_required
def create_org(request):
    form = OrganizationForm(request.POST or None, initial={"alert_email": request.user.email})
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            org = form.save()
            Membership.objects.create(organization=org, user=request.user, role=roles.OWNER)
            email = form.cleaned_data["alert_email"]
            AlertSettings.objects.create(organization=org, recipients=[email] if email else [])
            record("org.created", org=org, target=org.name, request=request)
        remember_org(request.user, org)
        messages.success(request, f"{org.name} is ready. Add the first site to audit.")
        return redirect("sites:list", org.slug)
    return render(request, "orgs/create.html", {"form": form})


@login_required
def org_settings(request, org):
    org = org_for(request, org, "view")
    can_manage = roles.can(org.role, "manage_org")
    form = OrganizationSettingsForm(request.POST or None, request.FILES or None, instance=org)
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only owners and admins can change the organization's settings.")
        if form.is_valid():
            form.save()
            # Field names only: the custom CA is public, but values do not belong in a log.
            record("org.settings_changed", org=org, target=org.name, request=request, fields=form.changed_data)
            messages.success(request, "Settings saved.")
            return redirect("orgs:settings", org.slug)
    return render(request, "orgs/settings.html", _members_context(request, org, settings_form=form,
                                                                  trusted_cas=ca_certificates(org.custom_ca_pem)))


def _members_context(request, org, **extra):
    branding = ReportBranding.objects.filter(organization=org).first()
    return {
        "branding": branding,
        "branding_form": BrandingForm(instance=branding),
        "org": org,
        "members": members_for(org),
        "invitations": [i for i in org.invitations.filter(accepted_at=None) if not i.is_expired],
        "invite_form": extra.pop("invite_form", None) or InviteForm(org=org, actor_role=org.role),
        "can_manage_members": roles.can(org.role, "manage_members"),
        "can_manage_org": roles.can(org.role, "manage_org"),
        "can_view_audit_log": roles.can(org.role, "view_audit_log"),
        "role_choices": [(value, label) for value, label in roles.ROLE_CHOICES if roles.can_assign(org.role, value)],
        **extra,
    }


def members_for(org) -> list:
    """The memberships as the viewer of the page may act on them: `manageable` (may change or remove) and
    `live_keys` (working API keys its user created here)."""
    members = list(org.memberships.select_related("user"))
    counts = dict(ApiKey.objects.filter(organization=org, revoked_at__isnull=True, created_by__isnull=False)
                  .values_list("created_by").annotate(n=Count("pk")).values_list("created_by", "n"))
    for membership in members:
        membership.live_keys = counts.get(membership.user_id, 0)
        membership.manageable = (roles.can(org.role, "manage_members")
                                 and roles.can_assign(org.role, membership.role))
    return members


@login_required
@require_POST
def invite(request, org):
    org = org_for(request, org, "manage_members")
    form = InviteForm(request.POST, org=org, actor_role=org.role)
    if not form.is_valid():
        return invite_refused(request, org, form, status=400)
    email, role = form.cleaned_data["email"], form.cleaned_data["role"]
    try:
        invitation = invitations.invite(org, request.user, email, role)
    except invitations.UnverifiedInviter as refusal:
        return invite_refused(request, org, form, str(refusal), status=403)
    except ratelimits.RateLimited as refusal:
        response = invite_refused(request, org, form, refusal.message, status=429)
        response["Retry-After"] = str(refusal.retry_after)
        return response
    except invitations.MailNotSent:
        return invite_refused(request, org, form, "The invitation email could not be sent (the mail server refused "
                                                  "it or did not answer), so nothing was saved. Try again later.",
                              status=502)
    record("member.invited", org=org, target=invitation.email, request=request, role=invitation.role)
    # The same words whether or not the recipient limit held the email back (see orgs/invitations.py).
    messages.success(request, f"Invitation sent to {invitation.email}.")
    return redirect("orgs:settings", org.slug)


def invite_refused(request, org, form, error: str = "", status: int = 400):
    """The settings page again, with what was typed and why it was not sent."""
    if error:
        form.add_error(None, error)
    context = _members_context(request, org, invite_form=form, settings_form=OrganizationSettingsForm(instance=org))
    return render(request, "orgs/settings.html", context, status=status)


@login_required
@require_POST
def revoke_invitation(request, org, pk):
    org = org_for(request, org, "manage_members")
    invitation = get_object_or_404(Invitation, organization=org, pk=pk, accepted_at=None)
    invitation.delete()
    record("member.invitation_revoked", org=org, target=invitation.email, request=request, role=invitation.role)
    messages.info(request, "Invitation revoked.")
    return redirect("orgs:settings", org.slug)


def accept_invitation(request, token):
    invitation = get_object_or_404(Invitation.objects.select_related("organization"), token=token)
    if not invitation.is_pending:
        return render(request, "orgs/invitation_invalid.html", {"invitation": invitation}, status=400)
    if not request.user.is_authenticated:
        return render(request, "orgs/invitation.html", {"invitation": invitation})
    if request.user.email.lower() != invitation.email.lower():
        return render(request, "orgs/invitation.html", {"invitation": invitation, "wrong_user": True}, status=403)
    if request.method == "POST":
        _accept(invitation, request.user)
        record("member.joined", org=invitation.organization, target=request.user.email, request=request,
               role=invitation.role)
        messages.success(request, f"You joined {invitation.organization.name}.")
        return redirect("sites:list", invitation.organization.slug)
    return render(request, "orgs/invitation.html", {"invitation": invitation})


@transaction.atomic
def _accept(invitation, user) -> None:
    Membership.objects.get_or_create(organization=invitation.organization, user=user,
                                     defaults={"role": invitation.role})
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    # Following the emailed link proves the address.
    if not user.email_verified:
        user.email_verified = True
        user.save(update_fields=["email_verified"])
    remember_org(user, invitation.organization)


@login_required
@require_POST
def change_role(request, org, pk):
    org = org_for(request, org, "manage_members")
    membership = get_object_or_404(Membership, organization=org, pk=pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of owner, admin, member or viewer.")
        return redirect("orgs:settings", org.slug)
    new_role = form.cleaned_data["role"]
    if not (roles.can_assign(org.role, new_role) and roles.can_assign(org.role, membership.role)):
        raise PermissionDenied(f"As {org.role} you cannot change a {membership.role} to {new_role}.")
    if membership.role == roles.OWNER and new_role != roles.OWNER and _is_last_owner(org, membership):
        messages.error(request, "An organization needs at least one owner: make someone else owner first.")
        return redirect("orgs:settings", org.slug)
    old_role, membership.role = membership.role, new_role
    membership.save(update_fields=["role"])
    record("member.role_changed", org=org, target=membership.user.email, request=request,
           old_role=old_role, new_role=new_role)
    messages.success(request, f"{membership.user.email} is now {new_role}.")
    return redirect("orgs:settings", org.slug)


@login_required
@require_POST
def remove_member(request, org, pk):
    org = org_for(request, org, "view")
    membership = get_object_or_404(Membership, organization=org, pk=pk)
    leaving = membership.user_id == request.user.pk
    if not leaving and not (roles.can(org.role, "manage_members") and roles.can_assign(org.role, membership.role)):
        raise PermissionDenied("You cannot remove this member.")
    if membership.role == roles.OWNER and _is_last_owner(org, membership):
        messages.error(request, "The last owner cannot leave: make someone else owner first.")
        return redirect("orgs:settings", org.slug)
    # Their API keys go with them unless someone who manages keys keeps them on purpose.
    keep_keys = request.POST.get("keep_keys") == "1" and not leaving and roles.can(org.role, "manage_org")
    with transaction.atomic():
        membership.delete()
        revoked = [] if keep_keys else api_services.revoke_keys_of(membership.user, org)
    kept = api_services.live_keys_of(membership.user, org).count()
    record("member.removed", org=org, target=membership.user.email, request=request, role=membership.role,
           left=leaving, api_keys_revoked=[key.display_prefix for key in revoked], api_keys_kept=kept)
    keys_said = keys_words(revoked, kept)
    if leaving:
        messages.info(request, f"You left {org.name}.{keys_said}")
        return redirect("home")
    messages.info(request, f"{membership.user.email} was removed.{keys_said}")
    return redirect("orgs:settings", org.slug)


def keys_words(revoked: list, kept: int) -> str:
    """What became of the API keys a removed member created, for the message."""
    if revoked:
        return f" {keys_count(len(revoked))} they created {'was' if len(revoked) == 1 else 'were'} revoked."
    if kept:
        return (f" {keys_count(kept)} they created {'still works' if kept == 1 else 'still work'}: revoke {'it' if kept == 1 else 'them'} on the API "
                "keys page when no longer needed.")
    return ""


def keys_count(count: int) -> str:
    return f"The {count} API key{'' if count == 1 else 's'}"


def _is_last_owner(org: Organization, membership: Membership) -> bool:
    return not org.memberships.filter(role=roles.OWNER).exclude(pk=membership.pk).exists()
