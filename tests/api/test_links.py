"""object_url() is reverse() for one-id routes, cached per route and script prefix."""

import pytest
from django.urls import NoReverseMatch, reverse, set_script_prefix

from tlsaudit.api.links import object_url

ROUTES = ["api:site-detail", "api:audit-detail", "api:loadtest-detail", "api:probe-detail", "api:report-detail",
          "api:report-pdf", "api:webhook-detail", "api:webhook-deliveries"]


@pytest.mark.parametrize("name", ROUTES)
@pytest.mark.parametrize("pk", [1, 42, 10**12])
def test_it_gives_what_reverse_gives(name, pk):
    assert object_url(name, pk) == reverse(name, args=[pk])


def test_it_follows_the_script_prefix_of_an_app_served_under_a_path():
    try:
        set_script_prefix("/tlsaudit/")
        assert object_url("api:audit-detail", 7) == reverse("api:audit-detail", args=[7])
        assert object_url("api:audit-detail", 7).startswith("/tlsaudit/api/v1/")
    finally:
        set_script_prefix("/")
    assert object_url("api:audit-detail", 7).startswith("/api/v1/")


def test_a_route_without_an_id_in_its_path_is_refused():
    with pytest.raises(NoReverseMatch):
        object_url("api:portfolio", 1)
