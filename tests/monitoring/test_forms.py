"""The schedule forms: a site's frequency/weekday on its History page, the organization's window
on the portfolio page. Who may change what, and one error message per field."""

import pytest
from django.urls import reverse
from django_celery_beat.models import PeriodicTask

from tests.support.personas import make_user
from tlsaudit.domain import roles
from tlsaudit.monitoring.forms import ScheduleForm, WindowForm
from tlsaudit.monitoring.models import OrgSchedulePolicy, SiteSchedule
from tlsaudit.orgs.models import Membership

pytestmark = pytest.mark.django_db


def schedule_url(site):
    return reverse("monitoring:schedule", args=[site.organization.slug, site.pk])


def window_url(org):
    return reverse("monitoring:window", args=[org.slug])


@pytest.fixture
def dave(org_a):
    """A member of agency A: may change site schedules, not the organization's window."""
    user = make_user("dave@agency-a.test", full_name="Dave Member")
    Membership.objects.create(organization=org_a, user=user, role=roles.MEMBER)
    return user


# -- the site schedule ----------------------------------------------------------------------

def test_the_history_page_shows_the_schedule_form_to_editors_only(login, alice, bob, site_a):
    url = reverse("monitoring:history", args=[site_a.organization.slug, site_a.pk])
    page = login(alice).get(url).content.decode()
    assert 'data-testid="schedule-card"' in page and 'data-testid="schedule-form"' in page
    assert f'action="{schedule_url(site_a)}"' in page
    page = login(bob).get(url).content.decode()
    assert 'data-testid="schedule-card"' in page and 'data-testid="schedule-form"' not in page


def test_the_owner_makes_a_site_weekly_and_the_beat_entry_follows(login, alice, site_a):
    response = login(alice).post(schedule_url(site_a), {"frequency": "weekly", "weekday": "3"})
    assert response.status_code == 302
    assert response["Location"] == reverse("monitoring:history", args=[site_a.organization.slug, site_a.pk])
    schedule = SiteSchedule.objects.get(site=site_a)
    assert (schedule.frequency, schedule.weekday) == ("weekly", 3)
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert task.enabled and task.crontab.day_of_week == "3"


def test_a_member_turns_the_schedule_off_and_back_to_nightly(login, dave, site_a):
    client = login(dave)
    assert client.post(schedule_url(site_a), {"frequency": "off"}).status_code == 302
    schedule = SiteSchedule.objects.get(site=site_a)
    assert schedule.frequency == "off" and schedule.periodic_task_id is None
    assert not PeriodicTask.objects.filter(args=f"[{site_a.pk}]").exists()
    assert client.post(schedule_url(site_a), {"frequency": "nightly"}).status_code == 302
    schedule.refresh_from_db()
    assert schedule.frequency == "nightly"
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).crontab.day_of_week == "*"


def test_a_viewer_gets_403_and_an_outsider_404(login, bob, charlie, site_a):
    before = SiteSchedule.objects.get(site=site_a).frequency
    assert login(bob).post(schedule_url(site_a), {"frequency": "off"}).status_code == 403
    assert login(charlie).post(schedule_url(site_a), {"frequency": "off"}).status_code == 404
    assert SiteSchedule.objects.get(site=site_a).frequency == before


def test_the_schedule_url_refuses_get(login, alice, site_a):
    assert login(alice).get(schedule_url(site_a)).status_code == 405


@pytest.mark.parametrize("data, field, message", [
    ({"frequency": "hourly"}, "frequency", "Choose nightly, weekly or off."),
    ({}, "frequency", "Choose nightly, weekly or off."),
    ({"frequency": "weekly", "weekday": "7"}, "weekday", "The weekday must be 0 (Sunday) to 6 (Saturday)."),
    ({"frequency": "weekly", "weekday": "-1"}, "weekday", "The weekday must be 0 (Sunday) to 6 (Saturday)."),
    ({"frequency": "weekly"}, "weekday", "Choose the weekday of the weekly audit."),
    ({"frequency": "weekly", "weekday": ""}, "weekday", "Choose the weekday of the weekly audit."),
])
def test_each_schedule_error_is_shown_and_nothing_is_saved(login, alice, site_a, data, field, message):
    before = SiteSchedule.objects.get(site=site_a)
    response = login(alice).post(schedule_url(site_a), data)
    assert response.status_code == 400
    assert response.context["schedule_form"].errors[field] == [message]
    assert f'data-testid="error-{field}">{message}' in response.content.decode().replace("&#x27;", "'")
    after = SiteSchedule.objects.get(site=site_a)
    assert (after.frequency, after.weekday) == (before.frequency, before.weekday)


def test_the_schedule_form_alone():
    assert ScheduleForm({"frequency": "weekly", "weekday": "0"}).is_valid()
    assert ScheduleForm({"frequency": "nightly"}).is_valid()  # the weekday matters for weekly only
    assert ScheduleForm({"frequency": "off", "weekday": ""}).is_valid()


# -- the organization's window --------------------------------------------------------------

def test_the_owner_moves_the_window_and_schedules_outside_it_move(login, alice, org_a, site_a):
    schedule = SiteSchedule.objects.get(site=site_a)
    schedule.hour = 12
    schedule.save()
    response = login(alice).post(window_url(org_a), {"start": "22", "end": "3"})
    assert response.status_code == 302 and response["Location"] == reverse("monitoring:portfolio", args=[org_a.slug])
    policy = OrgSchedulePolicy.objects.get(organization=org_a)
    assert (policy.window_start_hour, policy.window_end_hour) == (22, 3)
    schedule.refresh_from_db()
    assert schedule.hour in (22, 23, 0, 1, 2)
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).crontab.hour == str(schedule.hour)


def test_the_portfolio_shows_the_window_form_to_owners_and_admins(login, alice, bob, dave, org_a):
    url = reverse("monitoring:portfolio", args=[org_a.slug])
    assert 'data-testid="window-form"' in login(alice).get(url).content.decode()
    for user in (bob, dave):
        page = login(user).get(url).content.decode()
        assert 'data-testid="window"' in page and 'data-testid="window-form"' not in page


def test_members_and_viewers_get_403_outsiders_404_for_the_window(login, bob, dave, charlie, org_a):
    assert login(dave).post(window_url(org_a), {"start": "2", "end": "6"}).status_code == 403
    assert login(bob).post(window_url(org_a), {"start": "2", "end": "6"}).status_code == 403
    assert login(charlie).post(window_url(org_a), {"start": "2", "end": "6"}).status_code == 404
    assert not OrgSchedulePolicy.objects.filter(organization=org_a, window_start_hour=2, window_end_hour=6).exists()


def test_an_admin_may_change_the_window(login, org_a):
    admin = make_user("erin@agency-a.test")
    Membership.objects.create(organization=org_a, user=admin, role=roles.ADMIN)
    assert login(admin).post(window_url(org_a), {"start": "0", "end": "23"}).status_code == 302


@pytest.mark.parametrize("data, field, message", [
    ({"start": "24", "end": "3"}, "start", "The start hour must be 0 to 23."),
    ({"start": "-1", "end": "3"}, "start", "The start hour must be 0 to 23."),
    ({"start": "x", "end": "3"}, "start", "The start hour must be 0 to 23."),
    ({"end": "3"}, "start", "The start hour must be 0 to 23."),
    ({"start": "1", "end": "24"}, "end", "The end hour must be 0 to 23."),
    ({"start": "1", "end": "-5"}, "end", "The end hour must be 0 to 23."),
    ({"start": "1"}, "end", "The end hour must be 0 to 23."),
    ({"start": "4", "end": "4"}, "__all__", "The window must not start and end at the same hour."),
])
def test_each_window_error_is_shown_and_nothing_is_saved(login, alice, org_a, data, field, message):
    response = login(alice).post(window_url(org_a), data)
    assert response.status_code == 400
    assert response.context["window_form"].errors[field] == [message]
    testid = "error-form" if field == "__all__" else f"error-{field}"
    assert f'data-testid="{testid}">{message}' in response.content.decode()
    policy = OrgSchedulePolicy.objects.get(organization=org_a)
    assert (policy.window_start_hour, policy.window_end_hour) == (1, 5)


def test_the_window_form_alone():
    assert WindowForm({"start": "0", "end": "23"}).is_valid()
    assert WindowForm({"start": "23", "end": "0"}).is_valid()  # wraps past midnight
