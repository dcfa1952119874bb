"""Every API response is `Cache-Control: no-store` (issue 14, item 7): it carries one organization's
data for one key or session, so no browser, proxy or CDN cache may keep it. Successes, CSV streams,
errors of every kind, the public schema; existing directives (the webhook secret's) are kept."""

import pytest
from rest_framework.test import APIClient

from tests.api.test_webhooks import HOOK_URL
from tests.support.api import client_with, make_key
from tlsaudit.api import keys

pytestmark = pytest.mark.django_db


def directives(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


def test_every_kind_of_api_answer_is_no_store(org_a, site_a):
    api = client_with(make_key(org_a)[1])
    read_only = client_with(make_key(org_a, keys.READ_ONLY)[1])
    answers = {
        "list": api.get("/api/v1/sites/"),
        "detail": api.get(f"/api/v1/sites/{site_a.pk}/"),
        "csv stream": api.get("/api/v1/sites/", {"format": "csv"}),
        "csv object": api.get(f"/api/v1/sites/{site_a.pk}/", {"format": "csv"}),
        "created": api.post("/api/v1/sites/", {"hostname": "new.example.com"}, format="json"),
        "invalid": api.post("/api/v1/sites/", {"hostname": ""}, format="json"),
        "bad query": api.get("/api/v1/sites/", {"fields": "nope"}),
        "not found": api.get("/api/v1/sites/999999/"),
        "no route": api.get("/api/v1/no-such-thing/"),
        "method": api.put("/api/v1/organization/", {}, format="json"),
        "read-only key": read_only.post("/api/v1/sites/", {"hostname": "ro.example.com"}, format="json"),
        "no key": APIClient().get("/api/v1/sites/"),
        "schema": APIClient().get("/api/v1/schema/"),
    }
    assert {name: r.status_code for name, r in answers.items()} == {
        "list": 200, "detail": 200, "csv stream": 200, "csv object": 200, "created": 201, "invalid": 422,
        "bad query": 400, "not found": 404, "no route": 404, "method": 405, "read-only key": 403, "no key": 401,
        "schema": 200}
    assert [name for name, r in answers.items() if "no-store" not in directives(r)] == []


def test_the_webhook_secret_answer_keeps_its_own_directives(org_a):
    api = client_with(make_key(org_a)[1])
    response = api.post("/api/v1/webhooks/", {"url": HOOK_URL}, format="json")
    assert response.status_code == 201
    assert {"no-store", "no-cache", "must-revalidate", "private"} <= directives(response)


def test_pages_outside_the_api_are_not_touched(client, db):
    assert "no-store" not in directives(client.get("/"))   # the landing page
