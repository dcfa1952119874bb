from django.db.models import F

from tlsaudit.domain import roles
from tlsaudit.orgs.access import orgs_of


def organizations(request):
    """The organization switcher: the user's organizations and the current one."""
    user = getattr(request, "user", None)
    # API keys authenticate as a principal that is not a user row: no switcher for them.
    if user is None or not user.is_authenticated or getattr(user, "pk", None) is None:
        return {}

    resolver = getattr(request, "resolver_match", None)
    slug = resolver.kwargs.get("org") if resolver else None
    # The role rides along (the same join as the membership filter): the menu links only what it may open.
    my_orgs = list(orgs_of(user).annotate(my_role=F("memberships__role")))
    current = next((o for o in my_orgs if o.slug == slug), None)
    if current is None and slug is None:
        current = next((o for o in my_orgs if o.pk == user.last_org_id), None)
    can_manage = current is not None and roles.can(current.my_role, "manage_org")
    return {"my_orgs": my_orgs, "current_org": current, "can_manage_current_org": can_manage}
