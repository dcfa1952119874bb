"""The first ten minutes, in Debian's Chromium: sign up, verify, create an organization, add sites.
Then: a member of two organizations switches between them and only ever sees the current one's sites."""

import re
from urllib.parse import urlsplit

import pytest
from django.core import mail
from playwright.sync_api import expect

from tests.support.personas import PASSWORD
from tests.support.sites import added_site
from tlsaudit.accounts.models import User
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership
from tlsaudit.sites.models import Site, Tag

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BANNER = "Please verify your email address"


def verification_path() -> str:
    """The path of the link in the last verification email (its host is SITE_URL, not the live server)."""
    assert mail.outbox, "no email was sent"
    message = mail.outbox[-1]
    assert message.to == ["dana@studio-d.test"]
    links = re.findall(r"https?://\S+/accounts/verify/\S+/", message.body)
    assert len(links) == 1, message.body
    return urlsplit(links[0]).path


def add_more_sites(org, user):
    """A few more rows so the list screenshot in the README shows what the table looks like."""
    production = Tag.objects.create(organization=org, name="production")
    client_b = Tag.objects.create(organization=org, name="client-b")
    for hostname, name, port, ip, tags in [
        ("shop.acme-client.example", "Acme shop", 443, None, [production]),
        ("staging.acme-client.example", "", 8443, "192.0.2.10", []),
        ("blog.client-b.example", "Client B blog", 443, None, [client_b, production]),
    ]:
        site = added_site(organization=org, hostname=hostname, name=name, https_port=port,
                                   pinned_ip=ip, created_by=user)
        site.tags.set(tags)


def test_it_takes_a_new_user_from_sign_up_to_their_first_site(page, screenshot_dir):
    # Given a visitor on the landing page
    page.goto("/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("How secure is your HTTPS")

    # When they sign up
    page.locator("header").get_by_role("link", name="Sign up").click()
    expect(page).to_have_url(re.compile(r"/accounts/signup/$"))
    page.get_by_label("Full name").fill("Dana Designer")
    page.get_by_label("Email address").fill("Dana@Studio-D.test")
    page.get_by_label("Password").fill("a long passphrase for dana")
    page.get_by_test_id("signup-submit").click()

    # Then they are logged in, asked to verify their address and offered onboarding
    banner = page.locator(".banner")
    expect(banner).to_contain_text(BANNER)
    expect(banner).to_contain_text("dana@studio-d.test")
    expect(page.locator("header")).to_contain_text("dana@studio-d.test")
    dana = User.objects.get(email="dana@studio-d.test")
    assert dana.full_name == "Dana Designer" and not dana.email_verified

    # When they follow the link from the email, the banner goes away
    page.goto(verification_path())
    expect(page.locator(".messages")).to_contain_text("Your email address is verified.")
    expect(page.get_by_text(BANNER)).to_have_count(0)
    dana.refresh_from_db()
    assert dana.email_verified

    # When they create an organization
    page.get_by_test_id("create-org").click()
    page.get_by_label("Name").fill("Acme Agency")
    page.get_by_test_id("create-org-submit").click()

    # Then the empty site list says what to do next
    expect(page).to_have_url(re.compile(r"/o/acme-agency/sites/$"))
    empty = page.get_by_test_id("empty-sites")
    expect(empty).to_contain_text("No sites yet")
    expect(empty).to_contain_text("Add the first site you want to audit")
    expect(empty.get_by_role("link", name="paste a list of host names")).to_be_visible()

    # When they add a site with a path, the form says why it is refused
    page.get_by_test_id("add-site").click()
    page.get_by_label("Host name").fill("https://example.com/some/path")
    page.get_by_test_id("site-submit").click()
    expect(page.get_by_test_id("error-address")).to_have_text(
        "Enter the site's address without a path or query: e.g. https://example.com/.")
    assert not Site.objects.exists()

    # And with an international host name and a tag, it is added
    page.get_by_label("Host name").fill("bücher.example")
    page.get_by_label("Tags").fill("client-a")
    page.get_by_test_id("site-submit").click()
    expect(page.locator(".messages")).to_contain_text("bücher.example added.")
    site = Site.objects.get()
    assert (site.hostname, site.https_port, site.http_port) == ("xn--bcher-kva.example", 443, 80)
    assert site.organization.name == "Acme Agency" and site.created_by == dana
    assert [t.name for t in site.tags.all()] == ["client-a"]

    # Then it is in the site list, shown in Unicode, with its tag
    add_more_sites(site.organization, dana)
    page.locator("header").get_by_role("link", name="Sites", exact=True).click()
    table = page.get_by_test_id("site-table")
    row = table.locator("tbody tr", has_text="bücher.example")
    expect(row).to_contain_text("client-a")
    expect(row).to_contain_text("443 / 80")
    expect(table).not_to_contain_text("xn--")
    expect(table.locator("tbody tr")).to_have_count(4)
    page.screenshot(path=screenshot_dir / "sites.png", full_page=True)

    # And its detail page opens
    row.get_by_role("link", name="bücher.example").click()
    expect(page).to_have_url(re.compile(rf"/o/acme-agency/sites/{site.pk}/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("bücher.example")
    expect(page.get_by_test_id("grade-badge")).to_have_text("–")
    expect(page.get_by_text("Not audited yet")).to_be_visible()
    page.screenshot(path=screenshot_dir / "site-detail.png", full_page=True)


def test_it_shows_only_the_current_organizations_sites_after_switching(page, alice, org_a, org_b, site_a, site_b):
    # Given alice, owner of Agency A, who is also a member of Agency B
    Membership.objects.create(organization=org_b, user=alice, role=roles.MEMBER)

    # When she logs in, she lands on Agency A's sites
    page.goto("/accounts/login/")
    page.get_by_label("Email").fill(alice.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    expect(page).to_have_url(re.compile(rf"/o/{org_a.slug}/sites/$"))
    table = page.get_by_test_id("site-table")
    expect(table).to_contain_text("shop.example.com")
    expect(table).not_to_contain_text("secret.example.org")

    # When she picks Agency B in the organization switcher
    switcher = page.get_by_test_id("org-switcher")
    expect(switcher).to_have_text(re.compile(r"^Agency A"))
    menu = page.locator("details.switcher")
    expect(menu.get_by_role("link", name="Agency B")).to_be_hidden()
    switcher.click()
    menu.get_by_role("link", name="Agency B").click()

    # Then she sees Agency B's sites and none of Agency A's, anywhere on the page
    expect(page).to_have_url(re.compile(rf"/o/{org_b.slug}/sites/$"))
    expect(switcher).to_have_text(re.compile(r"^Agency B"))
    expect(page.get_by_test_id("site-table")).to_contain_text("secret.example.org")
    expect(page.locator("body")).not_to_contain_text("shop.example.com")

    # And searching Agency B for Agency A's host finds nothing
    page.get_by_role("searchbox", name="Search").fill("shop")
    expect(page).to_have_url(re.compile(r"[?&]q=shop"))
    expect(page.get_by_test_id("site-table")).to_contain_text("No site matches this filter.")
    expect(page.locator("body")).not_to_contain_text("shop.example.com")

    # And the dashboard now opens on Agency B
    page.goto("/")
    expect(page).to_have_url(re.compile(rf"/o/{org_b.slug}/sites/$"))
    alice.refresh_from_db()
    assert alice.last_org == org_b
