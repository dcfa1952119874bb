"""A new site gets its nightly schedule from the service that adds sites (tlsaudit/sites/services.py),
whichever door it came in by; a row written by the ORM alone gets nothing (no post_save receiver), and a
deleted site takes its beat entry with it (the one receiver left, tests/test_layering.py)."""

import pytest
from django.core.management import call_command
from django.urls import reverse
from django_celery_beat.models import PeriodicTask

from tlsaudit.monitoring.models import SiteSchedule
from tlsaudit.sites.models import Site

pytestmark = pytest.mark.django_db


def beat_entry(site) -> PeriodicTask:
    return PeriodicTask.objects.get(pk=SiteSchedule.objects.get(site=site).periodic_task_id)


def test_a_site_added_on_the_dashboard_gets_its_schedule_and_beat_entry(login, alice, org_a):
    response = login(alice).post(reverse("sites:add", args=[org_a.slug]),
                                 {"address": "shop.example.net", "name": "Shop", "tags_text": "client-a"})
    assert response.status_code == 302, response.content.decode()[:2000]
    site = Site.objects.get(organization=org_a, hostname="shop.example.net")
    assert (site.created_by, [t.name for t in site.tags.all()]) == (alice, ["client-a"])
    assert beat_entry(site).args == f"[{site.pk}]" and site.schedule.frequency == "nightly"


def test_editing_a_site_keeps_its_one_schedule(login, alice, site_a):
    before = SiteSchedule.objects.get(site=site_a)
    response = login(alice).post(reverse("sites:edit", args=[site_a.organization.slug, site_a.pk]),
                                 {"address": site_a.hostname, "name": "Renamed", "tags_text": ""})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert list(SiteSchedule.objects.filter(site=site_a)) == [before]


def test_a_site_added_in_the_admin_gets_its_schedule(admin_client, org_a):
    response = admin_client.post(reverse("admin:sites_site_add"), {
        "organization": org_a.pk, "hostname": "admin-added.example", "service": "https", "https_port": 443, "http_port": 80,
        "name": "From the admin"})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert beat_entry(Site.objects.get(hostname="admin-added.example")).enabled


def test_the_demo_sites_get_their_schedules_once(settings, tmp_path):
    settings.VAR_DIR = tmp_path   # where it leaves the demo password
    call_command("ensure_demo")
    call_command("ensure_demo")
    demo = Site.objects.filter(organization__slug="demo-agency")
    assert demo.count() == 2 and SiteSchedule.objects.filter(site__in=demo).count() == 2


def test_a_row_written_by_the_orm_alone_gets_no_schedule(org_a):
    site = Site.objects.create(organization=org_a, hostname="bare.example")
    assert not SiteSchedule.objects.filter(site=site).exists()


def test_a_deleted_site_takes_its_beat_entry_along(site_a):
    entry = beat_entry(site_a).pk
    site_a.delete()
    assert not PeriodicTask.objects.filter(pk=entry).exists()


def test_a_site_form_saved_directly_gives_its_new_site_a_schedule_too(org_a):
    from tlsaudit.sites.forms import SiteForm

    form = SiteForm({"address": "direct.example", "name": "Direct", "tags_text": ""}, org=org_a, check_dns=False)
    assert form.is_valid(), form.errors
    site = form.save()
    assert SiteSchedule.objects.filter(site=site).count() == 1
