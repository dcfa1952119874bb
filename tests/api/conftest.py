"""API personas: a read-write and a read-only key of Agency A, a read-write key of Agency B."""

import pytest
from rest_framework.test import APIClient

from tlsaudit.api import keys
from tlsaudit.api.models import ApiKey


def make_key(org, scope=keys.READ_WRITE, name=None, **extra) -> tuple[ApiKey, str]:
    new = keys.generate(scope)
    key = ApiKey.objects.create(organization=org, name=name or f"{scope} key", scope=scope, lookup=new.lookup,
                                digest=new.digest, **extra)
    return key, new.plaintext


def client_with(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


@pytest.fixture
def rw_key(org_a):
    return make_key(org_a, keys.READ_WRITE, "agency-a write")


@pytest.fixture
def ro_key(org_a):
    return make_key(org_a, keys.READ_ONLY, "agency-a read")


@pytest.fixture
def api(rw_key):
    """Agency A with a read-write key."""
    return client_with(rw_key[1])


@pytest.fixture
def api_ro(ro_key):
    """Agency A with a read-only key."""
    return client_with(ro_key[1])


@pytest.fixture
def api_b(org_b):
    """Agency B with a read-write key: every Agency A object must answer 404 to it."""
    return client_with(make_key(org_b, keys.READ_WRITE, "agency-b write")[1])


def error_of(response) -> dict:
    """The error body, after checking the shape every API error shares."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "fields"}, body
    assert body["error"]["message"], body
    return body["error"]
