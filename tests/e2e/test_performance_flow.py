"""The Performance tab in a real browser: a verified site, a small HTTP-vs-HTTPS sweep run by a
real worker on the `load` queue against the nginx lab, live progress, then every chart drawn."""

import re

import pytest
from playwright.sync_api import expect

from tests.support.personas import PASSWORD
from tests.support.sites import added_site
from tests.support.wan import start_wan, wait_gone
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.loadtests.summaries import summary_of
from tlsaudit.loadtests.verification import verification_for
from tlsaudit.sites.models import Site

pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def verified_site_on(org, tls_lab, pinned_ip: str) -> Site:
    from django.utils import timezone

    name = "load_no_resumption"
    site = added_site(organization=org, hostname="localhost", https_port=tls_lab.port(name),
                               http_port=tls_lab.http_port(name), pinned_ip=pinned_ip, name="Lab shop")
    verification = verification_for(site)
    verification.record_pass("http", timezone.now(), [pinned_ip])
    verification.save()
    return site


@pytest.fixture
def verified_lab_site(org_a, tls_lab):
    return verified_site_on(org_a, tls_lab, "127.0.0.1")


def log_in(page, user):
    page.goto("/accounts/login/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    expect(page).to_have_url(re.compile(r"/o/[\w-]+/sites/$"))


def test_a_sweep_shows_progress_then_every_chart(page, start_worker_on, alice, verified_lab_site, screenshot_dir):
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, alice)
    page.goto(verified_lab_site.get_absolute_url())
    page.get_by_role("link", name="Performance").click()
    form = page.get_by_test_id("form-sweep")
    form.get_by_label("Concurrency levels").fill("1,5")
    form.get_by_label("Requests per level").fill("30")
    form.get_by_test_id("start-sweep").click()

    # Queued, and polling, before any worker exists; then the worker takes it.
    expect(page).to_have_url(re.compile(r"/performance/runs/\d+/$"))
    expect(page.get_by_test_id("run-queued")).to_have_attribute("hx-trigger", re.compile("every"))
    start_worker_on(("load",), concurrency=4)
    expect(page.get_by_test_id("run-done")).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("run-done")).not_to_have_attribute("hx-trigger", re.compile("."))

    run = PerfRun.objects.get(site=verified_lab_site)
    assert run.status == "done"
    levels = run.summary["new"]["levels"]
    assert [row["concurrency"] for row in levels] == [1, 5]
    canvases = page.locator("canvas[id^=chart-]")
    assert canvases.count() >= 3
    drawn = page.evaluate("""() => [...document.querySelectorAll('canvas[id^=chart-]')]
        .map(c => !!(window.Chart && Chart.getChart(c)))""")
    assert all(drawn), drawn
    page.screenshot(path=str(screenshot_dir / "performance-sweep.png"), full_page=True)
    expect(page.locator("body")).to_contain_text("overhead")
    assert errors == []
    page.screenshot(path=str(screenshot_dir / "performance-sweep.png"), full_page=True)


ANSWERS = ("higher", "lower", "no significant difference")


def figures_of(run) -> list[dict]:
    """Every HTTPS vs HTTP (TLS 1.3 vs 1.2) change of a finished sweep or handshake run."""
    summary = summary_of(run)
    if run.kind == "sweep":
        return [row["time_taken_overhead"] for mode, part in summary.items() if mode != "stats_version"
                for row in part["levels"]]
    return [row["tls13_vs_tls12"] for row in summary["versions"]]


@pytest.fixture(params=[0, 50], ids=["loopback", "50ms_rtt"])
def lab_site_at_rtt(request, org_a, tls_lab):
    """(site, link): the verified lab site on loopback (link None), or behind the latency lab's 50 ms delay
    line (pinned to the line's address): the presets must finish within their bound and answer on a real
    link too."""
    if not request.param:
        yield verified_site_on(org_a, tls_lab, "127.0.0.1"), None
        return
    link = start_wan(request.param)
    try:
        yield verified_site_on(org_a, tls_lab, link.host), link
    finally:
        link.close()
        assert wait_gone(link), "the delay line's device outlived it"


# Its sweeps load both cores for a minute: in the timing group, so the latency lab's tests never run beside it.
@pytest.mark.timing
def test_every_preset_finishes_within_the_time_it_shows_and_answers(page, start_worker_on, alice,
                                                                     lab_site_at_rtt):
    # A new organization's caps, the buttons a new user sees, pressed one after another on the lab, on
    # loopback and behind 50 ms of round trip
    verified_lab_site, link = lab_site_at_rtt
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, alice)
    from django.urls import reverse

    overview = reverse("loadtests:overview", args=[verified_lab_site.organization.slug, verified_lab_site.pk])
    page.goto(overview)
    count = page.locator("[data-testid^=preset-]:is(form)").count()
    assert count == 7 and page.locator("[data-testid$=-refused]").count() == 0
    start_worker_on(("load",), concurrency=4)
    for number in range(1, count + 1):
        page.goto(overview)
        preset = page.get_by_test_id(f"preset-{number}")
        bound = float(preset.get_by_test_id(f"preset-{number}-bound").inner_text().strip("≤ s"))
        preset.get_by_role("button").click()
        expect(page).to_have_url(re.compile(r"/performance/runs/\d+/$"))
        expect(page.get_by_test_id("run-done")).to_be_visible(timeout=(bound + 60) * 1000)
        run = PerfRun.objects.filter(site=verified_lab_site).latest("pk")
        assert run.status == "done", run.error_message
        took = (run.finished_at - run.started_at).total_seconds()
        assert took <= bound, (run.kind, took, bound)
        if run.kind == "load":   # one side: its rate over the repeats, with an interval
            rate = summary_of(run)["cell"]["requests_per_second"]
            assert rate["median"] > 0 and rate["low"] is not None, rate
        else:
            verdicts = [change["verdict"] for change in figures_of(run)]
            assert verdicts and all(v in ANSWERS for v in verdicts), (run.kind, verdicts)
        assert "too short" not in page.content()
    assert errors == []
    if link is not None:   # the runs went through the delay line, not around it
        assert link.stats()["to_server"]["packets"] > 1000, link.stats()
