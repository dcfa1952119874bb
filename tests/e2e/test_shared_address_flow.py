"""Sites that share an address, in Debian's Chromium (#27): an audit whose address another audit holds
says it waits for its turn (never that the server is slow), then runs once the address is free; the
portfolio names an address whose sites do not fit the nightly window.

The worker is a real Celery worker (threads) in this process, over the real Redis, scanning the nginx TLS
lab; the other audit is its lock on the address, held as a run on another worker host would hold it.
"""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.e2e.test_audit_flow import AUDIT_TIMEOUT_MS, log_in
from tests.support.sites import added_site
from tlsaudit.audits.models import Audit
from tlsaudit.core import locks, runners
from tlsaudit.monitoring.models import OrgSchedulePolicy
from workers.tasks.audit import ADDRESS

pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_an_audit_at_a_busy_address_says_it_waits_its_turn_then_runs(page, start_audit_worker, alice, lab_org,
                                                                    tls_lab, screenshot_dir):
    # Given a site of Agency A on 127.0.0.1, and another audit of that address running on another host
    site = added_site(organization=lab_org, hostname="localhost", pinned_ip="127.0.0.1",
                               https_port=tls_lab.port("a_tls12_13_no_hsts"), name="Client shop", created_by=alice)
    busy = locks.keys("scan", "127.0.0.1", [f"{ADDRESS}0"])
    other = locks.holder_for("another-site-audit", runners.this_process())
    assert locks.take(busy, other, 600)
    try:
        # When alice clicks "Audit now" and a worker picks it up
        log_in(page, alice)
        page.goto(site.get_absolute_url())
        page.get_by_test_id("audit-now").click()
        expect(page).to_have_url(re.compile(rf"/o/{lab_org.slug}/sites/{site.pk}/audits/\d+/$"))
        start_audit_worker()

        # Then the page says the audit waits its turn at that address, whose fault nothing is
        body = page.locator("#audit-body")
        expect(body.get_by_role("heading", level=1)).to_have_text("Waiting for its turn…", timeout=AUDIT_TIMEOUT_MS)
        expect(body).to_contain_text("Waiting for its turn at 127.0.0.1")
        expect(body).not_to_contain_text("slow")
        page.screenshot(path=screenshot_dir / "audit-waiting-its-turn.png", full_page=True)
        audit = Audit.objects.get(site=site)
        assert audit.status == "queued" and audit.turn_note.startswith("Waiting for its turn at 127.0.0.1")
    finally:
        # When the other audit ends
        locks.release(busy, other)

    # Then this one runs (at its next try) and its report replaces the waiting page
    expect(page.get_by_test_id("audit-grade")).to_have_text(tls_lab.spec("a_tls12_13_no_hsts").grade,
                                                           timeout=AUDIT_TIMEOUT_MS)
    audit.refresh_from_db()
    assert (audit.status, audit.turn_note, audit.error_code) == ("done", "", "")


def test_the_portfolio_names_an_address_whose_sites_do_not_fit_the_window(page, settings, alice, org_a, screenshot_dir):
    # Given 121 sites of Agency A on one shared-hosting address, audited nightly between 07:00 and 08:00
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE, settings.NIGHTLY_AUDIT_SECONDS = 100, 30
    OrgSchedulePolicy.objects.create(organization=org_a, window_start_hour=7, window_end_hour=8)
    for i in range(121):        # one at a time, as added by hand: each gets its nightly place
        added_site(organization=org_a, hostname=f"s{i}.shared.test", pinned_ip="203.0.113.5")

    # When alice opens the portfolio
    log_in(page, alice)
    page.goto(reverse("monitoring:portfolio", args=[org_a.slug]))

    # Then it names the address, how long its sites need one at a time and how long the window is
    warning = page.get_by_test_id("crowded-addresses")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("121 scheduled sites share 203.0.113.5")
    expect(warning).to_contain_text("they need 61 min and the window has 60 min")
    page.screenshot(path=screenshot_dir / "portfolio-crowded-address.png", full_page=True)
