"""The organization and role a request acts for, resolved once per request."""

from rest_framework import exceptions

from tlsaudit.api.auth import role_of_key
from tlsaudit.api.models import ApiKey
from tlsaudit.orgs.models import Membership


def resolve(request):
    """Sets `request.org` (with `.role`) for a key or a session, or raises."""
    if getattr(request, "_api_org", None) is not None:
        return request._api_org
    if isinstance(request.auth, ApiKey):
        org, role = request.auth.organization, role_of_key(request.auth)
    else:
        org, role = org_of_session(request)
    org.role = role
    request._api_org = org
    return org


def org_of_session(request):
    memberships = Membership.objects.select_related("organization").filter(user=request.user)
    slug = request.headers.get("X-Organization", "").strip()
    if slug:
        membership = memberships.filter(organization__slug=slug).first()
        if membership is None:
            raise exceptions.NotFound(f"You are not a member of an organization “{slug}”.")
    else:
        membership = (memberships.filter(organization_id=request.user.last_org_id).first()
                      or memberships.order_by("organization__name").first())
        if membership is None:
            raise exceptions.NotFound("You do not belong to any organization yet.")
    return membership.organization, membership.role
