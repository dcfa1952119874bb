"""Nightly slots in the database: new sites and a changed window respect the pool's starts per minute,
and a window too short for the organization's sites says so on the portfolio page."""

from collections import Counter

import pytest
from django.urls import reverse
from django_celery_beat.models import PeriodicTask

from tests.support.sites import added_site
from tlsaudit.monitoring import schedules
from tlsaudit.monitoring.models import OrgSchedulePolicy, SiteSchedule

pytestmark = pytest.mark.django_db


def add_sites(org, n):
    return [added_site(organization=org, hostname=f"n{i}.example.com") for i in range(n)]


def starts(org) -> Counter:
    return Counter(SiteSchedule.objects.filter(site__organization=org).values_list("hour", "minute"))


def test_new_sites_fill_the_window_without_exceeding_the_starts_per_minute(settings, org_a):
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE = 2
    OrgSchedulePolicy.objects.create(organization=org_a, window_start_hour=7, window_end_hour=8)
    sites = add_sites(org_a, 90)  # 120 places: no minute may get a third start
    per_minute = starts(org_a)
    assert max(per_minute.values()) <= 2 and {hour for hour, _ in per_minute} == {7}
    for site in sites[:3]:
        cron = PeriodicTask.objects.get(pk=site.schedule.periodic_task_id).crontab
        assert (cron.hour, cron.minute) == (str(site.schedule.hour), str(site.schedule.minute))


def test_a_site_keeps_its_time_when_others_are_added(settings, org_a):
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE = 1
    first = add_sites(org_a, 5)
    before = {s.pk: (s.schedule.hour, s.schedule.minute) for s in first}
    added_site(organization=org_a, hostname="late.example.com")
    after = {s.site_id: (s.hour, s.minute) for s in SiteSchedule.objects.filter(site__in=first)}
    assert after == before


def test_narrowing_the_window_moves_sites_into_it_within_the_capacity(settings, org_a):
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE = 1
    add_sites(org_a, 50)  # default window 01-05: 240 places
    moved = schedules.update_policy(org_a.schedule_policy, start=3, end=4)
    per_minute = starts(org_a)
    assert max(per_minute.values()) == 1 and {hour for hour, _ in per_minute} == {3}
    assert 0 < moved < 50  # the ones already at 03:xx in a free minute stay


def test_a_window_too_short_is_a_visible_warning_on_the_portfolio(settings, login, alice, org_a):
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE = 1
    OrgSchedulePolicy.objects.create(organization=org_a, window_start_hour=7, window_end_hour=8)
    url = reverse("monitoring:portfolio", args=[org_a.slug])
    add_sites(org_a, 60)
    page = login(alice).get(url).content.decode()
    assert 'data-testid="window-warning"' not in page and "60 scheduled site(s)" in page

    extra = added_site(organization=org_a, hostname="one-too-many.example.com")
    assert extra.schedule.hour == 7 and max(starts(org_a).values()) == 2
    page = login(alice).get(url).content.decode()
    assert 'data-testid="window-warning"' in page
    assert "61 scheduled sites need 2 hour(s) at 1 audit starts per minute, the window has 1." in page


def test_sites_on_one_address_are_spread_so_none_waits_for_another(settings, org_a):
    """#27 item 4: audits of one address run one at a time (about NIGHTLY_AUDIT_SECONDS each), so the plan
    starts at most 60 / 30 = 2 of them a minute, whatever room the pool has."""
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE, settings.NIGHTLY_AUDIT_SECONDS = 20, 30
    OrgSchedulePolicy.objects.create(organization=org_a, window_start_hour=7, window_end_hour=8)
    shared = [added_site(organization=org_a, hostname=f"s{i}.shared.test", pinned_ip="203.0.113.5")
              for i in range(100)]
    own = add_sites(org_a, 100)

    on_shared = Counter((s.schedule.hour, s.schedule.minute) for s in shared)
    assert max(on_shared.values()) <= 2 and len(on_shared) >= 50
    assert max(starts(org_a).values()) <= 20
    assert all(s.schedule.hour == 7 for s in own)


def test_narrowing_the_window_keeps_an_address_within_what_it_takes(settings, org_a):
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE, settings.NIGHTLY_AUDIT_SECONDS = 20, 60
    for i in range(30):
        added_site(organization=org_a, hostname=f"s{i}.shared.test", pinned_ip="203.0.113.5")

    schedules.update_policy(org_a.schedule_policy, start=3, end=4)

    per_minute = starts(org_a)
    assert max(per_minute.values()) == 1 and len(per_minute) == 30 and {hour for hour, _ in per_minute} == {3}


def test_an_address_whose_sites_do_not_fit_the_window_is_named_on_the_portfolio(settings, login, alice, org_a):
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE, settings.NIGHTLY_AUDIT_SECONDS = 100, 30
    OrgSchedulePolicy.objects.create(organization=org_a, window_start_hour=7, window_end_hour=8)
    url = reverse("monitoring:portfolio", args=[org_a.slug])
    for i in range(120):      # 120 audits of 30 s, one at a time: exactly the hour
        added_site(organization=org_a, hostname=f"s{i}.shared.test", pinned_ip="203.0.113.5")
    page = login(alice).get(url).content.decode()
    assert 'data-testid="crowded-addresses"' not in page and 'data-testid="window-warning"' not in page

    added_site(organization=org_a, hostname="one-more.shared.test", pinned_ip="203.0.113.5")

    page = login(alice).get(url).content.decode()
    assert 'data-testid="window-warning"' not in page       # the pool has room: the address has not
    assert ("121 scheduled sites share 203.0.113.5: audited one at a time (about 30 s each, to stay polite to "
            "that address), they need 61 min and the window has 60 min.") in page
