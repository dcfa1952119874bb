"""What stops a run before any traffic: verification, the organization's caps, one run per site,
roles (viewers 403) and tenant isolation (other organizations 404 on every URL)."""

import pytest
from django.urls import reverse

from tests.support.loadtests import verify
from tests.support.sites import added_site
from tlsaudit.loadtests import checks, services
from tlsaudit.loadtests.models import LoadLimits, PerfRun

pytestmark = pytest.mark.django_db


def refusal(site, kind, params, user=None) -> checks.RunRefused:
    with pytest.raises(checks.RunRefused) as refused:
        services.queue_run(site, kind, params, user=user)
    return refused.value


def test_an_unverified_site_is_refused_in_the_service(site_a, alice):
    refused = refusal(site_a, "load", {"requests": 20, "concurrency": 2}, alice)
    assert refused.code == "unverified"
    assert "Shop is not verified" in refused.message and "Check now" in refused.message
    assert PerfRun.objects.count() == 0


def test_an_unverified_site_is_refused_in_the_view_with_the_message(login, alice, org_a, site_a):
    response = login(alice).post(reverse("loadtests:start", args=[org_a.slug, site_a.pk]),
                                 {"kind": "sweep", "levels": "1,2", "requests": 20})
    page = response.content.decode()
    assert response.status_code == 400
    assert 'data-testid="run-refused"' in page and "Shop is not verified" in page
    assert PerfRun.objects.count() == 0


@pytest.mark.parametrize("kind, params, code, message", [
    ("load", {"requests": 100, "concurrency": 11}, "cap_concurrency",
     "Concurrency 11 is above Agency A's maximum concurrency of 10 connections."),
    ("sweep", {"levels": "1,20", "requests": 100}, "cap_concurrency",
     "Concurrency 20 is above Agency A's maximum concurrency of 10 connections."),
    ("handshakes", {"agents_levels": "10,25"}, "cap_concurrency",
     "Concurrency 25 is above Agency A's maximum concurrency of 10 connections."),
    ("load", {"requests": 301, "concurrency": 2}, "cap_requests",
     "301 requests per run is above Agency A's maximum of 300 requests per run."),
    ("handshakes", {"agents_levels": "10", "per_agent": 31}, "cap_requests",
     "310 handshakes per cell is above Agency A's maximum of 300 requests per run."),
])
def test_caps_refuse_with_the_cap_and_the_orgs_value(site_a, org_a, kind, params, code, message):
    verify(site_a)
    LoadLimits.objects.create(organization=org_a, max_concurrency=10, max_requests_per_run=300, max_duration_s=30,
                              runs_per_day=5)
    refused = refusal(site_a, kind, params)
    assert (refused.code, refused.message) == (code, message)


def test_runs_per_day_are_capped(site_a, org_a):
    verify(site_a)
    LoadLimits.objects.create(organization=org_a, max_concurrency=10, max_requests_per_run=300, max_duration_s=30,
                              runs_per_day=2)
    for _ in range(2):
        PerfRun.objects.create(site=site_a, organization=org_a, kind="load", status="done")
    refused = refusal(site_a, "load", {"requests": 20, "concurrency": 2})
    assert refused.code == "cap_runs_per_day"
    assert refused.message == ("Agency A already started 2 runs in the last 24 hours: the maximum is 2 runs per day.")


def test_limits_are_created_from_the_settings_defaults(org_a, settings):
    limits = LoadLimits.for_org(org_a)
    assert (limits.max_concurrency, limits.max_requests_per_run, limits.max_duration_s, limits.runs_per_day) == (
        settings.LOAD_MAX_CONCURRENCY, settings.LOAD_MAX_REQUESTS_PER_RUN, settings.LOAD_MAX_DURATION_S,
        settings.LOAD_RUNS_PER_DAY) == (100, 5000, 120, 20)


def test_one_run_per_site_at_a_time(site_a, org_a, django_capture_on_commit_callbacks):
    verify(site_a)
    with django_capture_on_commit_callbacks(execute=False):
        first = services.queue_run(site_a, "load", {"requests": 20, "concurrency": 2})
    refused = refusal(site_a, "handshakes", {"agents_levels": "2", "per_agent": 5})
    assert first.status == "queued" and refused.code == "busy"
    assert "already queued or running" in refused.message


@pytest.mark.parametrize("kind, params, message", [
    ("load", {"requests": 5, "concurrency": 10}, "concurrency cannot exceed the number of requests"),
    ("load", {"scheme": "gopher"}, "scheme must be http or https"),
    ("sweep", {"levels": "0,5"}, "levels must list positive whole numbers"),
    ("sweep", {"modes": ["warp"]}, "modes must be new and/or keepalive"),
    ("handshakes", {"versions": ["1.0"]}, "versions must be 1.2 and/or 1.3"),
    ("load", {"path": "no-slash"}, "path must start with /"),
])
def test_params_are_validated(kind, params, message):
    with pytest.raises(checks.RunRefused) as refused:
        checks.validate_params(kind, params)
    assert refused.value.code == "invalid_params" and message in refused.value.message


def test_stopping_a_queued_run_cancels_it_at_once(site_a, org_a):
    run = PerfRun.objects.create(site=site_a, organization=org_a, kind="load", params={})
    run = services.request_stop(run)
    assert (run.status, run.cancel_requested, run.error_message) == ("cancelled", True, "Stopped before it started.")


# --- roles and tenants -------------------------------------------------------------------

def urls_of(org, site, run):
    args = [org.slug, site.pk]
    return {
        "overview": ("get", reverse("loadtests:overview", args=args)),
        "verification": ("get", reverse("loadtests:verification", args=args)),
        "check": ("post", reverse("loadtests:verification_check", args=args)),
        "start": ("post", reverse("loadtests:start", args=args)),
        "run": ("get", reverse("loadtests:run", args=[*args, run.pk])),
        "stop": ("post", reverse("loadtests:stop", args=[*args, run.pk])),
        "csv": ("get", reverse("loadtests:csv", args=[*args, run.pk, "handshakes"])),
    }


WRITES = {"check", "start", "stop"}


CELL = {"version": "1.3", "suite": "TLS_AES_128_GCM_SHA256", "mode": "full", "agents": 2, "count": 10,
        "mean_ms": 1.5, "sd_ms": 0.2, "failures": {}}


def test_viewers_see_everything_but_cannot_start_stop_or_check(login, bob, org_a, site_a):
    run = PerfRun.objects.create(site=site_a, organization=org_a, kind="handshakes", status="running",
                                 results=[{"step": 0, "label": "cell", "result": CELL}])
    client = login(bob)
    for name, (method, url) in urls_of(org_a, site_a, run).items():
        response = getattr(client, method)(url, {"kind": "load"} if method == "post" else {})
        expected = 403 if name in WRITES else 200
        assert response.status_code == expected, (name, response.status_code)
    assert PerfRun.objects.get(pk=run.pk).cancel_requested is False
    page = client.get(reverse("loadtests:overview", args=[org_a.slug, site_a.pk])).content.decode()
    assert 'data-testid="run-forms"' not in page
    assert 'data-testid="stop"' not in client.get(run.get_absolute_url()).content.decode()


def test_other_organizations_get_404_on_every_url(login, charlie, org_a, org_b, site_a):
    run = PerfRun.objects.create(site=site_a, organization=org_a, kind="load", status="running")
    client = login(charlie)
    for name, (method, url) in urls_of(org_a, site_a, run).items():
        response = getattr(client, method)(url, {"kind": "load"} if method == "post" else {})
        assert response.status_code == 404, (name, response.status_code)
    assert PerfRun.objects.get(pk=run.pk).cancel_requested is False


def test_a_run_of_another_site_is_not_found_through_this_one(login, alice, org_a, site_a):

    other = added_site(organization=org_a, hostname="other.example.com")
    run = PerfRun.objects.create(site=other, organization=org_a, kind="load", status="done")
    client = login(alice)
    assert client.get(reverse("loadtests:run", args=[org_a.slug, site_a.pk, run.pk])).status_code == 404


def test_the_site_page_has_security_and_performance_tabs(login, alice, org_a, site_a):
    page = login(alice).get(site_a.get_absolute_url()).content.decode()
    assert 'data-testid="tab-security"' in page and 'data-testid="tab-performance"' in page
    assert reverse("loadtests:overview", args=[org_a.slug, site_a.pk]) in page
    assert 'data-testid="grade-badge"' in page and 'data-testid="audit-now"' in page


def test_presets_fit_the_caps_show_their_bound_or_say_why_they_cannot(login, alice, org_a, site_a):
    from django.http import QueryDict

    from tlsaudit.loadtests import plans, presets
    from tlsaudit.loadtests.views import params_from_post

    verify(site_a)
    limits = LoadLimits.objects.create(organization=org_a, max_concurrency=30, max_requests_per_run=200,
                                       max_duration_s=30, runs_per_day=5)
    page = login(alice).get(reverse("loadtests:overview", args=[org_a.slug, site_a.pk])).content.decode()
    assert "HTTPS: 100 requests, concurrency 20" in page and "HTTPS: 200 requests, concurrency 30" in page
    offered = presets.presets_within(limits)
    for number, preset in enumerate(offered, start=1):
        if preset["refused"]:
            # shown disabled, with the reason, never started to fail at its cap
            assert f'data-testid="preset-{number}-refused"' in page and "maximum duration of 30 s" in page
            continue
        post = QueryDict(mutable=True)
        for name, value in preset["fields"]:
            post.appendlist(name, str(value))
        params = checks.validate_params(preset["kind"], params_from_post(preset["kind"], post))
        checks.check_caps(preset["kind"], params, limits)      # the button's plan passes every cap
        assert plans.bound_s(preset["kind"], params) == preset["bound_s"] <= 30
        assert f"≤ {preset['bound_s']:.0f} s" in page
    sweeps = [p for p in offered if p["kind"] == "sweep"]
    assert ("levels", "1,20") in sweeps[0]["fields"]     # the seed's levels up to 40, capped at 30: c=1 kept
    assert [p["refused"] is None for p in offered].count(True) >= 5   # the 4 ab-style ones and the quick sweep


def test_a_plan_that_could_outlast_the_maximum_duration_is_refused_before_it_starts(org_a, site_a):
    verify(site_a)
    LoadLimits.objects.create(organization=org_a, max_concurrency=100, max_requests_per_run=5000,
                              max_duration_s=60, runs_per_day=5)
    with pytest.raises(checks.RunRefused) as refused:
        services.queue_run(site_a, "sweep", {"levels": "1,20,40,60", "modes": ["new", "keepalive"], "requests": 500,
                                             "repeats": 3, "seconds": 5})
    assert refused.value.code == "cap_duration"
    # 4 warm-ups + 3 rounds x 4 levels x 2 modes x 2 schemes = 52 runs: 5 s + 52 x (5 + 0.6) s
    assert refused.value.message.startswith("This plan can take up to 296 s (52 runs of at most 5 s each, plus "
                                            "set-up): above Agency A's maximum duration of 60 s per run.")
    # 0.46 s per run would be below the shortest a run may be: the words say what else would fit
    assert refused.value.message.endswith("Fewer levels, suites, agents levels or repeats would fit.")
    shorter = checks.validate_params("sweep", {"levels": "1,20", "modes": ["new"], "requests": 500, "seconds": 5})
    with pytest.raises(checks.RunRefused) as refused:
        checks.check_caps("sweep", shorter, LoadLimits.for_org(org_a))
    assert refused.value.message.endswith("At most 3.3 s per run would fit.")   # (60 - 5) / 14 runs - 0.6
    assert not PerfRun.objects.filter(site=site_a).exists()


def test_without_seconds_a_run_gets_the_longest_that_fits(org_a, site_a):
    verify(site_a)
    limits = LoadLimits.objects.create(organization=org_a, max_concurrency=100, max_requests_per_run=5000,
                                       max_duration_s=120, runs_per_day=5)
    params = checks.validate_params("sweep", {"levels": "1,20,40", "modes": ["new"], "requests": 500})
    fitted = checks.fitted_seconds("sweep", params, limits.max_duration_s)
    assert fitted["seconds"] == 5.0                       # 3 levels x 2 x 3 + 2 warm-ups: 20 x 5.6 + 5 = 117 s
    wider = checks.validate_params("sweep", {"levels": "1,20,40,60,80,100", "requests": 500})
    # none fits (76 runs x 1.6 s + 5 s = 127 s): the shortest, and check_caps says so before it starts
    assert checks.fitted_seconds("sweep", wider, limits.max_duration_s)["seconds"] == 1.0
    with pytest.raises(checks.RunRefused, match="cap_duration|up to 127 s"):
        services.queue_run(site_a, "sweep", {"levels": "1,20,40,60,80,100", "requests": 500})


def test_the_reaper_ends_runs_whose_worker_vanished_and_frees_their_locks(site_a, org_a):
    from django.core.cache import cache
    from django.utils import timezone

    from tlsaudit.core import locks
    from tlsaudit.loadtests.models import PerfRun
    from tlsaudit.loadtests.services import reap_abandoned_runs

    past = timezone.now() - timezone.timedelta(hours=1)
    taken = locks.keys("load", "192.0.2.7", [site_a.https_port])
    stuck = PerfRun.objects.create(site=site_a, organization=org_a, kind="load", params={"scheme": "https"},
                                   status="running", started_at=past, deadline_at=past, ip="192.0.2.7",
                                   lock_keys=taken)
    fresh = PerfRun.objects.create(site=site_a, organization=org_a, kind="load", params={"scheme": "https"},
                                   status="running", started_at=timezone.now(),
                                   deadline_at=timezone.now() + timezone.timedelta(minutes=5), ip="192.0.2.8")
    assert locks.take(taken, services.run_holder(stuck.pk), 60)
    assert reap_abandoned_runs() == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert (stuck.status, stuck.error_code) == ("failed", "worker_lost")
    assert fresh.status == "running"
    assert cache.get(f"tlsaudit:loadlock:192.0.2.7:{site_a.https_port}") is None


def test_a_cancelled_runs_locks_are_the_ones_it_took_even_after_its_ports_changed(site_a, org_a):
    # The outside review: rebuilt from the site's ports at the end, an edited port freed the wrong keys
    # and left the run's real lock held until its lease ran out.
    from django.core.cache import cache

    from tlsaudit.core import locks, runners

    run = PerfRun.objects.create(site=site_a, organization=org_a, kind="load", params={"scheme": "https"})
    taken = locks.keys(services.LOCK_KIND, "192.0.2.9", [port for _, port in services.target_ports(run)])
    start_task = locks.holder_for(run.pk, runners.this_process())
    assert locks.take(taken, start_task, 60)
    assert services.claim(run.pk, "192.0.2.9", [], 60, taken)
    assert locks.hand_over(taken, start_task, services.run_holder(run.pk), 60)
    site_a.https_port = 8443
    site_a.save()
    run.refresh_from_db()
    assert run.lock_keys == taken and services.target_ports(run) == [("https", 8443)]
    services.finish(run, PerfRun.Status.CANCELLED, "cancelled", "Stopped on request.")
    services.release_locks(run)
    assert [cache.get(lock) for lock in taken] == [None]
