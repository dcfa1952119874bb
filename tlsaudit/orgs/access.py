"""Tenant scoping: every view finds its organization through the user's membership.

Objects of organizations the user does not belong to answer 404, never 403, so ids leak
nothing. A member whose role lacks the permission gets 403 (they can see the object exists).
"""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership, Organization
from tlsaudit.sites.models import Site


def org_for(request, slug: str, action: str = "view"):
    """The organization `slug` with `.role` set for the current user, or 404 / 403."""
    membership = (Membership.objects.select_related("organization")
                  .filter(user=request.user, organization__slug=slug).first())
    if membership is None:
        raise Http404("No such organization.")
    if not roles.can(membership.role, action):
        raise PermissionDenied(f"Your role ({membership.role}) cannot do this.")
    org = membership.organization
    org.role = membership.role
    remember_org(request.user, org)
    return org


def site_for(request, org_slug: str, pk: int, action: str = "view"):
    """The organization `org_slug` (as org_for) and its site `pk`, or 404 / 403."""
    org = org_for(request, org_slug, action)
    site = get_object_or_404(Site, organization=org, pk=pk)
    site.organization = org  # already loaded, with the user's role on it
    return org, site


def remember_org(user, org) -> None:
    if user.last_org_id != org.pk:
        user.last_org = org
        user.save(update_fields=["last_org"])


def orgs_of(user):
    return Organization.objects.filter(memberships__user=user).order_by("name")
