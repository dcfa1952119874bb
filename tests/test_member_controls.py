"""Controls only for those who may use them, and destructive actions that ask first (#37 item 10)."""

import re

from django.urls import reverse

from tlsaudit.accounts.models import User
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership


def row_of(page: str, email: str) -> str:
    return next(row for row in re.findall(r"<tr>.*?</tr>", page, re.S) if email in row)


def test_an_admin_is_offered_only_what_an_admin_may_do(login, alice, bob, org_a):
    dora = User.objects.create_user(email="dora@agency-a.test", password="x" * 12, email_verified=True)
    Membership.objects.create(organization=org_a, user=dora, role=roles.ADMIN)

    page = login(dora).get(reverse("orgs:settings", args=[org_a.slug])).content.decode()

    owner_row, viewer_row = row_of(page, "alice@agency-a.test"), row_of(page, bob.email)
    assert "<select" not in owner_row and "Remove" not in owner_row        # an admin cannot change an owner
    assert re.findall(r'<option value="(\w+)"', viewer_row) == ["member", "viewer"]
    assert "Remove</button>" in viewer_row


def test_an_owner_is_offered_every_role(login, alice, bob, org_a):
    page = login(alice).get(reverse("orgs:settings", args=[org_a.slug])).content.decode()
    assert re.findall(r'<option value="(\w+)"', row_of(page, bob.email)) == ["owner", "admin", "member", "viewer"]


def test_removing_leaving_revoking_and_deleting_ask_first(login, alice, bob, org_a):
    from tlsaudit.alerts.models import Webhook
    from tlsaudit.api import keys
    from tlsaudit.api.services import create_key

    Webhook.objects.create(organization=org_a, url="https://hooks.example.com/a")
    create_key(org_a, name="ci", scope=keys.READ_ONLY, created_by=alice)
    client = login(alice)
    members = client.get(reverse("orgs:settings", args=[org_a.slug])).content.decode()
    alerts = client.get(reverse("alerts:settings", args=[org_a.slug])).content.decode()
    api_keys = client.get(reverse("api_keys:list", args=[org_a.slug])).content.decode()

    assert 'data-confirm="Remove bob@agency-a.test from Agency A?"' in members
    assert "data-confirm=\"Leave Agency A? You lose access to its sites at once, and the API keys you created " \
           "here are revoked.\"" in members
    assert 'data-confirm="Delete this webhook and its delivery log?' in alerts
    assert 'data-confirm="Revoke the key ci?' in api_keys
