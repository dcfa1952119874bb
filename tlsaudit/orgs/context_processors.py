def organizations(request):
    """The organization switcher: the user's organizations and the current one."""
    user = getattr(request, "user", None)
    # API keys authenticate as a principal that is not a user row: no switcher for them.
    if user is None or not user.is_authenticated or getattr(user, "pk", None) is None:
        return {}
    from tlsaudit.orgs.access import orgs_of

    resolver = getattr(request, "resolver_match", None)
    slug = resolver.kwargs.get("org") if resolver else None
    my_orgs = list(orgs_of(user))
    current = next((o for o in my_orgs if o.slug == slug), None)
    if current is None and slug is None:
        current = next((o for o in my_orgs if o.pk == user.last_org_id), None)
    return {"my_orgs": my_orgs, "current_org": current}
