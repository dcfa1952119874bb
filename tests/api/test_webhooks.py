"""Webhooks over the API: the dashboard form's URL checks, the secret shown once, the audit log,
a test delivery POSTed by a real worker to a real local receiver, and deliveries listed."""

import csv
import hashlib
import hmac
import html
import io

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests.api.factories import queries_of
from tests.support.api import error_of
from tests.support.waiting import eventually as wait_for
from tlsaudit.alerts.forms import MAX_WEBHOOKS, WebhookForm
from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.core.models import AuditLogEntry

WEBHOOKS = "/api/v1/webhooks/"
HOOK_URL = "https://127.0.0.1:8443/hooks/tlsaudit"   # private: allowed in the tests' development mode


def detail(hook) -> str:
    return f"/api/v1/webhooks/{hook.pk}/"


def make_hook(org, url=HOOK_URL, **fields) -> Webhook:
    return Webhook.objects.create(organization=org, url=url, **fields)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [h["id"] for h in response.json()["results"]]


# --- create, read -----------------------------------------------------------------------------

def test_creating_a_webhook_returns_its_secret_once(api, org_a):
    response = api.post(WEBHOOKS, {"url": HOOK_URL}, format="json")
    assert response.status_code == 201, response.content
    hook = Webhook.objects.get()
    body = response.json()
    assert (body["url"], body["active"], body["secret"]) == (HOOK_URL, True, hook.secret)
    assert body["secret"].startswith("whsec_") and body["secret_hint"] == hook.secret_hint
    assert response["Location"] == body["api_url"] == detail(hook)
    assert "no-store" in response["Cache-Control"]
    # Never again: not in the webhook, not in the list, not in the CSV.
    assert "secret" not in api.get(detail(hook)).json()
    assert "secret" not in api.get(WEBHOOKS).json()["results"][0]
    assert hook.secret not in b"".join(api.get(WEBHOOKS, {"format": "csv"}).streaming_content).decode()


def test_creating_and_deleting_are_in_the_audit_log_without_the_path(api, org_a):
    hook_id = api.post(WEBHOOKS, {"url": "https://127.0.0.1:8443/services/T0/B0/token?x=1"},
                       format="json").json()["id"]
    assert api.delete(f"/api/v1/webhooks/{hook_id}/").status_code == 204
    entries = list(AuditLogEntry.objects.filter(organization=org_a).order_by("id")
                   .values_list("action", "target", "actor_id"))
    assert entries == [("webhook.created", "https://127.0.0.1:8443", None),
                       ("webhook.deleted", "https://127.0.0.1:8443", None)]
    assert all("agency-a write" in e.detail.get("via", "") for e in AuditLogEntry.objects.all())
    assert not Webhook.objects.exists()


def test_a_webhook_can_start_inactive(api):
    response = api.post(WEBHOOKS, {"url": HOOK_URL, "active": False}, format="json")
    assert response.status_code == 201 and Webhook.objects.get().active is False


@pytest.mark.parametrize("body, field", [
    ({}, "url"), ({"url": ""}, "url"), ({"url": "not a url"}, "url"), ({"url": "ftp://127.0.0.1/x"}, "url"),
    ({"url": "https://user:pw@127.0.0.1/x"}, "url"), ({"url": "https://127.0.0.1:99999/x"}, "url"),
    ({"url": "https://nowhere.invalid/x"}, "url"), ({"url": "https://127.0.0.1/" + "a" * 500}, "url"),
    ({"url": HOOK_URL, "active": "sometimes"}, "active"),
])
def test_fields_are_validated_like_the_dashboard_form(api, body, field):
    response = api.post(WEBHOOKS, body, format="json")
    assert response.status_code == 422 and field in error_of(response)["fields"], response.content
    assert not Webhook.objects.exists()


def test_in_production_only_public_https_urls_are_accepted(api, settings):
    settings.DEV_MODE, settings.ALLOW_PRIVATE_TARGETS = False, False
    for url, message in (("http://127.0.0.1/hook", "Use an https:// URL."),
                         ("https://127.0.0.1/hook", "webhooks only go to public addresses"),
                         ("https://[::1]/hook", "webhooks only go to public addresses"),
                         ("https://10.1.2.3/hook", "webhooks only go to public addresses")):
        response = api.post(WEBHOOKS, {"url": url}, format="json")
        assert response.status_code == 422, url
        assert message in error_of(response)["fields"]["url"][0], (url, error_of(response))
    assert not Webhook.objects.exists()


def test_an_organization_has_at_most_ten_webhooks(api, org_a):
    for index in range(MAX_WEBHOOKS):
        make_hook(org_a, f"https://127.0.0.1:8443/hook/{index}")
    response = api.post(WEBHOOKS, {"url": HOOK_URL}, format="json")
    assert response.status_code == 422 and "at most 10 webhooks" in error_of(response)["fields"]["url"][0]
    # Editing one of the ten is still fine.
    hook = Webhook.objects.first()
    assert api.patch(detail(hook), {"url": "https://127.0.0.1:9443/new"}, format="json").status_code == 200


def test_the_same_receiver_twice_is_refused_on_the_api_and_the_dashboard(api, org_a, org_b, login, alice):
    """Two webhooks to one URL send each event twice under two secrets with one event id (#37 item 8)."""
    make_hook(org_a)
    for again in (HOOK_URL, "HTTPS://127.0.0.1:8443/hooks/tlsaudit", "https://127.0.0.1:8443/hooks/tlsaudit "):
        response = api.post(WEBHOOKS, {"url": again}, format="json")
        assert response.status_code == 409, (again, response.content)
        error = error_of(response)
        assert error["code"] == "duplicate_webhook" and "already sends to this URL" in error["message"], error
    page = login(alice).post(reverse("alerts:add_webhook", args=[org_a.slug]), {"url": HOOK_URL})
    assert page.status_code == 400 and "already sends to this URL" in html.unescape(page.content.decode())
    assert Webhook.objects.filter(organization=org_a).count() == 1

    # Another path is another receiver; another organization may use the same one
    other = api.post(WEBHOOKS, {"url": f"{HOOK_URL}/eu"}, format="json")
    assert other.status_code == 201, other.content
    assert WebhookForm({"url": HOOK_URL}, org=org_b).is_valid()
    # Moving one onto the other's URL is the same duplicate; keeping its own URL is not
    moved = f"/api/v1/webhooks/{other.json()['id']}/"
    assert api.patch(moved, {"url": HOOK_URL}, format="json").status_code == 409
    assert api.patch(moved, {"url": f"{HOOK_URL}/eu"}, format="json").status_code == 200


def test_a_read_only_key_sees_each_webhooks_origin_and_not_its_path(api, api_ro, org_a):
    """A Slack or Teams webhook URL is itself the credential: a read-only key (as a viewer) reads
    `https://host/…`, in JSON and in the CSV export; a read-write key reads it whole (#37 item 5)."""
    hook = make_hook(org_a, "https://127.0.0.1:8443/services/T0/B0/s3cret-token")
    listed = api_ro.get(WEBHOOKS).json()["results"][0]
    assert listed["url"] == "https://127.0.0.1:8443/…" and listed["secret_hint"] == hook.secret_hint
    assert api_ro.get(detail(hook)).json()["url"] == "https://127.0.0.1:8443/…"
    exported = b"".join(api_ro.get(WEBHOOKS, {"format": "csv"}).streaming_content).decode()
    assert "s3cret-token" not in exported and "https://127.0.0.1:8443/…" in exported
    assert api.get(detail(hook)).json()["url"] == hook.url


def test_the_list_exports_as_csv_and_keeps_only_the_named_fields(api, org_a, org_b):
    hook = make_hook(org_a)
    make_hook(org_b)
    for response in (api.get(WEBHOOKS, {"format": "csv"}), api.get(WEBHOOKS, HTTP_ACCEPT="text/csv")):
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert [(r["id"], r["url"], r["active"]) for r in rows] == [(str(hook.pk), HOOK_URL, "True")]
    assert api.get(WEBHOOKS, {"fields": "id,url"}).json()["results"] == [{"id": hook.pk, "url": HOOK_URL}]
    assert api.get(detail(hook), {"fields": "active"}).json() == {"active": True}
    response = api.get(WEBHOOKS, {"fields": "secret"})
    assert response.status_code == 400 and "fields" in error_of(response)["fields"]


def test_lists_cost_the_same_queries_for_3_or_25_rows(api, org_a, django_assert_max_num_queries):
    hook = make_hook(org_a)
    for _ in range(3):
        make_hook(org_a)
        WebhookDelivery.objects.create(webhook=hook, status="ok", response_code=200)
    urls = (WEBHOOKS, f"{detail(hook)}deliveries/")
    few = {url: queries_of(api, url) for url in urls}
    Webhook.objects.bulk_create([Webhook(organization=org_a, url=HOOK_URL) for _ in range(21)])
    WebhookDelivery.objects.bulk_create([WebhookDelivery(webhook=hook, status="failed") for _ in range(22)])
    for url, count in few.items():
        with django_assert_max_num_queries(count):
            assert len(api.get(url, {"page_size": 50}).json()["results"]) == 25


# --- change, delete ---------------------------------------------------------------------------

def test_a_webhook_can_be_turned_off_and_moved(api, org_a):
    hook = make_hook(org_a)
    secret = hook.secret
    response = api.patch(detail(hook), {"active": False}, format="json")
    assert response.status_code == 200 and response.json()["active"] is False
    response = api.patch(detail(hook), {"url": "https://127.0.0.1:9443/v2"}, format="json")
    assert response.status_code == 200 and response.json()["url"] == "https://127.0.0.1:9443/v2"
    hook.refresh_from_db()
    assert (hook.url, hook.active, hook.secret) == ("https://127.0.0.1:9443/v2", False, secret)
    assert "secret" not in response.json()


@pytest.mark.parametrize("body, field", [({"url": "ftp://x"}, "url"), ({"url": ""}, "url"),
                                         ({"active": "off-ish"}, "active")])
def test_changes_are_validated(api, org_a, body, field):
    hook = make_hook(org_a)
    response = api.patch(detail(hook), body, format="json")
    assert response.status_code == 422 and field in error_of(response)["fields"]
    hook.refresh_from_db()
    assert (hook.url, hook.active) == (HOOK_URL, True)


# --- test deliveries ----------------------------------------------------------------------------

def test_a_test_delivery_is_queued_with_202(api, org_a, django_capture_on_commit_callbacks):
    hook = make_hook(org_a)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api.post(f"{detail(hook)}test/")
    assert response.status_code == 202, response.content
    delivery = WebhookDelivery.objects.get()
    assert (delivery.webhook, delivery.event, delivery.status) == (hook, None, "pending")
    assert response.json()["kind"] == "test" and response["Location"] == f"{detail(hook)}deliveries/"
    assert len(callbacks) == 1


def test_an_idempotency_key_sends_one_test(api, org_a):
    hook = make_hook(org_a)
    for _ in range(2):
        response = api.post(f"{detail(hook)}test/", HTTP_IDEMPOTENCY_KEY="check-1")
        assert response.status_code == 202
    assert response["Idempotency-Replayed"] == "true" and WebhookDelivery.objects.count() == 1


def test_deliveries_are_listed_newest_first_and_filtered(api, org_a):
    hook = make_hook(org_a)
    ok = WebhookDelivery.objects.create(webhook=hook, status="ok", response_code=200, duration_ms=12)
    failed = WebhookDelivery.objects.create(webhook=hook, status="failed", response_code=500, error="HTTP 500")
    url = f"{detail(hook)}deliveries/"
    assert ids(api.get(url)) == [failed.pk, ok.pk]
    assert ids(api.get(url, {"status": "ok"})) == [ok.pk]
    assert api.get(url, {"status": "lost"}).status_code == 400
    rows = list(csv.DictReader(io.StringIO(b"".join(api.get(url, {"format": "csv"}).streaming_content).decode())))
    assert [(r["kind"], r["response_code"]) for r in rows] == [("test", "500"), ("test", "200")]
    assert api.get(url, {"fields": "id,status"}).json()["results"][0] == {"id": failed.pk, "status": "failed"}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_test_delivery_reaches_the_receiver_signed(api, org_a, webhook_receiver, start_worker_on):  # noqa: F811
    created = api.post(WEBHOOKS, {"url": webhook_receiver.url}, format="json").json()
    start_worker_on(["default"])
    response = api.post(f"/api/v1/webhooks/{created['id']}/test/")
    assert response.status_code == 202
    assert wait_for(lambda: WebhookDelivery.objects.filter(status="ok").exists())
    headers, body = webhook_receiver.requests[0]
    expected = "sha256=" + hmac.new(created["secret"].encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-TLSAudit-Signature"], expected)
    assert webhook_receiver.json()["kind"] == "test" and webhook_receiver.json()["organization"] == org_a.slug
    [delivery] = api.get(response["Location"]).json()["results"]
    assert (delivery["status"], delivery["response_code"], delivery["kind"]) == ("ok", 200, "test")


# --- who may ------------------------------------------------------------------------------------

def test_a_read_only_key_reads_but_cannot_change_anything(api_ro, org_a):
    hook = make_hook(org_a)
    for method, url in (("post", WEBHOOKS), ("patch", detail(hook)), ("delete", detail(hook)),
                        ("post", f"{detail(hook)}test/")):
        response = getattr(api_ro, method)(url, {"url": HOOK_URL, "active": False}, format="json")
        assert response.status_code == 403 and error_of(response)["code"] == "read_only_key", (method, url)
    hook.refresh_from_db()
    assert hook.active and Webhook.objects.count() == 1 and not WebhookDelivery.objects.exists()
    assert ids(api_ro.get(WEBHOOKS)) == [hook.pk] and api_ro.get(detail(hook)).status_code == 200


def test_members_below_admin_cannot_manage_webhooks_by_session(org_a, alice, bob):
    hook = make_hook(org_a)
    client = APIClient()
    client.force_login(bob)   # a viewer
    assert client.get(WEBHOOKS).status_code == 200
    response = client.post(WEBHOOKS, {"url": HOOK_URL}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "forbidden"
    client.force_login(alice)   # the owner
    assert client.delete(detail(hook)).status_code == 204
    assert AuditLogEntry.objects.get(action="webhook.deleted").actor == alice


def test_agency_b_gets_404_for_agency_a_webhooks(api_b, org_a):
    hook = make_hook(org_a)
    for method, url in (("get", detail(hook)), ("patch", detail(hook)), ("delete", detail(hook)),
                        ("post", f"{detail(hook)}test/"), ("get", f"{detail(hook)}deliveries/")):
        response = getattr(api_b, method)(url, {"active": False}, format="json") if method != "get" \
            else api_b.get(url)
        assert response.status_code == 404 and error_of(response)["code"] == "not_found", (method, url)
    assert ids(api_b.get(WEBHOOKS)) == []
    hook.refresh_from_db()
    assert hook.active and not WebhookDelivery.objects.exists()
