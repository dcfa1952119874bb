"""Adding and changing sites: the one place a new site gets what every site has, its nightly schedule
(saleor's rule: business logic in services, not in a `post_save` receiver a reader cannot see)."""

from django.db import transaction

from tlsaudit.monitoring.schedules import ensure_schedule
from tlsaudit.sites.models import Site


def save_from_form(form, **fields) -> Site:
    """The site of a valid SiteForm saved, with its tags and `fields` (e.g. created_by); a new one also gets
    its schedule. The dashboard's form, the CSV/paste import and the API all save through here."""
    with transaction.atomic():
        site = form.save(commit=False)
        for name, value in fields.items():
            setattr(site, name, value)
        new = site._state.adding
        site.save()
        form.save_tags(site)
        if new:
            site_added(site)
    return site


def site_added(site: Site) -> None:
    """What a new site gets beside its row: its nightly schedule, at its place in the organization's window.
    For sites made without a form (the demo, the admin)."""
    ensure_schedule(site)
