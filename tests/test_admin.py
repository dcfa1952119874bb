"""Every model has a usable admin: registered, and its list, search and add pages render."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

OUR_APPS = ("core", "accounts", "orgs", "sites", "audits", "loadtests", "probes", "reports", "monitoring", "alerts")


def our_models():
    return [m for m in apps.get_models() if m._meta.app_label in OUR_APPS]


def test_every_model_of_ours_is_registered():
    missing = [m.__name__ for m in our_models() if m not in admin.site._registry]
    assert missing == []


@pytest.mark.django_db
def test_each_changelist_renders_with_search_and_filters(admin_client, site_a):
    for model in our_models():
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        assert admin_client.get(url, {"q": "example"}).status_code == 200, url
        assert admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add")).status_code in (200, 403)
    change = reverse("admin:sites_site_change", args=[site_a.pk])
    assert "shop.example.com" in admin_client.get(change).content.decode()
