"""The security audit log: `record()` itself, each recorded action through the real views, and the
owners' page (/o/<slug>/audit-log/). Personas: alice owns Agency A, dora is its admin, mel a member,
bob a viewer; charlie owns Agency B."""

import datetime as dt
import logging
import re
from urllib.parse import urlsplit

import pytest
from django.test import RequestFactory
from django.urls import reverse

from tests.support.personas import PASSWORD
from tlsaudit.core.auditlog import REDACTED, record
from tlsaudit.core.models import AuditLogEntry

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "tangerine submarine lighthouse"


def audit_log_page(org, **query):
    return reverse("audit_log", args=[org.slug]) + ("?" + "&".join(f"{k}={v}" for k, v in query.items())
                                                      if query else "")


# --- record() -------------------------------------------------------------------------------------

def test_it_records_who_did_what_to_which_org_from_where(alice, org_a):
    request = RequestFactory().post("/", REMOTE_ADDR="203.0.113.7")
    request.user = alice

    entry = record("member.role_changed", org=org_a, target="bob@agency-a.test", request=request,
                   old_role="viewer", new_role="admin")

    entry.refresh_from_db()
    assert (entry.organization, entry.actor, entry.actor_email) == (org_a, alice, "alice@agency-a.test")
    assert (entry.action, entry.target, entry.ip) == ("member.role_changed", "bob@agency-a.test", "203.0.113.7")
    assert entry.detail == {"old_role": "viewer", "new_role": "admin"}
    assert entry.label == "Member role changed"


def test_it_redacts_secret_named_detail_at_any_depth_and_keeps_prefixes(alice):
    entry = record("api_key.created", actor=alice, secret="whsec_abc", password="hunter2", api_key="hcw_full",
                   key="hcw_full", raw_token="t0k", nested={"Authorization": "Bearer x", "ok": 1},
                   items=[{"webhook_secret": "s"}], key_prefix="hcw_ab12", key_id=7, name="CI key")
    entry.refresh_from_db()

    assert entry.detail == {
        "secret": REDACTED, "password": REDACTED, "api_key": REDACTED, "key": REDACTED, "raw_token": REDACTED,
        "nested": {"Authorization": REDACTED, "ok": 1}, "items": [{"webhook_secret": REDACTED}],
        "key_prefix": "hcw_ab12", "key_id": 7, "name": "CI key"}
    assert not re.search("whsec_abc|hunter2|hcw_full|t0k|Bearer", str(entry.detail))


def test_it_stores_dates_and_objects_as_text(alice, org_a):
    entry = record("org.settings_changed", org=org_a, actor=alice, when=dt.datetime(2026, 1, 2, 3, 4, 5),
                   org_obj=org_a)
    entry.refresh_from_db()
    assert entry.detail == {"when": "2026-01-02T03:04:05", "org_obj": "Agency A"}


def test_the_actor_defaults_to_the_signed_in_user_and_anonymous_stays_empty(alice):
    signed_in = RequestFactory().get("/")
    signed_in.user = alice
    anonymous = RequestFactory().get("/")
    from django.contrib.auth.models import AnonymousUser
    anonymous.user = AnonymousUser()

    assert record("user.logout", request=signed_in).actor == alice
    assert record("user.login_failed", request=anonymous).actor is None


def test_behind_our_proxy_only_the_hop_it_appended_counts(settings):
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.4")
    settings.SECURE_PROXY_SSL_HEADER = None
    assert record("user.login_failed", request=request).ip == "10.0.0.2"  # no proxy: the header is a client's lie
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert record("user.login_failed", request=request).ip == "198.51.100.4"


def test_a_garbage_address_is_stored_as_none():
    request = RequestFactory().get("/", REMOTE_ADDR="not-an-ip")
    assert record("user.login_failed", request=request).ip is None


def test_deleting_the_actor_keeps_the_entry_and_their_email(alice, org_a):
    entry = record("site.deleted", org=org_a, actor=alice, target="https://shop.example.com")
    alice.delete()
    entry.refresh_from_db()
    assert entry.actor is None and entry.actor_email == "alice@agency-a.test"


# --- the recorded actions, through the real views -------------------------------------------------

def test_a_login_and_a_logout_are_recorded_with_the_ip(client, alice, log_of):
    response = client.post(reverse("login"), {"username": "Alice@Agency-A.test", "password": PASSWORD},
                           REMOTE_ADDR="192.0.2.10")
    assert response.status_code == 302
    client.post(reverse("logout"), REMOTE_ADDR="192.0.2.10")

    [login] = log_of("user.login")
    [logout] = log_of("user.logout")
    assert (login.actor, login.ip, login.target) == (alice, "192.0.2.10", "alice@agency-a.test")
    assert (logout.actor, logout.ip) == (alice, "192.0.2.10")


def test_a_failed_login_records_the_attempted_email_never_the_password(client, alice, log_of):
    client.post(reverse("login"), {"username": "ALICE@agency-a.test", "password": "wrong guess 1"},
                REMOTE_ADDR="192.0.2.11")

    [failed] = log_of("user.login_failed")
    assert (failed.actor, failed.target, failed.ip) == (None, "alice@agency-a.test", "192.0.2.11")
    assert "wrong guess" not in str(failed.detail)


def test_a_password_change_is_recorded(login, alice, log_of):
    response = login(alice).post(reverse("password_change"), {
        "old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302
    [entry] = log_of("user.password_changed")
    assert entry.actor == alice and NEW_PASSWORD not in str(entry.detail)


def test_a_password_reset_is_recorded_from_request_to_new_password(client, alice, mailoutbox, log_of):
    client.post(reverse("password_reset"), {"email": "alice@agency-a.test"})
    link = urlsplit(re.search(r"https?://\S+", mailoutbox[0].body).group(0)).path
    form_url = client.get(link).url
    response = client.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302

    [requested] = log_of("user.password_reset_requested")
    [reset] = log_of("user.password_reset")
    assert requested.target == "alice@agency-a.test" and requested.actor is None
    assert reset.actor == alice


def test_member_changes_are_recorded_with_old_and_new_roles(login, alice, bob, mel, org_a, log_of):
    client = login(alice)
    client.post(reverse("orgs:invite", args=[org_a.slug]), {"email": "eve@agency-a.test", "role": "viewer"})
    invitation = org_a.invitations.get()
    client.post(reverse("orgs:revoke_invitation", args=[org_a.slug, invitation.pk]))
    bobs = org_a.memberships.get(user=bob)
    client.post(reverse("orgs:change_role", args=[org_a.slug, bobs.pk]), {"role": "admin"})
    client.post(reverse("orgs:remove_member", args=[org_a.slug, org_a.memberships.get(user=mel).pk]))

    [invited], [revoked] = log_of("member.invited"), log_of("member.invitation_revoked")
    [changed], [removed] = log_of("member.role_changed"), log_of("member.removed")
    assert (invited.target, invited.detail, invited.organization) == ("eve@agency-a.test", {"role": "viewer"}, org_a)
    assert revoked.target == "eve@agency-a.test"
    assert (changed.target, changed.detail) == ("bob@agency-a.test", {"old_role": "viewer", "new_role": "admin"})
    assert (removed.target, removed.detail) == ("mel@agency-a.test", {"role": "member", "left": False,
                                                                      "api_keys_revoked": [], "api_keys_kept": 0})
    assert {e.actor for e in (invited, revoked, changed, removed)} == {alice}
    # The invitation token is the credential of the link: it is nowhere in the log.
    assert invitation.token not in str([(e.target, e.detail) for e in AuditLogEntry.objects.all()])


def test_accepting_an_invitation_is_recorded(login, alice, charlie, org_a, log_of):
    from tlsaudit.orgs.models import Invitation

    invitation = Invitation.objects.create(organization=org_a, email=charlie.email, role="member", invited_by=alice)
    login(charlie).post(reverse("orgs:accept", args=[invitation.token]))
    [joined] = log_of("member.joined")
    assert (joined.organization, joined.actor, joined.detail) == (org_a, charlie, {"role": "member"})


def test_creating_an_org_and_changing_its_settings_are_recorded(login, alice, org_a, log_of):
    client = login(alice)
    client.post(reverse("orgs:create"), {"name": "Agency Z"})
    client.post(reverse("orgs:settings", args=[org_a.slug]), {"name": "Agency A Renamed", "custom_ca_pem": ""})

    [created] = log_of("org.created")
    [changed] = log_of("org.settings_changed")
    assert created.target == "Agency Z" and created.actor == alice
    assert changed.organization == org_a and changed.detail == {"fields": ["name"]}


def test_deleting_a_site_is_recorded_by_its_origin(login, alice, org_a, site_a, log_of):
    site_id = site_a.pk
    login(alice).post(reverse("sites:delete", args=[org_a.slug, site_id]))
    [deleted] = log_of("site.deleted")
    assert (deleted.organization, deleted.target, deleted.detail) == (
        org_a, "shop.example.com", {"site_id": site_id, "name": "Shop"})


def test_webhooks_are_recorded_without_their_secret_or_path(login, alice, org_a, webhook_receiver, log_of, caplog):
    from tlsaudit.alerts.models import Webhook

    caplog.set_level(logging.DEBUG)
    client = login(alice)
    client.post(reverse("alerts:add_webhook", args=[org_a.slug]), {"url": webhook_receiver.url + "/T0K3N/path"})
    hook = Webhook.objects.get()
    client.post(reverse("alerts:delete_webhook", args=[org_a.slug, hook.pk]))

    [created], [deleted] = log_of("webhook.created"), log_of("webhook.deleted")
    parts = urlsplit(webhook_receiver.url)
    origin = f"{parts.scheme}://{parts.netloc}"
    assert created.target == deleted.target == origin
    everything = str([(e.target, e.detail) for e in AuditLogEntry.objects.all()]) + caplog.text
    assert hook.secret not in everything and hook.secret[6:] not in everything and "T0K3N" not in everything


# --- the owners' page ------------------------------------------------------------------------------

def test_alice_sees_her_orgs_entries_and_her_members_sign_ins_only(login, client, alice, bob, charlie, org_a, org_b):
    record("member.role_changed", org=org_a, actor=alice, target="bob@agency-a.test")
    record("site.deleted", org=org_b, actor=charlie, target="https://secret.example.org")
    record("user.login", actor=bob, target=bob.email)
    record("user.login", actor=charlie, target=charlie.email)
    record("user.login_failed", target="bob@agency-a.test")
    record("user.login_failed", target="charlie@agency-b.test")

    response = login(alice).get(audit_log_page(org_a))

    assert response.status_code == 200
    rows = [(e.action, e.target) for e in response.context["page"]]
    assert sorted(rows) == [("member.role_changed", "bob@agency-a.test"),
                            ("user.login", "alice@agency-a.test"),  # the test client's own sign-in
                            ("user.login", "bob@agency-a.test"), ("user.login_failed", "bob@agency-a.test")]
    html = response.content.decode()
    assert "secret.example.org" not in html and "charlie@agency-b.test" not in html


@pytest.mark.parametrize("who, status", [("dora", 403), ("mel", 403), ("bob", 403), ("charlie", 404)])
def test_only_owners_may_read_the_log(login, org_a, org_b, dora, mel, bob, charlie, who, status):
    user = {"dora": dora, "mel": mel, "bob": bob, "charlie": charlie}[who]
    assert login(user).get(audit_log_page(org_a)).status_code == status


def test_anonymous_visitors_are_sent_to_log_in(client, org_a):
    response = client.get(audit_log_page(org_a))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_the_settings_page_links_the_log_for_owners_only(login, alice, bob, org_a, dora):
    url = reverse("orgs:settings", args=[org_a.slug])
    assert 'data-testid="audit-log-link"' in login(alice).get(url).content.decode()
    assert 'data-testid="audit-log-link"' not in login(dora).get(url).content.decode()


def test_the_log_filters_by_action(login, alice, org_a):
    record("site.deleted", org=org_a, actor=alice, target="https://a.example")
    record("webhook.created", org=org_a, actor=alice, target="https://hooks.example")

    response = login(alice).get(audit_log_page(org_a, action="site.deleted"))
    assert [e.action for e in response.context["page"]] == ["site.deleted"]
    assert '<option value="site.deleted" selected>' in response.content.decode()


def test_an_unknown_action_filter_is_a_clear_error_and_shows_everything(login, alice, org_a):
    record("site.deleted", org=org_a, actor=alice, target="https://a.example")
    response = login(alice).get(audit_log_page(org_a, action="<script>x"))
    assert response.status_code == 400
    assert "There is no action called" in response.content.decode() and "<script>x" not in response.content.decode()
    assert "site.deleted" in [e.action for e in response.context["page"]]


def test_the_log_is_paginated_newest_first(login, alice, org_a):
    for n in range(55):
        record("site.deleted", org=org_a, actor=alice, target=f"https://s{n}.example")

    first = login(alice).get(audit_log_page(org_a, action="site.deleted")).context["page"]
    second = login(alice).get(audit_log_page(org_a, action="site.deleted", page=2)).context["page"]
    assert len(first) == 50 and len(second) == 5
    assert first[0].target == "https://s54.example" and second[-1].target == "https://s0.example"
    assert login(alice).get(audit_log_page(org_a, page="nonsense")).status_code == 200
