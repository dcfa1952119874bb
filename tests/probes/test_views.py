"""The Browser tab without a worker: who may do what, the refusals and their messages, the live
progress partial. The end-to-end probes by a real worker are in test_probe_task.py."""

import pytest
from django.urls import reverse

from tests.support.sites import added_site
from tlsaudit.probes import services
from tlsaudit.probes.models import Probe

pytestmark = pytest.mark.django_db


def urls_of(org, site, probe):
    args = [org.slug, site.pk]
    return {
        "overview": ("get", reverse("probes:overview", args=args)),
        "start": ("post", reverse("probes:start", args=args)),
        "detail": ("get", reverse("probes:detail", args=[*args, probe.pk])),
        "csv": ("get", reverse("probes:csv", args=[*args, probe.pk, "loads"])),
    }


def running_probe(site, **fields):
    return Probe.objects.create(site=site, organization=site.organization, status="running",
                                params={"path": "/", "runs": 2, "variants": ["https", "http"]},
                                loads_total=8, **fields)


def test_viewers_see_the_tab_but_get_403_on_run(login, bob, org_a, site_a):
    probe = running_probe(site_a, loads_done=3)
    client = login(bob)
    for name, (method, url) in urls_of(org_a, site_a, probe).items():
        response = getattr(client, method)(url, {"runs": 1})
        expected = {"start": 403, "csv": 404}.get(name, 200)   # a running probe has no table yet
        assert response.status_code == expected, (name, response.status_code)
    page = client.get(reverse("probes:overview", args=[org_a.slug, site_a.pk])).content.decode()
    assert 'data-testid="probe-form"' not in page and 'data-testid="probe-running"' in page
    assert Probe.objects.filter(site=site_a).count() == 1


def test_other_organizations_get_404_on_every_url(login, charlie, org_a, org_b, site_a):
    probe = running_probe(site_a)
    client = login(charlie)
    for name, (method, url) in urls_of(org_a, site_a, probe).items():
        response = getattr(client, method)(url, {"runs": 1})
        assert response.status_code == 404, (name, response.status_code)
    assert Probe.objects.count() == 1


def test_a_probe_of_another_site_is_not_found_through_this_one(login, alice, org_a, site_a):

    other = added_site(organization=org_a, hostname="other.example.com")
    probe = running_probe(other)
    assert login(alice).get(reverse("probes:detail", args=[org_a.slug, site_a.pk, probe.pk])).status_code == 404


def test_every_site_tab_links_the_browser_tab(login, alice, org_a, site_a):
    client = login(alice)
    browser_url = reverse("probes:overview", args=[org_a.slug, site_a.pk])
    for url in (site_a.get_absolute_url(), reverse("loadtests:overview", args=[org_a.slug, site_a.pk]), browser_url):
        page = client.get(url).content.decode()
        assert 'data-testid="tab-browser"' in page and browser_url in page, url
    page = client.get(browser_url).content.decode()
    assert 'aria-current="page" data-testid="tab-browser"' in page and 'data-testid="no-probes"' in page


def test_a_member_starts_a_probe_and_follows_it(login, alice, org_a, site_a, django_capture_on_commit_callbacks):
    # The unverified site is fine: a few page loads are not a load test.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = login(alice).post(reverse("probes:start", args=[org_a.slug, site_a.pk]),
                                     {"runs": "2", "path": "/shop", "variants": ["http", "https"]})
    probe = Probe.objects.get(site=site_a)
    assert response.status_code == 302 and response["Location"] == probe.get_absolute_url()
    assert (probe.status, probe.params, probe.loads_total) == ("queued", {"path": "/shop", "runs": 2,
                                                                         "seconds": 20, "variants": ["https", "http"]},
                                                                8)
    assert (probe.requested_by, probe.organization, probe.host) == (alice, org_a, "shop.example.com")
    assert len(callbacks) == 1   # sent to the broker only once the row is committed


def test_an_unverified_email_is_refused_with_the_reason(login, alice, org_a, site_a):
    alice.email_verified = False
    alice.save()
    response = login(alice).post(reverse("probes:start", args=[org_a.slug, site_a.pk]), {"runs": 1})
    assert response.status_code == 400
    assert "Verify your email address before running browser probes" in response.content.decode()
    assert not Probe.objects.exists()


def test_one_active_probe_per_site(login, alice, org_a, site_a):
    running_probe(site_a)
    response = login(alice).post(reverse("probes:start", args=[org_a.slug, site_a.pk]), {"runs": 1})
    assert response.status_code == 400
    assert "already queued or running" in response.content.decode()
    assert Probe.objects.filter(site=site_a).count() == 1
    with pytest.raises(services.ProbeRefused) as refusal:
        services.queue_probe(site_a, {}, user=alice)
    assert refusal.value.code == "busy"


def test_another_site_may_probe_while_one_is_running(alice, org_a, site_a, django_capture_on_commit_callbacks):

    running_probe(site_a)
    other = added_site(organization=org_a, hostname="other.example.com")
    with django_capture_on_commit_callbacks(execute=False):
        assert services.queue_probe(other, {"runs": 1}, user=alice).status == "queued"


def test_the_daily_cap_refuses_with_the_organizations_numbers(login, alice, org_a, site_a, settings):
    settings.PROBE_RUNS_PER_DAY = 2
    for _ in range(2):
        Probe.objects.create(site=site_a, organization=org_a, status="done")
    response = login(alice).post(reverse("probes:start", args=[org_a.slug, site_a.pk]), {"runs": 1})
    assert response.status_code == 400
    assert "Agency A already ran 2 browser probes in the last 24 hours: the maximum is 2 per day." in \
        response.content.decode()
    assert Probe.objects.count() == 2


@pytest.mark.parametrize("raw, message", [
    ({"runs": 21}, "Repetitions must be between 1 and 20."),
    ({"runs": 0}, "Repetitions must be between 1 and 20."),
    ({"seconds": 4}, "The time must be between 5 and 120 seconds."),
    ({"seconds": 121}, "The time must be between 5 and 120 seconds."),
    ({"seconds": "long"}, "The time must be a whole number of seconds."),
    ({"runs": "many"}, "Repetitions must be a whole number."),
    ({"path": "no-slash"}, "The path must start with /"),
    ({"variants": ["ftp"]}, "Variants must be https and/or http."),
])
def test_params_are_validated(raw, message):
    with pytest.raises(services.ProbeRefused) as refusal:
        services.validate_params(raw)
    assert refusal.value.code == "invalid_params" and message in refusal.value.message


def test_the_partial_polls_while_running_and_shows_the_progress(login, alice, org_a, site_a):
    probe = running_probe(site_a, loads_done=3, current_step="HTTPS warm, run 1 of 2")
    client = login(alice)
    partial = client.get(probe.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="probe-body" data-testid="probe-running"')
    assert 'hx-trigger="every 2s"' in partial and f'hx-get="{probe.get_absolute_url()}"' in partial
    assert "3 of 8 page loads · HTTPS warm, run 1 of 2" in partial and 'aria-valuenow="38"' in partial
    assert "<html" not in partial
    # The tab polls the same element, so it follows the probe without a reload.
    tab = client.get(reverse("probes:overview", args=[org_a.slug, site_a.pk])).content.decode()
    assert f'hx-get="{probe.get_absolute_url()}" hx-trigger="every 2s"' in tab


def test_a_queued_probe_waits_for_a_worker(login, alice, org_a, site_a):
    probe = Probe.objects.create(site=site_a, organization=org_a, params={"path": "/", "runs": 1}, loads_total=4)
    partial = login(alice).get(probe.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert "Waiting for a browser worker" in partial and "hx-trigger" in partial


def test_a_failed_probe_stops_polling_and_explains(login, alice, org_a, site_a):
    probe = Probe.objects.create(site=site_a, organization=org_a, status="failed", error_code="certificate",
                                 error_message="The certificate of shop.example.com is not trusted.")
    page = login(alice).get(probe.get_absolute_url()).content.decode()
    assert "hx-trigger" not in page and 'data-testid="probe-failed"' in page
    assert "The certificate of shop.example.com is not trusted." in page
    assert "add it to the organization&#x27;s settings (custom CA)" in page


def test_the_reaper_fails_probes_whose_worker_vanished(site_a, org_a):
    from django.utils import timezone

    from tlsaudit.probes.models import Probe
    from tlsaudit.probes.services import reap_abandoned_probes

    hour_ago = timezone.now() - timezone.timedelta(hours=1)
    stuck = Probe.objects.create(site=site_a, organization=org_a, status="running", started_at=hour_ago)
    fresh = Probe.objects.create(site=site_a, organization=org_a, status="running", started_at=timezone.now())
    assert reap_abandoned_probes() == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert (stuck.status, stuck.error_code, fresh.status) == ("failed", "worker_lost", "running")


def test_the_reaper_fails_a_probe_whose_process_died_on_this_host_at_once(site_a, org_a):
    import subprocess
    import sys

    from django.utils import timezone

    from tlsaudit.core import runners
    from tlsaudit.probes.models import Probe
    from tlsaudit.probes.services import reap_abandoned_probes

    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as process:
        runner = f"{runners.pid_space()} {process.pid} {runners.start_time(process.pid)}"
        probe = Probe.objects.create(site=site_a, organization=org_a, status="running", started_at=timezone.now(),
                                     runner=runner)
        assert reap_abandoned_probes() == 0  # alive: a probe may take minutes
        process.kill()
        process.wait()
    assert reap_abandoned_probes() == 1  # SIGKILLed with its worker: failed now, not after the hard time limit
    probe.refresh_from_db()
    assert (probe.status, probe.error_code) == ("failed", "worker_lost")
