"""A webhook's signing secret is shown once, in the response that created it (not cached by the
browser), then never again: not on the page, not to viewers, not in the admin, not in any log line or
audit-log entry, not in a failed delivery's error. Deliveries are real POSTs to a receiver on 127.0.0.1."""

import logging

import pytest
from django.urls import reverse

from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.core.models import AuditLogEntry
from workers.tasks.alerts import deliver_webhook

pytestmark = pytest.mark.django_db


def create_hook(client, org, url):
    response = client.post(reverse("alerts:add_webhook", args=[org.slug]), {"url": url})
    return response, Webhook.objects.get(organization=org)


def test_the_one_page_with_the_secret_is_not_stored_by_the_browser(login, alice, org_a, webhook_receiver):
    response, hook = create_hook(login(alice), org_a, webhook_receiver.url)
    assert hook.secret in response.content.decode()
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


def test_after_creation_nobody_sees_the_secret_again(login, alice, bob, org_a, webhook_receiver, admin_client):
    _, hook = create_hook(login(alice), org_a, webhook_receiver.url)
    pages = [login(alice).get(reverse("alerts:settings", args=[org_a.slug])),
             login(bob).get(reverse("alerts:settings", args=[org_a.slug])),
             login(alice).get(reverse("audit_log", args=[org_a.slug])),
             admin_client.get(reverse("admin:alerts_webhook_change", args=[hook.pk])),
             admin_client.get(reverse("admin:alerts_webhook_changelist"))]
    for response in pages:
        assert response.status_code == 200
        assert hook.secret not in response.content.decode()
        assert hook.secret[6:26] not in response.content.decode()  # nor a long piece of it


def test_deliveries_sign_with_the_secret_but_never_log_it(login, alice, org_a, webhook_receiver, caplog,
                                                         django_capture_on_commit_callbacks):
    caplog.set_level(logging.DEBUG)
    _, hook = create_hook(login(alice), org_a, webhook_receiver.url)
    webhook_receiver.statuses.append(500)  # the first attempt fails: its error is stored and logged
    with django_capture_on_commit_callbacks(execute=False):
        login(alice).post(reverse("alerts:test_webhook", args=[org_a.slug, hook.pk]))
    deliver_webhook.apply(args=[WebhookDelivery.objects.get().pk])

    headers, _ = webhook_receiver.requests[0]
    assert headers["X-TLSAudit-Signature"].startswith("sha256=")  # the secret was used, as an HMAC key
    stored = [(d.error, d.response_code) for d in WebhookDelivery.objects.all()]
    entries = [(e.target, e.detail) for e in AuditLogEntry.objects.all()]
    for text in (caplog.text, str(stored), str(entries)):
        assert hook.secret not in text and hook.secret[6:26] not in text
