"""#29 in the browser: Alice's agency with a Let's Encrypt-shaped certificate that rotated twice, whose CA
(an ARI server of our own) suggests a renewal window. She sees the window on the site page, the renewals
and their margins on the history page, the forecast on the portfolio, and sets her organization's renewal
share on the alerts page."""

from datetime import timedelta

import pytest
from django.test import override_settings
from playwright.sync_api import expect

from tests.alerts.test_ari import NOW, AriServer, expected_cert_id, lets_encrypt_like_leaf, window
from tests.api.factories import done_audit
from tests.domain.factories import deployment
from tests.e2e.test_audit_flow import log_in
from tests.support.pki import TestPki
from tests.support.sites import added_site
from workers.tasks.alerts import evaluate_audit
from workers.tls.certs import describe_certificate

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_alice_reads_the_renewal_window_history_and_forecast(page, alice, org_a, tmp_path, screenshot_dir):
    pki = TestPki(tmp_path / "pki")
    site = added_site(organization=org_a, hostname="shop.caa-lab.net", name="Shop", created_by=alice)
    leaves = [lets_encrypt_like_leaf(pki) for _ in range(3)]
    server = AriServer()
    try:
        with override_settings(ARI_DIRECTORIES=server.directory_setting(), ALLOW_PRIVATE_TARGETS=True):
            for i, leaf in enumerate(leaves):      # three audits, a new certificate each: two renewals
                server.windows[expected_cert_id(leaf)] = window(40, 42)
                audit = done_audit(site, at=NOW - timedelta(days=2 - i), cert=deployment(describe_certificate(leaf)))
                evaluate_audit(audit.pk)
    finally:
        server.close()

    log_in(page, alice)
    page.goto(site.get_absolute_url())
    card = page.get_by_test_id("renewal")
    expect(card.get_by_test_id("renewal-window")).to_contain_text("Test ACME CA suggests renewing between")
    expect(card.get_by_test_id("renewal-lifetime")).to_contain_text("lives 90 days")
    card.screenshot(path=str(screenshot_dir / "site-renewal-window.png"))

    page.goto(f"/o/{org_a.slug}/sites/{site.pk}/history/")
    table = page.get_by_test_id("renewal-table")
    expect(table.locator("tr")).to_have_count(4)
    expect(table).to_contain_text("served now")
    page.get_by_test_id("renewal-history").screenshot(path=str(screenshot_dir / "history-renewals.png"))

    page.goto(f"/o/{org_a.slug}/portfolio/")
    expect(page.get_by_test_id("renewal-forecast")).to_have_text("Renewal forecast: 0 renewals due next week, 0 overdue")
    page.get_by_test_id("expiry-calendar").screenshot(path=str(screenshot_dir / "portfolio-renewal-forecast.png"))

    page.goto(f"/o/{org_a.slug}/alerts/")
    page.get_by_label("Renewal overdue after (% of lifetime)").fill("80")
    page.get_by_label("Backstop (days left)").fill("0")
    page.get_by_role("button", name="Save alert settings").click()
    expect(page.get_by_label("Renewal overdue after (% of lifetime)")).to_have_value("80")
    page.screenshot(path=str(screenshot_dir / "alerts-renewal-share.png"), full_page=True)
