"""API keys and clients for tests: a key of an organization, a client that sends it, an error's body."""

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


def error_of(response) -> dict:
    """The error body, after checking the shape every API error shares."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "fields"}, body
    assert body["error"]["message"], body
    return body["error"]
