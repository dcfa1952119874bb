"""A member who leaves takes the API keys they created along (#37 item 6): revoked at removal unless an
owner or admin keeps them on purpose, and said so on the page and in the audit log."""

import html
import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from rest_framework.test import APIClient

from tlsaudit.accounts.models import User
from tlsaudit.api import keys
from tlsaudit.api.services import create_key
from tlsaudit.core.models import AuditLogEntry
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership


def admin_with_keys(org, email: str, count: int) -> tuple[Membership, list[str]]:
    user = User.objects.create_user(email=email, password="x" * 12, email_verified=True)
    membership = Membership.objects.create(organization=org, user=user, role=roles.ADMIN)
    plaintexts = [create_key(org, name=f"{email} {i}", scope=keys.READ_WRITE, created_by=user)[1] for i in range(count)]
    return membership, plaintexts


def answers(plaintext: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client.get("/api/v1/sites/").status_code


def remove(client, org, membership, **data):
    return client.post(reverse("orgs:remove_member", args=[org.slug, membership.pk]), data)


def said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def test_removing_a_member_revokes_the_keys_they_created_and_says_so(login, alice, org_a):
    dora, dora_keys = admin_with_keys(org_a, "dora@agency-a.test", 2)
    _, alice_key = create_key(org_a, name="alice's", scope=keys.READ_WRITE, created_by=alice)
    client = login(alice)
    page = html.unescape(client.get(reverse("orgs:settings", args=[org_a.slug])).content.decode())
    words = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "(their 2 API keys are revoked with them; keep them )" in words
    assert 'name="keep_keys"' in page
    assert [answers(key) for key in dora_keys] == [200, 200]

    response = remove(client, org_a, dora)

    assert "dora@agency-a.test was removed. The 2 API keys they created were revoked." in said(response)
    assert [answers(key) for key in dora_keys] == [401, 401]
    assert answers(alice_key) == 200
    entry = AuditLogEntry.objects.get(action="member.removed")
    assert len(entry.detail["api_keys_revoked"]) == 2 and entry.detail["api_keys_kept"] == 0


def test_an_owner_may_keep_a_removed_members_keys_and_is_told_they_still_work(login, alice, org_a):
    erin, [erin_key] = admin_with_keys(org_a, "erin@agency-a.test", 1)

    response = remove(login(alice), org_a, erin, keep_keys="1")

    assert "The 1 API key they created still works: revoke it on the API keys page" in said(response)
    assert answers(erin_key) == 200
    assert AuditLogEntry.objects.get(action="member.removed").detail["api_keys_kept"] == 1


@pytest.mark.parametrize("role", [roles.ADMIN, roles.VIEWER])
def test_leaving_revokes_your_keys_even_if_you_ask_to_keep_them(login, org_a, role):
    # keep_keys is for those who manage keys deciding about someone else, not for the one leaving
    frank, [frank_key] = admin_with_keys(org_a, "frank@agency-a.test", 1)
    Membership.objects.filter(pk=frank.pk).update(role=role)

    response = remove(login(frank.user), org_a, frank, keep_keys="1")

    assert "The 1 API key they created was revoked." in said(response)
    assert answers(frank_key) == 401


def test_a_demoted_admins_read_write_key_does_no_more_than_they_now_may(login, alice, org_a):
    """A key acts as an admin only while its creator may act as one: demoted to viewer, their read-write
    key reads but writes nothing; demoted to member, it audits but cannot change the organization."""
    dora, [dora_key] = admin_with_keys(org_a, "dora@agency-a.test", 1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {dora_key}")
    assert client.get("/api/v1/organization/").json()["role"] == "admin"
    Membership.objects.filter(pk=dora.pk).update(role=roles.VIEWER)
    assert client.get("/api/v1/organization/").json()["role"] == "viewer"
    refused = client.post("/api/v1/sites/", {"hostname": "new.agency-a.test"}, format="json")
    assert refused.status_code == 403
    assert client.get("/api/v1/webhooks/").json()["results"] == [] and answers(dora_key) == 200
    Membership.objects.filter(pk=dora.pk).update(role=roles.MEMBER)
    assert client.post("/api/v1/sites/", {"hostname": "new.agency-a.test"}, format="json").status_code == 201
    assert client.put("/api/v1/digests/", {"frequency": "off", "recipients": []}, format="json").status_code == 403
    Membership.objects.filter(pk=dora.pk).update(role=roles.OWNER)
    assert client.get("/api/v1/organization/").json()["role"] == "admin", "a key never acts as an owner"


def test_lesser_role():
    assert roles.lesser(roles.ADMIN, roles.VIEWER) == roles.VIEWER
    assert roles.lesser(roles.OWNER, roles.ADMIN) == roles.ADMIN
    assert roles.lesser(roles.MEMBER, roles.MEMBER) == roles.MEMBER
