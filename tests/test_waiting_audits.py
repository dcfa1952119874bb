"""#37 item 4: "Audit all" past the organization's hourly limit. The limit is shown before the click, the
rest wait in line instead of being refused, and start as the hour frees up (or with their nightly audit).

Personas: alice owns Agency A, bob is its viewer, charlie owns Agency B."""

import html
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support.api import client_with, make_key
from tests.support.sites import added_site
from tlsaudit.api import keys
from tlsaudit.audits import sweep, waiting
from tlsaudit.audits.models import Audit, WaitingAudit
from tlsaudit.audits.services import queue_audit, queue_audits
from tlsaudit.monitoring import schedules
from workers.celery import app
from workers.tasks.schedule import start_waiting_audits

pytestmark = pytest.mark.django_db


def sites_of(org, user, count, prefix="s"):
    return [added_site(organization=org, hostname=f"{prefix}{n}.agency.test", created_by=user)
            for n in range(count)]


def age(audits, minutes: float) -> None:
    """Move on-demand audits back in time, as if started `minutes` ago."""
    Audit.objects.filter(pk__in=[a.pk for a in audits]).update(created_at=timezone.now() - timedelta(minutes=minutes))


def page_text(client, org) -> str:
    return html.unescape(client.get(reverse("sites:list", args=[org.slug])).content.decode())


@pytest.fixture
def limit_of_3(settings):
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 3


def test_past_the_limit_the_rest_wait_in_line_and_nothing_is_refused(alice, org_a, limit_of_3):
    sites = sites_of(org_a, alice, 7)
    outcome = queue_audits(sites, user=alice)
    assert (outcome.queued, outcome.waiting, outcome.refused, outcome.reasons) == (3, 4, 0, [])
    assert set(WaitingAudit.objects.values_list("site_id", flat=True)) == {s.pk for s in sites[3:]}
    assert all(w.requested_by == alice and w.trigger == "manual" for w in WaitingAudit.objects.all())
    budget = waiting.budget(org_a.pk)
    assert (budget.left, budget.waiting, budget.hours_to_clear) == (0, 4, 2)
    assert 3590 <= budget.seconds_to_next_free() <= 3601
    assert budget.explained() == (
        "Your organization starts at most 3 audits an hour on demand (nightly audits do not count): none left this "
        "hour, the next in 1 hour. 4 audits wait for a free slot: they start as the hour frees up (3 an hour, the "
        "last in about 2 hours), or with their sites' nightly audits where those come first.")


def test_the_sweep_starts_waiting_audits_oldest_first_as_the_hour_frees_up(alice, org_a, limit_of_3):
    sites = sites_of(org_a, alice, 7)
    queue_audits(sites, user=alice)
    assert sweep.start_waiting() == 0, "nothing has left the hour yet"
    age(Audit.objects.all(), 61)
    assert sweep.start_waiting() == 3
    started = Audit.objects.filter(site__in=sites[3:6])
    assert started.count() == 3 and all(a.trigger == "manual" and a.requested_by == alice for a in started)
    assert list(WaitingAudit.objects.values_list("site_id", flat=True)) == [sites[6].pk]
    assert sweep.start_waiting() == 0, "the three just started fill the hour again"


def test_a_sites_own_audit_takes_it_out_of_line(alice, org_a, limit_of_3):
    """Its nightly audit (never limited) or a later click is the audit it waited for: not a second one."""
    sites = sites_of(org_a, alice, 5)
    queue_audits(sites, user=alice)
    schedules.run_scheduled(sites[3].pk)
    assert Audit.objects.get(site=sites[3]).trigger == "schedule"
    assert list(WaitingAudit.objects.values_list("site_id", flat=True)) == [sites[4].pk]
    age(Audit.objects.all(), 61)
    assert sweep.start_waiting() == 1
    assert Audit.objects.filter(site=sites[3]).count() == 1


def test_a_site_already_queued_does_not_wait_twice(alice, org_a, limit_of_3):
    sites = sites_of(org_a, alice, 4)
    queue_audits(sites[:3], user=alice)
    again = queue_audits(sites, user=alice)
    assert (again.queued, again.already, again.waiting) == (0, 3, 1)
    assert queue_audits(sites, user=alice).already == 4
    assert WaitingAudit.objects.count() == 1


def test_a_target_over_its_own_limit_stays_in_line_and_the_others_go_on(alice, org_a, limit_of_3, settings):
    sites = sites_of(org_a, alice, 5)
    queue_audits(sites, user=alice)
    settings.AUDIT_LIMIT_PER_TARGET = 1
    busy = sites[3]
    Audit.objects.create(site=busy, organization=org_a, host=busy.hostname, port=443, trigger="api", status="done")
    age(Audit.objects.exclude(site=busy), 61)
    assert sweep.start_waiting() == 1
    assert list(WaitingAudit.objects.values_list("site_id", flat=True)) == [busy.pk]


def test_the_site_list_says_the_limit_before_the_click_and_marks_waiting_rows(login, alice, org_a, limit_of_3):
    sites = sites_of(org_a, alice, 5)
    client = login(alice)
    assert "3 left this hour. Beyond that, audits wait in line" in page_text(client, org_a)
    queue_audits(sites, user=alice)
    page = page_text(client, org_a)
    assert "none left this hour, the next in 1 hour. 2 audits wait for a free slot" in page
    assert page.count('data-testid="audit-waiting"') == 2 and page.count('data-testid="audit-active"') == 3
    assert 'data-testid="cancel-waiting"' in page and "data-confirm=" in page


def test_cancel_takes_the_line_away_and_only_for_roles_that_run_audits(login, alice, bob, charlie, org_a, org_b,
                                                                        limit_of_3):
    queue_audits(sites_of(org_a, alice, 5), user=alice)
    url = reverse("sites:audit_cancel_waiting", args=[org_a.slug])
    assert login(bob).post(url).status_code == 403
    assert login(charlie).post(url).status_code == 404
    assert WaitingAudit.objects.count() == 2
    page = html.unescape(login(alice).post(url, follow=True).content.decode())
    assert "2 waiting audits cancelled; audits already queued or running go on." in page
    assert not WaitingAudit.objects.exists() and Audit.objects.count() == 3


def test_the_api_shows_the_limits_and_bulk_puts_the_rest_in_line(org_a, org_b, alice, charlie, limit_of_3):
    mine, theirs = sites_of(org_a, alice, 5), sites_of(org_b, charlie, 1, prefix="b")
    api = client_with(make_key(org_a, keys.READ_WRITE)[1])
    limits = api.get("/api/v1/organization/").json()["audit_limits"]
    assert (limits["per_hour"], limits["left_this_hour"], limits["waiting"], limits["next_free_at"]) == (3, 3, 0, None)
    answer = api.post("/api/v1/audits/bulk/", {"sites": [s.pk for s in mine] + [theirs[0].pk]}, format="json")
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert (body["queued"], body["waiting"], body["refused"]) == (3, 2, 0)
    assert body["audit_limits"]["waiting"] == 2 and body["audit_limits"]["left_this_hour"] == 0
    assert "2 audits wait for a free slot" in body["audit_limits"]["explained"]
    assert not Audit.objects.filter(site=theirs[0]).exists() and not WaitingAudit.objects.filter(site=theirs[0])
    assert set(Audit.objects.values_list("trigger", flat=True)) == {"api"}
    assert all(w.trigger == "api" for w in WaitingAudit.objects.all())


def test_the_bulk_api_refuses_a_read_only_key_a_viewer_and_a_vague_body(org_a, alice, bob, limit_of_3):
    sites_of(org_a, alice, 2)
    viewer = APIClient()
    viewer.force_authenticate(bob)
    assert viewer.post("/api/v1/audits/bulk/", {"all": True}, format="json").status_code == 403
    read_only = client_with(make_key(org_a, keys.READ_ONLY)[1])
    refused = read_only.post("/api/v1/audits/bulk/", {"all": True}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "read_only_key"
    api = client_with(make_key(org_a, keys.READ_WRITE)[1])
    for body in ({}, {"all": True, "sites": [1]}, {"all": False}, {"sites": []}):
        answer = api.post("/api/v1/audits/bulk/", body, format="json")
        assert answer.status_code == 422, (body, answer.content)
    assert not Audit.objects.exists() and not WaitingAudit.objects.exists()
    assert api.post("/api/v1/audits/bulk/", {"all": True}, format="json").json()["queued"] == 2


def test_the_sweep_runs_on_beat():
    entry = app.conf.beat_schedule["start-waiting-audits"]
    assert entry["task"] == "workers.tasks.schedule.start_waiting_audits" and entry["schedule"] == 60.0
    assert start_waiting_audits.name == entry["task"] and app.tasks[entry["task"]].name == entry["task"]


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_start_each_waiting_audit_once(alice, org_a, settings):
    """Two beats (or a beat and a retried task) sweep together: row locks (skip_locked) and the
    organization's lock in queue_audit keep it to one audit per waiting site, and the hour's limit."""
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 4
    sites = sites_of(org_a, alice, 12)
    queue_audits(sites, user=alice)
    age(Audit.objects.all(), 61)
    barrier, counts = threading.Barrier(2), []

    def run_sweep():
        try:
            barrier.wait()
            counts.append(sweep.start_waiting())
        finally:
            connection.close()

    threads = [threading.Thread(target=run_sweep) for _ in range(2)]
    [t.start() for t in threads]
    [t.join(30) for t in threads]
    assert sum(counts) == 4
    assert Audit.objects.filter(created_at__gt=timezone.now() - timedelta(minutes=5)).count() == 4
    assert WaitingAudit.objects.count() == 4
    assert not Audit.objects.values("site_id").exclude(site_id__in=[s.pk for s in sites]).exists()
    per_site = Audit.objects.values_list("site_id", flat=True)
    assert len(per_site) == len(set(per_site))


def test_queue_audit_for_a_waiting_site_clears_its_place(alice, org_a, limit_of_3):
    sites = sites_of(org_a, alice, 4)
    queue_audits(sites, user=alice)
    Audit.objects.all().delete()
    queue_audit(sites[3], user=alice)
    assert not WaitingAudit.objects.exists()


def test_sites_held_back_by_their_targets_limit_do_not_hold_up_the_line(alice, org_a, limit_of_3, settings):
    """The head of the line waits on a target audited by others (the per-target limit counts every
    organization): the sites behind it start in the meantime."""
    settings.AUDIT_LIMIT_PER_TARGET = 1
    sites = sites_of(org_a, alice, 8)
    queue_audits(sites, user=alice)
    blocked = sites[3:5]
    for site in blocked:
        Audit.objects.create(site=site, organization=org_a, host=site.hostname, port=443, trigger="api",
                             status="done", created_at=timezone.now() - timedelta(minutes=70))
    Audit.objects.filter(site__in=blocked).update(created_at=timezone.now() - timedelta(minutes=1))
    age(Audit.objects.exclude(site__in=blocked), 61)
    # two slots are taken by the blocked targets' own audits this hour: one left, and it goes to sites[5]
    assert sweep.start_waiting() == 1
    assert Audit.objects.filter(site=sites[5], status="queued").exists()
    assert set(WaitingAudit.objects.values_list("site_id", flat=True)) == {s.pk for s in (*blocked, *sites[6:])}
