"""#37 item 1: digests and "run now" without a superuser. Owners and admins set the emailed PDF digest on a
Digests page and through the API, send one now, and run tonight's audits now; members see the recipients,
viewers how many; the digest email's words are true (it links the page where an owner or admin changes it).

Personas: alice owns Agency A, bob is its viewer, charlie owns Agency B; dave is a member of A."""

import email
import html
import json
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email import policy

import pytest
from django.urls import reverse

from tests.reports.test_digests import wait_for
from tests.support.api import client_with, make_key
from tests.support.audits import done_audit
from tests.support.personas import make_user
from tests.support.sites import added_site
from tlsaudit.api import keys
from tlsaudit.audits.models import Audit
from tlsaudit.core.models import AuditLogEntry
from tlsaudit.domain import roles
from tlsaudit.monitoring import schedules
from tlsaudit.monitoring.models import ScheduledRun, SiteSchedule
from tlsaudit.orgs.models import Membership
from tlsaudit.reports import digests
from tlsaudit.reports.models import DigestDelivery, Report, ReportSchedule
from workers.tasks.schedule import run_next_now as run_next_now_task

RECIPIENTS = ["client@customer.test", "ops@agency-a.test"]
NIGHT = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)


def text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def dave(org_a):
    user = make_user("dave@agency-a.test", full_name="Dave Member")
    Membership.objects.create(organization=org_a, user=user, role=roles.MEMBER)
    return user


@pytest.fixture
def schedule(org_a):
    return ReportSchedule.objects.create(organization=org_a, frequency="weekly", recipients=list(RECIPIENTS))


def digests_url(org) -> str:
    return reverse("reports:digests", args=[org.slug])


# -- the page ---------------------------------------------------------------------------------

@pytest.mark.django_db
def test_an_owner_sets_the_digest_on_its_page_and_it_is_logged(login, alice, org_a):
    client = login(alice)
    settings_page = text(client.get(reverse("orgs:settings", args=[org_a.slug])))
    assert f'href="{digests_url(org_a)}"' in settings_page
    assert "The digest is off: no digest is sent." in text(client.get(digests_url(org_a)))
    page = text(client.post(digests_url(org_a), {"frequency": "monthly",
                                                 "recipients": "Client@Customer.test; ops@agency-a.test"}, follow=True))
    assert "Digest saved: monthly to 2 recipients." in page
    saved = ReportSchedule.objects.get(organization=org_a)
    assert (saved.frequency, saved.recipients) == ("monthly", RECIPIENTS)
    entry = AuditLogEntry.objects.get(action="org.settings_changed")
    assert entry.actor == alice and sorted(entry.detail["fields"]) == ["frequency", "recipients"]


@pytest.mark.django_db
def test_bad_input_is_refused_with_the_reason_and_nothing_saved(login, alice, org_a, schedule):
    client = login(alice)
    refused = client.post(digests_url(org_a), {"frequency": "weekly", "recipients": ""})
    assert refused.status_code == 400 and "Add at least one recipient, or set the digest to Off." in text(refused)
    refused = client.post(digests_url(org_a), {"frequency": "weekly", "recipients": "ops@agency-a.test, not-an-address"})
    assert refused.status_code == 400 and "Not an email address: not-an-address." in text(refused)
    schedule.refresh_from_db()
    assert (schedule.frequency, schedule.recipients) == ("weekly", RECIPIENTS)


@pytest.mark.django_db
def test_members_see_the_addresses_viewers_only_how_many_and_neither_may_change_it(
        login, bob, dave, charlie, org_a, schedule):
    DigestDelivery.objects.create(organization=org_a, schedule=schedule, period="2026-W48", recipient=RECIPIENTS[0],
                                  status="failed", error="550 mailbox client@customer.test unavailable",
                                  report=Report.objects.create(organization=org_a, kind="portfolio"))
    member = text(login(dave).get(digests_url(org_a)))
    assert "Recipients: client@customer.test, ops@agency-a.test" in member and "550 mailbox" in member
    assert 'data-testid="digest-form"' not in member and 'data-testid="digest-send-now"' not in member
    viewer = text(login(bob).get(digests_url(org_a)))
    assert "Recipients: 2 (their addresses are shown to the organization's members)" in viewer
    assert "customer.test" not in viewer and "550" not in viewer and "a recipient" in viewer
    for user in (bob, dave):
        client = login(user)
        assert client.post(digests_url(org_a), {"frequency": "off", "recipients": ""}).status_code == 403
        assert client.post(reverse("reports:digest_send_now", args=[org_a.slug])).status_code == 403
    assert login(charlie).get(digests_url(org_a)).status_code == 404
    schedule.refresh_from_db()
    assert schedule.frequency == "weekly" and Report.objects.count() == 1


@pytest.mark.django_db
def test_send_now_starts_a_digest_once_per_ten_minutes_and_leaves_the_weeks_alone(login, alice, org_a, schedule,
                                                                                  django_capture_on_commit_callbacks):
    client = login(alice)
    with django_capture_on_commit_callbacks() as sent:
        page = text(client.post(reverse("reports:digest_send_now", args=[org_a.slug]), follow=True))
    assert "The digest is being made for 2 recipients" in page
    assert len(sent) == 1, "the render task, with one delivery per recipient linked"
    [report] = Report.objects.all()
    periods = set(DigestDelivery.objects.filter(report=report).values_list("period", flat=True))
    assert len(periods) == 1 and periods.pop().startswith("now-")
    again = text(client.post(reverse("reports:digest_send_now", args=[org_a.slug]), follow=True))
    assert "A digest was sent now less than 10 minutes ago; the next can be sent in" in again
    assert Report.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.last_sent_period == "" and digests.is_due(schedule, NIGHT), "this week's digest still goes"


@pytest.mark.django_db
def test_send_now_with_nobody_to_send_to_says_so(login, alice, org_a):
    page = text(login(alice).post(reverse("reports:digest_send_now", args=[org_a.slug]), follow=True))
    assert "Add at least one recipient first." in page and not Report.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_digest_sent_now_arrives_and_its_words_are_true(org_a, site_a, schedule, smtp_server,  # noqa: F811
                                                          start_worker_on, settings, no_chromium_left):
    """Through a real worker, Chromium and SMTP server: the email says who can change it and links the page."""
    settings.SITE_URL = "http://127.0.0.1:8000"
    done_audit(site_a)
    digests.send_now(schedule)
    start_worker_on(("default", "browser"))
    wait_for(lambda: DigestDelivery.objects.filter(status="sent").count() == 2)
    message = email.message_from_bytes(smtp_server.envelopes[0].content, policy=policy.default)
    assert message["Subject"] == "TLS report for Agency A"
    body = message.get_body(("plain",)).get_content()
    assert "An owner or admin of Agency A can change the recipients or the frequency, or stop the digest, here: " \
           f"http://127.0.0.1:8000/o/{org_a.slug}/reports/digests/" in body
    assert "administrator" not in body
    assert [a.get_content_type() for a in message.iter_attachments()] == ["application/pdf"]


# -- run tonight's audits now -------------------------------------------------------------------

def scheduled_site(org, user, n, frequency="nightly", hour=3, weekday=1):
    site = added_site(organization=org, hostname=f"n{n}.agency.test", created_by=user)
    SiteSchedule.objects.update_or_create(site=site, defaults={"frequency": frequency, "hour": hour, "minute": n,
                                                               "weekday": weekday})
    return site


@pytest.mark.django_db
def test_run_now_audits_the_sites_due_tonight_as_their_nightly_run_once(alice, org_a, org_b, charlie):
    tonight = [scheduled_site(org_a, alice, n) for n in range(3)]
    weekly_not_tonight = scheduled_site(org_a, alice, 9, frequency="weekly", weekday=4)   # Thursday
    off = scheduled_site(org_a, alice, 10, frequency="off")
    elsewhere = scheduled_site(org_b, charlie, 11)
    assert schedules.run_next_now(org_a, NIGHT) == (3, 0)
    audits = Audit.objects.all()
    assert {a.site_id for a in audits} == {s.pk for s in tonight}
    assert {a.trigger for a in audits} == {"schedule"}
    assert set(ScheduledRun.objects.values_list("run_date", flat=True)) == {NIGHT.date()}
    assert schedules.run_next_now(org_a, NIGHT + timedelta(minutes=5)) == (0, 3), "pressed twice: nothing new"
    # Beat fires tonight's slot at 03:0n: the run for that date is taken, so nothing runs twice.
    assert schedules.run_scheduled(tonight[0].pk, NIGHT.replace(hour=3)) == "duplicate"
    assert not Audit.objects.filter(site__in=[weekly_not_tonight, off, elsewhere]).exists()


@pytest.mark.django_db
def test_after_tonights_slot_run_now_takes_tomorrows(alice, org_a):
    site = scheduled_site(org_a, alice, 1, hour=0)
    assert schedules.run_next_now(org_a, NIGHT) == (1, 0)
    assert ScheduledRun.objects.get(site=site).run_date == NIGHT.date() + timedelta(days=1)


@pytest.mark.django_db
def test_run_now_starts_at_the_pools_pace_not_all_at_once(alice, org_a, settings, django_capture_on_commit_callbacks):
    """Thousands pressed at once would jump ahead of every other organization's night: they start
    NIGHTLY_MAX_STARTS_PER_MINUTE a minute, each at its site's own second, as the window spreads them."""
    settings.NIGHTLY_MAX_STARTS_PER_MINUTE = 2
    sites = [scheduled_site(org_a, alice, n) for n in range(5)]
    sent_at = datetime.now(UTC)
    with django_capture_on_commit_callbacks(execute=True):
        assert schedules.run_next_now(org_a, NIGHT) == (5, 0)
    ids = set(Audit.objects.values_list("pk", flat=True))
    with messages_of(ids) as messages:   # as the broker holds them, each with its ETA (none: at once)
        etas = sorted(datetime.fromisoformat(m["headers"]["eta"]) if m["headers"].get("eta") else sent_at
                      for m in messages)
    assert len(etas) == 5
    minutes = [int((eta - sent_at).total_seconds() // 60) for eta in etas]   # each minute, at its site's second
    assert minutes == [0, 0, 1, 1, 2], etas
    assert len(sites) == 5


@pytest.mark.django_db
def test_the_run_now_button_is_for_owners_and_admins_and_queues_a_task(login, alice, bob, dave, charlie, org_a,
                                                                       django_capture_on_commit_callbacks):
    scheduled_site(org_a, alice, 1)
    url = reverse("monitoring:run_next_now", args=[org_a.slug])
    portfolio = reverse("monitoring:portfolio", args=[org_a.slug])
    assert 'data-testid="run-next-now"' in text(login(alice).get(portfolio))
    for user in (bob, dave):
        assert 'data-testid="run-next-now"' not in text(login(user).get(portfolio))
        assert login(user).post(url).status_code == 403
    assert login(charlie).post(url).status_code == 404
    assert not Audit.objects.exists()
    with django_capture_on_commit_callbacks(execute=False) as sent:
        page = text(login(alice).post(url, follow=True))
    assert "The next nightly audits of 1 scheduled site (due within 24 hours) are starting now" in page
    assert len(sent) == 1, "one task, off the request"
    assert run_next_now_task.apply(args=[org_a.pk]).get() == [1, 0]
    assert Audit.objects.get().trigger == "schedule"


@contextmanager
def messages_of(audit_ids: set):
    """The run_audit messages of these audits in the (test) broker's scan queue; taken out afterwards, so
    that no later test finds them there."""
    from workers.celery import app

    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        raw = [m for m in client.lrange("scan", 0, -1) if json.loads(json.loads(m)["headers"]["argsrepr"])[0] in audit_ids]
        try:
            yield [json.loads(m) for m in raw]
        finally:
            for message in raw:
                client.lrem("scan", 1, message)


# -- the API ------------------------------------------------------------------------------------

@pytest.mark.django_db
def test_the_api_reads_and_changes_the_digest_and_hides_addresses_from_read_only_keys(org_a, schedule):
    read_only = client_with(make_key(org_a, keys.READ_ONLY)[1])
    seen = read_only.get("/api/v1/digests/").json()
    assert (seen["frequency"], seen["recipients"], seen["recipient_count"]) == ("weekly", None, 2)
    assert read_only.put("/api/v1/digests/", {"frequency": "off", "recipients": []}, format="json").status_code == 403
    api = client_with(make_key(org_a, keys.READ_WRITE)[1])
    assert api.get("/api/v1/digests/").json()["recipients"] == RECIPIENTS
    bad = api.put("/api/v1/digests/", {"frequency": "weekly", "recipients": ["x@"]}, format="json")
    assert bad.status_code == 422 and "Not an email address: x@." in bad.json()["error"]["fields"]["recipients"]
    changed = api.put("/api/v1/digests/", {"frequency": "monthly", "recipients": ["boss@customer.test"]},
                      format="json")
    assert changed.status_code == 200 and changed.json()["recipients"] == ["boss@customer.test"]
    schedule.refresh_from_db()
    assert (schedule.frequency, schedule.recipients) == ("monthly", ["boss@customer.test"])


@pytest.mark.django_db
def test_the_api_sends_now_within_its_limit_and_runs_tonight_now(org_a, alice, schedule,
                                                               django_capture_on_commit_callbacks):
    api = client_with(make_key(org_a, keys.READ_WRITE, created_by=alice)[1])
    sent = api.post("/api/v1/digests/send/")
    assert sent.status_code == 202, sent.content
    assert sent["Location"].endswith(f"/api/v1/reports/{sent.json()['report_id']}/")
    again = api.post("/api/v1/digests/send/")
    assert again.status_code == 429 and again.json()["error"]["code"] == "digests_per_org"
    assert 500 <= int(again["Retry-After"]) <= 601
    scheduled_site(org_a, alice, 1)
    with django_capture_on_commit_callbacks(execute=False) as started:
        ran = api.post("/api/v1/nightly/run-now/")
    assert ran.status_code == 202 and ran.json() == {"due": 1} and len(started) == 1
    read_only = client_with(make_key(org_a, keys.READ_ONLY)[1])
    assert read_only.post("/api/v1/nightly/run-now/").status_code == 403


@pytest.mark.django_db
def test_the_api_refuses_send_now_without_recipients(org_a):
    api = client_with(make_key(org_a, keys.READ_WRITE)[1])
    refused = api.post("/api/v1/digests/send/")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "no_recipients"
    assert not Report.objects.exists()


@pytest.mark.django_db
def test_send_now_stops_at_its_daily_cap(org_a, schedule, settings):
    settings.DIGEST_SEND_NOW_PER_DAY = 2
    for hours_ago in (20, 3):
        report = Report.objects.create(organization=org_a, kind="portfolio", status="done")
        row = DigestDelivery.objects.create(organization=org_a, schedule=schedule, report=report,
                                            period=f"now-{hours_ago}", recipient=RECIPIENTS[0])
        DigestDelivery.objects.filter(pk=row.pk).update(created_at=datetime.now(UTC) - timedelta(hours=hours_ago))
    with pytest.raises(digests.SentTooRecently, match="2 digests were already sent now in the last 24 hours"):
        digests.send_now(schedule)
    schedule.refresh_from_db()
    assert schedule.sent_now_at is None and Report.objects.count() == 2
