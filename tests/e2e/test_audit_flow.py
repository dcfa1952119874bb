"""An audit, end to end in Debian's Chromium: alice clicks "Audit now", watches the progress page
poll, and the report replaces it in place; a refused connection ends on a failed page she can retry.

The worker is a real Celery worker (threads) in this process, over the real Redis, scanning the
nginx TLS lab; the browser talks to pytest-django's live server on 127.0.0.1.
"""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.hostile import closed_port
from tests.support.personas import PASSWORD
from tests.support.sites import added_site
from tlsaudit.audits.models import Audit

pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

AUDIT_TIMEOUT_MS = 60_000
# A scan's progress as the engine records it, cut off mid-way (see services.ProgressRecorder).
HALF_DONE = [
    {"name": "resolve", "status": "started", "t": 0.0},
    {"name": "resolve", "status": "done", "t": 0.01},
    {"name": "sslyze", "status": "started", "t": 0.01},
    {"name": "connectivity", "status": "started", "t": 0.01},
    {"name": "connectivity", "status": "done", "t": 0.12},
    {"name": "tls_1_3_cipher_suites", "status": "done", "t": 0.48},
    {"name": "tls_1_2_cipher_suites", "status": "done", "t": 0.61},
    {"name": "tls_1_1_cipher_suites", "status": "done", "t": 0.63},
    {"name": "tls_1_0_cipher_suites", "status": "done", "t": 0.64},
    {"name": "certificate_info", "status": "done", "t": 0.70},
    {"name": "heartbleed", "status": "done", "t": 0.71},
    {"name": "robot", "status": "error", "t": 0.93},
]


@pytest.fixture
def console_errors(page):
    """Messages the page logs as errors (failed resources, CSP refusals), on top of uncaught exceptions."""
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return errors


def log_in(page, user):
    page.goto("/accounts/login/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    expect(page).to_have_url(re.compile(r"/o/[\w-]+/sites/$"))


def audit_pk(url: str) -> int:
    return int(re.search(r"/(\d+)/$", url).group(1))


def test_it_shows_the_progress_then_the_report_in_place(page, console_errors, start_audit_worker, alice, lab_org,
                                                        tls_lab, screenshot_dir):
    # Given alice, owner of Agency A, on the page of a site served by the lab's TLS 1.0 server
    expected = tls_lab.spec("b_tls10_enabled")
    site = added_site(organization=lab_org, hostname="localhost", pinned_ip="127.0.0.1",
                               https_port=tls_lab.port("b_tls10_enabled"), name="Legacy shop", created_by=alice)
    log_in(page, alice)
    page.goto(site.get_absolute_url())
    expect(page.get_by_test_id("grade-badge")).to_have_text("–")

    # When she clicks "Audit now" (no worker is running yet)
    page.get_by_test_id("audit-now").click()

    # Then the audit page shows the progress and polls for news
    expect(page).to_have_url(re.compile(rf"/o/{lab_org.slug}/sites/{site.pk}/audits/\d+/$"))
    audit = Audit.objects.get(site=site)
    assert audit_pk(page.url) == audit.pk
    body = page.locator("#audit-body")
    expect(body).to_have_attribute("hx-trigger", "every 2s")
    expect(body.get_by_role("progressbar")).to_be_visible()
    expect(body.get_by_role("heading", level=1)).to_have_text("Waiting for a worker…")
    page.evaluate("window.sameDocument = true")

    # When a worker picks the audit up
    start_audit_worker()

    # Then the report replaces the progress without a page load
    grade = page.get_by_test_id("audit-grade")
    expect(grade).to_have_text("B", timeout=AUDIT_TIMEOUT_MS)
    assert page.evaluate("window.sameDocument") is True, "the page was reloaded"
    expect(page.locator("#audit-body")).to_have_attribute("data-testid", "audit-done")
    expect(page.locator("#audit-body")).not_to_have_attribute("hx-trigger", re.compile(".*"))
    expect(page.get_by_role("progressbar")).to_have_count(0)
    expect(page.get_by_test_id("audit-again")).to_be_visible()
    audit.refresh_from_db()
    assert (audit.status, audit.grade) == ("done", "B")

    # And it says why B, what to change, and what the change would give
    expect(page.get_by_test_id("caps")).to_contain_text("TLS 1.0 and TLS 1.1 are supported")
    recommendations = page.get_by_test_id("recommendations")
    tls10 = recommendations.locator("li.rec", has_text="Disable TLS 1.0 and TLS 1.1")
    expect(tls10).to_have_count(1)
    expect(tls10.locator(".grade")).to_have_text("A")  # no HSTS on this server, so not A+
    expect(page.get_by_test_id("predicted-grade")).to_have_text("A+")
    nginx = recommendations.locator("details", has=page.locator("summary", has_text="nginx"))
    expect(nginx.locator("pre")).to_contain_text("ssl_protocols TLSv1.2 TLSv1.3;")
    expect(nginx.locator("pre")).to_be_visible()

    # And Chart.js drew the score bars into the swapped-in canvas
    canvas = page.locator("#scores-chart")
    expect(canvas).to_be_visible()
    chart = page.evaluate("""() => {
        const chart = window.Chart && Chart.getChart(document.getElementById("scores-chart"));
        return chart ? {type: chart.config.type, values: chart.data.datasets[0].data, width: chart.width} : null;
    }""")
    assert chart is not None, "no Chart.js chart on the score canvas"
    assert chart["type"] == "bar" and chart["values"] == list(expected.score[:3]) and chart["width"] > 100, chart
    page.screenshot(path=screenshot_dir / "audit-report.png", full_page=True)

    # When she goes back to the site
    page.locator(".crumbs").get_by_role("link", name="Legacy shop").click()

    # Then its badge shows B and the audit is listed
    expect(page.get_by_test_id("grade-badge")).to_have_text("B")
    row = page.get_by_test_id("audits").locator("tr", has=page.get_by_role("link", name=str(audit.pk)))
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Done")
    expect(row.locator(".grade")).to_have_text("B")
    expect(row).to_contain_text(str(expected.score[3]))

    # And so does the site list
    page.locator("header").get_by_role("link", name="Sites", exact=True).click()
    listed = page.get_by_test_id("site-table").locator("tbody tr", has_text="localhost")
    expect(listed.locator(".grade")).to_have_text("B")
    assert not console_errors, console_errors


def test_it_explains_a_refused_connection_and_retries(page, console_errors, start_audit_worker, alice, lab_org,
                                                     screenshot_dir):
    # Given a site whose HTTPS port nobody listens on, and a worker
    site = added_site(organization=lab_org, hostname="localhost", pinned_ip="127.0.0.1",
                               https_port=closed_port(), created_by=alice)
    start_audit_worker()
    log_in(page, alice)
    page.goto(site.get_absolute_url())

    # When alice audits it
    page.get_by_test_id("audit-now").click()

    # Then the page ends on the failure, in words she can act on, and stops polling
    failed = page.get_by_test_id("audit-failed")
    expect(failed).to_be_visible(timeout=AUDIT_TIMEOUT_MS)
    expect(page.get_by_test_id("audit-error")).to_contain_text("refused the connection")
    expect(failed).not_to_have_attribute("hx-trigger", re.compile(".*"))
    first = Audit.objects.get(site=site)
    assert (first.status, first.error_code) == ("failed", "refused")
    assert audit_pk(page.url) == first.pk
    page.screenshot(path=screenshot_dir / "audit-failed.png", full_page=True)

    # When she clicks "Retry the audit"
    page.get_by_role("button", name="Retry the audit").click()

    # Then a new audit is queued and its page opens (it fails the same way: the port is still closed)
    expect(page).not_to_have_url(re.compile(rf"/audits/{first.pk}/$"))
    expect(page).to_have_url(re.compile(rf"/o/{lab_org.slug}/sites/{site.pk}/audits/\d+/$"))
    second = Audit.objects.exclude(pk=first.pk).get(site=site)
    assert audit_pk(page.url) == second.pk
    expect(page.get_by_test_id("audit-failed")).to_be_visible(timeout=AUDIT_TIMEOUT_MS)
    second.refresh_from_db()
    assert (second.status, second.error_code, second.requested_by) == ("failed", "refused", alice)
    assert not console_errors, console_errors


def test_it_lists_the_finished_checks_while_an_audit_runs(page, console_errors, alice, lab_org, screenshot_dir):
    # Given an audit half-way through (a real scan of the lab takes about a second: too quick to photograph)
    site = added_site(organization=lab_org, hostname="shop.agency-a.example", name="Shop",
                               created_by=alice)
    audit = Audit.objects.create(site=site, organization=lab_org, status="running", requested_by=alice,
                                 host=site.hostname, port=443, attempts=1, progress=HALF_DONE,
                                 started_at=timezone.now() - timezone.timedelta(seconds=4))

    # When alice opens it
    log_in(page, alice)
    page.goto(audit.get_absolute_url())

    # Then she sees the bar, the checks done so far, and the page keeps polling
    body = page.get_by_test_id("audit-running")
    expect(body).to_have_attribute("hx-trigger", "every 2s")
    expect(body.get_by_role("heading", level=1)).to_have_text("Auditing shop.agency-a.example…")
    expect(body.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "32")  # 9 of 28 steps finished
    checks = page.get_by_test_id("progress-checks").locator("li")
    expect(checks).to_have_count(len({step["name"] for step in HALF_DONE}))  # one line per check
    expect(checks.last).to_contain_text("robot")
    with page.expect_response(lambda r: r.url.endswith(audit.get_absolute_url())
                              and r.request.headers.get("hx-request") == "true") as poll:
        pass
    assert poll.value.status == 200
    expect(page.get_by_test_id("progress-checks")).to_be_visible()
    page.screenshot(path=screenshot_dir / "audit-progress.png", full_page=True)
    assert not console_errors, console_errors
