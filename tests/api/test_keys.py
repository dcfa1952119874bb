"""API keys: created and revoked in the dashboard, shown once, stored hashed, Bearer only."""

import pytest
from django.urls import reverse

from tests.support.api import client_with, error_of, make_key
from tlsaudit.api import keys
from tlsaudit.api.models import ApiKey
from tlsaudit.core.models import AuditLogEntry


def test_it_shows_a_new_key_once_and_stores_only_its_hash(client, alice, org_a):
    client.force_login(alice)
    response = client.post(reverse("api_keys:create", args=[org_a.slug]),
                           {"name": "CRM sync", "scope": "rw", "rate_per_minute": ""})
    assert response.status_code == 200
    plaintext = response.context["plaintext"]
    assert plaintext.startswith("tlaw_") and plaintext in response.content.decode()
    assert response["Cache-Control"] == "no-store"
    key = ApiKey.objects.get(organization=org_a)
    assert key.digest == keys.digest_of(plaintext) and plaintext not in key.digest
    again = client.get(reverse("api_keys:list", args=[org_a.slug]))
    assert plaintext not in again.content.decode()
    assert key.display_prefix in again.content.decode()
    entry = AuditLogEntry.objects.get(action="api_key.created")
    assert plaintext not in str(entry.detail) and entry.detail["key_prefix"] == key.display_prefix


@pytest.mark.parametrize("data, field, message", [
    ({"name": "", "scope": "rw"}, "name", "required"),
    ({"name": "x", "scope": "admin"}, "scope", "valid choice"),
    ({"name": "x", "scope": "ro", "rate_per_minute": "0"}, "rate_per_minute", "greater than or equal to 1"),
    ({"name": "x", "scope": "ro", "rate_per_minute": "many"}, "rate_per_minute", "whole number"),
])
def test_it_explains_bad_key_forms(client, alice, org_a, data, field, message):
    client.force_login(alice)
    response = client.post(reverse("api_keys:create", args=[org_a.slug]), data)
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not ApiKey.objects.exists()


def test_it_refuses_a_second_active_key_with_the_same_name(client, alice, org_a):
    make_key(org_a, name="CRM")
    client.force_login(alice)
    response = client.post(reverse("api_keys:create", args=[org_a.slug]), {"name": "CRM", "scope": "ro"})
    assert response.status_code == 400
    assert "already has this name" in response.context["form"].errors["name"][0]


def test_it_revokes_a_key_and_the_key_then_gets_401(client, alice, org_a):
    key, plaintext = make_key(org_a)
    assert client_with(plaintext).get("/api/v1/sites/").status_code == 200
    client.force_login(alice)
    client.post(reverse("api_keys:revoke", args=[org_a.slug, key.pk]))
    response = client_with(plaintext).get("/api/v1/sites/")
    assert response.status_code == 401
    assert error_of(response)["message"] == "This API key was revoked."
    assert AuditLogEntry.objects.filter(action="api_key.revoked", organization=org_a).count() == 1


def test_it_lets_only_owners_and_admins_manage_keys(client, bob, charlie, org_a, org_b):
    client.force_login(bob)   # viewer
    assert client.get(reverse("api_keys:list", args=[org_a.slug])).status_code == 403
    assert client.post(reverse("api_keys:create", args=[org_a.slug]), {"name": "x", "scope": "rw"}).status_code == 403
    client.force_login(charlie)   # another organization
    key, _ = make_key(org_a)
    assert client.get(reverse("api_keys:list", args=[org_a.slug])).status_code == 404
    assert client.post(reverse("api_keys:revoke", args=[org_a.slug, key.pk])).status_code == 404
    key.refresh_from_db()
    assert key.is_active


def test_it_does_not_revoke_another_organizations_key_through_its_own_url(client, charlie, org_a, org_b):
    key, _ = make_key(org_a)
    client.force_login(charlie)
    assert client.post(reverse("api_keys:revoke", args=[org_b.slug, key.pk])).status_code == 404


@pytest.mark.parametrize("header, message", [
    ("Bearer", "Send the key as"),
    ("Bearer a b", "Send the key as"),
    ("Bearer tlaw_notakey", "not valid"),
    ("Bearer tlaw_0123456789_" + "x" * 40, "not valid"),
])
def test_it_answers_401_for_bad_authorization(db, header, message):
    from rest_framework.test import APIClient

    response = APIClient().get("/api/v1/sites/", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert message in error_of(response)["message"]


def test_it_answers_401_without_credentials(db):
    from rest_framework.test import APIClient

    response = APIClient().get("/api/v1/sites/")
    assert response.status_code == 401
    assert error_of(response)["code"] == "not_authenticated"


def test_it_rejects_a_key_whose_secret_part_was_altered(org_a):
    _, plaintext = make_key(org_a)
    forged = plaintext[:-1] + ("A" if plaintext[-1] != "A" else "B")
    assert client_with(forged).get("/api/v1/sites/").status_code == 401


def test_it_records_when_a_key_was_last_used(org_a):
    key, plaintext = make_key(org_a)
    assert key.last_used_at is None
    client_with(plaintext).get("/api/v1/organization/")
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_it_throttles_a_key_at_its_own_rate_with_retry_after(org_a):
    _, plaintext = make_key(org_a, rate_per_minute=3)
    client = client_with(plaintext)
    codes = [client.get("/api/v1/organization/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    response = client.get("/api/v1/organization/")
    assert error_of(response)["code"] == "throttled"
    assert 1 <= int(response["Retry-After"]) <= 60


def test_it_throttles_keys_independently(org_a):
    _, slow = make_key(org_a, name="slow", rate_per_minute=1)
    _, other = make_key(org_a, name="other", rate_per_minute=1)
    assert client_with(slow).get("/api/v1/organization/").status_code == 200
    assert client_with(slow).get("/api/v1/organization/").status_code == 429
    assert client_with(other).get("/api/v1/organization/").status_code == 200


def test_key_format_is_recognisable_and_parseable():
    new = keys.generate(keys.READ_ONLY)
    assert new.plaintext.startswith("tlar_")
    assert keys.parse(new.plaintext) == (keys.READ_ONLY, new.lookup)
    assert keys.parse("tlaw_" + new.plaintext[5:]) == (keys.READ_WRITE, new.lookup)
    assert keys.parse("ghp_" + "x" * 36) is None
    assert keys.matches(new.plaintext, new.digest) and not keys.matches(new.plaintext + "x", new.digest)
