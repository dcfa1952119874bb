"""An agency's first week (#37), pressed in Debian's Chromium by its four roles: the owner (alice), an admin
(adam), a member (dave) and the client as a viewer (bob). Each item's controls appear only for the roles
that may use them, destructive ones ask first, and what they do is read back from the page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.e2e.test_layout import signed_in_context, visit
from tests.support import waiting
from tests.support.api import client_with, make_key
from tests.support.personas import make_user
from tests.support.sites import added_site
from tests.test_member_keys import answers
from tlsaudit.api import keys
from tlsaudit.api.services import create_key
from tlsaudit.audits.models import Audit, WaitingAudit
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership
from tlsaudit.sites.models import Site

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
LAPTOP = 1366


@pytest.fixture
def team(org_a, alice, bob):
    adam = make_user("adam@agency-a.test", full_name="Adam Admin")
    dave = make_user("dave@agency-a.test", full_name="Dave Member")
    Membership.objects.create(organization=org_a, user=adam, role=roles.ADMIN)
    Membership.objects.create(organization=org_a, user=dave, role=roles.MEMBER)
    return {"owner": alice, "admin": adam, "member": dave, "viewer": bob}


@pytest.fixture
def open_as(browser, live_server):
    contexts = []

    def _open(user, url):
        context = signed_in_context(browser, live_server, user, LAPTOP)
        contexts.append(context)
        page = context.new_page()
        visit(page, url)
        return page

    yield _open
    for context in contexts:
        context.close()


class Dialogs:
    """Answers every confirm() the page asks (accept or not, changeable) and keeps the questions."""

    def __init__(self, page, accept: bool):
        self.accept, self.asked = accept, []
        page.on("dialog", self.answer)

    def answer(self, dialog):
        self.asked.append(dialog.message)
        dialog.accept() if self.accept else dialog.dismiss()


def test_audit_all_says_the_limit_first_and_puts_the_rest_in_line(open_as, team, org_a, settings):
    """Item 4: 5 sites, a limit of 3 an hour: the limit is said before the click, 3 start and 2 wait."""
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 3
    for n in range(5):
        added_site(organization=org_a, hostname=f"client{n}.agency.test", created_by=team["owner"])
    url = reverse("sites:list", args=[org_a.slug])
    for role in ("admin", "member"):
        page = open_as(team[role], url)
        assert "starts at most 3 audits an hour on demand" in page.inner_text('[data-testid="audit-budget"]'), role
    viewer = open_as(team["viewer"], url)
    assert viewer.locator('[data-testid="audit-all"]').count() == 0
    assert viewer.locator('[data-testid="audit-budget"]').count() == 0

    page = open_as(team["owner"], url)
    assert "3 left this hour" in page.inner_text('[data-testid="audit-budget"]')
    page.click('[data-testid="audit-all"]')
    page.wait_for_load_state("networkidle")
    main = page.inner_text("main")
    assert "3 audits queued." in main and "2 audits wait for a free slot" in main and "not started" not in main
    assert page.locator('[data-testid="audit-waiting"]').count() == 2
    assert "none left this hour" in page.inner_text('[data-testid="audit-budget"]')

    dialogs = Dialogs(page, accept=False)
    page.click('[data-testid="cancel-waiting"]')
    page.wait_for_timeout(300)
    assert dialogs.asked and "Cancel the 2 audits waiting" in dialogs.asked[0] and WaitingAudit.objects.count() == 2
    dialogs.accept = True
    page.click('[data-testid="cancel-waiting"]')
    page.wait_for_load_state("networkidle")
    assert "2 waiting audits cancelled" in page.inner_text("main")
    assert not WaitingAudit.objects.exists() and Audit.objects.count() == 3


def test_digests_and_tonights_audits_are_run_by_owners_and_admins(open_as, team, org_a, start_worker_on):
    """Item 1: no superuser needed. The owner sets the digest and sends one now; an admin has the same
    controls; the member sees the addresses and the viewer how many; tonight's audits run now."""
    from tlsaudit.monitoring.models import ScheduledRun, SiteSchedule
    from tlsaudit.reports.models import DigestDelivery

    digests = reverse("reports:digests", args=[org_a.slug])
    page = open_as(team["owner"], reverse("orgs:settings", args=[org_a.slug]))
    page.click('[data-testid="digests-link"]')
    page.wait_for_load_state("networkidle")
    page.select_option('select[name="frequency"]', "weekly")
    page.fill('textarea[name="recipients"]', "client@customer.test\nops@agency-a.test")
    page.click('[data-testid="digest-form"] button')
    page.wait_for_load_state("networkidle")
    assert "Digest saved: weekly to 2 recipients." in page.inner_text("main")
    page.click('[data-testid="digest-send-now"] button')
    page.wait_for_load_state("networkidle")
    assert "The digest is being made for 2 recipients" in page.inner_text("main")
    assert DigestDelivery.objects.filter(organization=org_a).count() == 2

    admin = open_as(team["admin"], digests)
    assert admin.locator('[data-testid="digest-form"]').count() == 1
    member = open_as(team["member"], digests)
    assert "Recipients: client@customer.test, ops@agency-a.test" in member.inner_text("main")
    assert member.locator('[data-testid="digest-form"]').count() == 0
    viewer = open_as(team["viewer"], digests)
    assert "Recipients: 2 (their addresses" in viewer.inner_text("main")
    assert "customer.test" not in viewer.inner_text("main")

    start_worker_on(["default"])   # "Run tonight's audits now" is a task
    site = added_site(organization=org_a, hostname="nightly.agency.test", created_by=team["owner"])
    slot = timezone.now() + timedelta(hours=2)
    SiteSchedule.objects.update_or_create(site=site, defaults={"hour": slot.hour, "minute": slot.minute})
    portfolio = reverse("monitoring:portfolio", args=[org_a.slug])
    for role in ("member", "viewer"):
        assert open_as(team[role], portfolio).locator('[data-testid="run-next-now"]').count() == 0, role
    admin = open_as(team["admin"], portfolio)
    dialogs = Dialogs(admin, accept=True)
    admin.click('[data-testid="run-next-now"] button')
    admin.wait_for_load_state("networkidle")
    assert dialogs.asked and "Tonight's slots of those sites are then skipped" in dialogs.asked[0]
    assert "The next nightly audits of 1 scheduled site" in admin.inner_text("main")
    waiting.wait_until(lambda: ScheduledRun.objects.filter(site=site).exists(), 30, "the task to claim the run")
    assert Audit.objects.get(site=site).trigger == "schedule"


def test_webhooks_hide_their_secrets_refuse_duplicates_redeliver_and_deleting_asks(open_as, team, org_a):
    """Items 5, 7, 8 and 10: the viewer sees where alerts go (origin only), the member the whole URL; only
    owners and admins get the controls: Redeliver on a delivery whose retries are spent, the same URL
    refused a second time, and Delete asks before it deletes."""
    from tlsaudit.alerts.models import Webhook, WebhookDelivery

    url = "https://localhost:8443/services/T000/B000/SECRETPATH"   # a name that resolves, as the form checks
    hook = Webhook.objects.create(organization=org_a, url=url, secret="s" * 32)
    WebhookDelivery.objects.create(webhook=hook, status=WebhookDelivery.Status.FAILED, response_code=503)
    alerts = reverse("alerts:settings", args=[org_a.slug])
    viewer = open_as(team["viewer"], alerts)
    assert "https://localhost:8443/…" in viewer.inner_text("main") and "SECRETPATH" not in viewer.content()
    assert viewer.locator("button:has-text('Redeliver')").count() == 0
    member = open_as(team["member"], alerts)
    assert "SECRETPATH" in member.inner_text("main") and member.locator("text=Delete").count() == 0
    assert member.locator("button:has-text('Redeliver')").count() == 0
    admin = open_as(team["admin"], alerts)
    admin.fill('input[name="url"]', url)
    admin.click("button:has-text('Add webhook')")
    admin.wait_for_load_state("networkidle")
    assert Webhook.objects.count() == 1, "nothing added"
    assert "already sends to this URL" in admin.inner_text("main"), \
        admin.inner_text("main")[:1500]
    admin.click("button:has-text('Redeliver')")
    admin.wait_for_load_state("networkidle")
    assert "Redelivery queued" in admin.inner_text("main")
    assert WebhookDelivery.objects.filter(webhook=hook).count() == 2
    owner = open_as(team["owner"], alerts)
    dialogs = Dialogs(owner, accept=False)
    owner.click("button:has-text('Delete')")
    owner.wait_for_timeout(300)
    assert dialogs.asked and Webhook.objects.count() == 1


def test_an_admin_is_offered_only_what_they_may_do_and_removing_asks_and_revokes_keys(open_as, team, org_a):
    """Items 6 and 10: on the members table an admin may assign Member or Viewer, touches no owner row,
    and removing the member (after the question) revokes the keys they created."""
    _, plaintext = create_key(org_a, name="dave's CI", scope=keys.READ_WRITE, created_by=team["member"])
    page = open_as(team["admin"], reverse("orgs:settings", args=[org_a.slug]))
    owner_row = page.locator("tr", has_text="alice@agency-a.test")
    assert owner_row.locator("select").count() == 0 and owner_row.locator("button").count() == 0
    dave_row = page.locator("tr", has_text="dave@agency-a.test")
    assert dave_row.locator("select option").all_inner_texts() == ["Member", "Viewer"]
    assert "their 1 API key is revoked with them" in dave_row.inner_text()
    dialogs = Dialogs(page, accept=True)
    dave_row.locator("button:has-text('Remove')").click()
    page.wait_for_load_state("networkidle")
    assert dialogs.asked == ["Remove dave@agency-a.test from Agency A?"]
    assert "The 1 API key they created was revoked." in page.inner_text("main")
    assert not Membership.objects.filter(user=team["member"]).exists()
    assert answers(plaintext) == 401


def test_a_semicolon_spreadsheet_and_the_apis_own_export_import(open_as, team, org_a, tmp_path):
    """Items 2 and 3: a file saved by a European spreadsheet (;) and the API's sites.csv, uploaded."""
    spreadsheet = tmp_path / "clients.csv"
    spreadsheet.write_text("Hostname;Name;Tags\nshop.client-one.test;Shop;eu,retail\nmail.client-two.test;Mail;eu\n",
                           encoding="utf-8")
    page = open_as(team["member"], reverse("sites:import", args=[org_a.slug]))
    page.set_input_files('input[name="csv_file"]', str(spreadsheet))
    page.click("button:has-text('Import')")
    page.wait_for_load_state("networkidle")
    assert "2 added" in page.inner_text("main"), page.inner_text("main")[:800]
    assert set(Site.objects.values_list("hostname", flat=True)) == {"shop.client-one.test", "mail.client-two.test"}

    export = client_with(make_key(org_a, keys.READ_ONLY)[1]).get("/api/v1/sites.csv")
    again = tmp_path / "sites.csv"
    again.write_bytes(b"".join(export.streaming_content) if export.streaming else export.content)
    Site.objects.all().delete()
    page = open_as(team["admin"], reverse("sites:import", args=[org_a.slug]))
    page.set_input_files('input[name="csv_file"]', str(again))
    page.click("button:has-text('Import')")
    page.wait_for_load_state("networkidle")
    assert "2 added" in page.inner_text("main")
    assert sorted(Site.objects.values_list("name", flat=True)) == ["Mail", "Shop"]
    viewer = open_as(team["viewer"], reverse("sites:list", args=[org_a.slug]))
    assert viewer.locator("text=Import a list").count() == 0


def test_the_client_gets_the_pdf_of_what_they_see(open_as, team, org_a):
    """Item 11: the viewer's portfolio has the PDF button, and pressing it makes a report of theirs."""
    from tlsaudit.reports.models import Report

    page = open_as(team["viewer"], reverse("monitoring:portfolio", args=[org_a.slug]))
    page.click('[data-testid="portfolio-pdf"]')
    page.wait_for_load_state("networkidle")
    assert Report.objects.get(organization=org_a).requested_by == team["viewer"]
    assert "/reports/" in page.url
