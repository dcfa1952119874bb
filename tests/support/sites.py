"""Sites made as the product adds them, for tests that need many and no form."""


def added_site(**fields):
    """A site as tlsaudit/sites/services.py adds one: its row, then what a new site gets (its nightly schedule)."""
    from tlsaudit.sites.models import Site
    from tlsaudit.sites.services import site_added

    site = Site.objects.create(**fields)
    site_added(site)
    return site
