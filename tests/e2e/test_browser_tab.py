"""The Browser tab in a real browser: a probe of the local test site (HTML + CSS + 3 scripts +
3 images) run by a real worker on the `browser` queue, live progress, then the charts drawn."""

import re

import pytest
from playwright.sync_api import expect

from tests.support.personas import PASSWORD
from tests.support.probe_site import start_probe_site
from tests.support.sites import added_site
from tlsaudit.probes.models import Probe


def log_in(page, user):
    page.goto("/accounts/login/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()


pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def probed_site(org_a):
    with start_probe_site() as probe_site:
        org_a.custom_ca_pem = probe_site.ca_pem
        org_a.save()
        yield added_site(organization=org_a, hostname=probe_site.host, https_port=probe_site.https_port,
                                  http_port=probe_site.http_port, pinned_ip=probe_site.ip, name="Shop front page")


def test_a_probe_shows_progress_then_phases_waterfall_and_increase(page, start_worker_on, alice, probed_site,
                                                                 screenshot_dir):
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, alice)
    page.goto(probed_site.get_absolute_url())
    page.get_by_role("link", name="Browser").click()
    page.get_by_test_id("probe-runs").fill("2")
    page.get_by_test_id("probe-run").click()

    expect(page.get_by_test_id("probe-queued")).to_have_attribute("hx-trigger", re.compile("every"))
    start_worker_on(("browser",), concurrency=1)
    expect(page.get_by_test_id("probe-done")).to_be_visible(timeout=90_000)

    probe = Probe.objects.get(site=probed_site)
    assert probe.status == "done", probe.error_message
    cold = probe.summary["summary"]["https_cold"]
    assert cold["requests"]["median"] == 8  # HTML + CSS + 3 scripts + 3 images
    drawn = page.evaluate("""() => [...document.querySelectorAll('canvas')]
        .map(c => !!(window.Chart && Chart.getChart(c)))""")
    assert len(drawn) >= 2 and all(drawn), drawn
    expect(page.get_by_test_id("table-increase")).to_contain_text("%")
    assert errors == []
    page.screenshot(path=str(screenshot_dir / "browser-probe.png"), full_page=True)


# 20 s of page loads flat out on both cores: in the timing group, never beside the latency lab's tests
@pytest.mark.timing
def test_the_default_probe_ends_within_the_time_it_shows_and_prices_the_recommendations(
        page, start_worker_on, alice, probed_site, screenshot_dir):
    """A new user's click, no field touched: the form says how long it takes, the probe keeps to it and
    answers, and the site's page then shows each recommendation's grade beside a visitor's time at the
    RTT the probe measured."""
    from tests.test_audit_views import done_audit

    done_audit(probed_site, protocols=("TLSv1.2",), hsts_max_age=None)
    log_in(page, alice)
    page.goto(probed_site.get_absolute_url())
    page.get_by_role("link", name="Browser").click()
    shown = re.search(r"about (\d+) s at the defaults", page.get_by_test_id("probe-plan").inner_text())
    assert shown, page.get_by_test_id("probe-plan").inner_text()
    start_worker_on(("browser",), concurrency=1)
    page.get_by_test_id("probe-run").click()
    expect(page.get_by_test_id("probe-done")).to_be_visible(timeout=(int(shown.group(1)) + 60) * 1000)

    probe = Probe.objects.get(site=probed_site)
    took = (probe.finished_at - probe.started_at).total_seconds()
    assert probe.status == "done" and took <= int(shown.group(1)), (probe.status, took)
    assert probe.rounds_done >= 3 and probe.params["seconds"] == 20
    for mode in ("cold", "warm"):
        assert probe.summary["increase"][mode]["load"]["verdict"] in ("higher", "lower", "no significant difference")
    assert "too short" not in page.content()
    page.screenshot(path=str(screenshot_dir / "browser-probe.png"), full_page=True)

    page.goto(probed_site.get_absolute_url())
    card = page.get_by_test_id("side-by-side")
    expect(card).to_contain_text(f"measured by browser probe #{probe.pk}")
    expect(page.get_by_test_id("side-proto.enable_tls13")).to_contain_text("1 round trip")
    # the probe site answers HTTP without redirecting: nothing to measure, and the row says why
    expect(page.get_by_test_id("side-hsts.enable")).to_contain_text(
        f"browser probe #{probe.pk} saw HTTP answer without redirecting to HTTPS")
    card.screenshot(path=str(screenshot_dir / "security-and-speed.png"))
