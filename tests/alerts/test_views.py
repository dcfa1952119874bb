"""The alerts page: owners manage recipients and webhooks, viewers read, outsiders get 404."""

import pytest
from django.urls import reverse

from tlsaudit.alerts.models import AlertEvent, AlertSettings, Webhook, WebhookDelivery
from workers.tasks.alerts import deliver_webhook

pytestmark = pytest.mark.django_db


def page(org):
    return reverse("alerts:settings", args=[org.slug])


def save_settings(client, org, recipients="", kinds=("grade_dropped",), share=67, backstop=7):
    return client.post(page(org), {"recipients": recipients, "kinds": list(kinds), "renewal_share_pct": share,
                                   "backstop_days": backstop})


def add_webhook(client, org, url):
    return client.post(reverse("alerts:add_webhook", args=[org.slug]), {"url": url})


def field_error(response, name):
    return response.context[("webhook_form" if name == "url" else "form")].errors[name]


def test_alice_saves_recipients_and_event_kinds(login, alice, org_a):
    response = save_settings(login(alice), org_a, "Ops@Agency-a.test, cto@agency-a.test\nops@agency-a.test",
                             kinds=["grade_dropped", "certificate_expiring"])
    assert response.status_code == 302
    prefs = AlertSettings.objects.get(organization=org_a)
    assert prefs.recipients == ["ops@agency-a.test", "cto@agency-a.test"]
    assert prefs.kinds == ["grade_dropped", "certificate_expiring"]
    assert "ops@agency-a.test\ncto@agency-a.test" in login(alice).get(page(org_a)).content.decode()


def test_alice_sets_when_an_unrenewed_certificate_alerts(login, alice, bob, org_a):
    assert save_settings(login(alice), org_a, share=80, backstop=0).status_code == 302
    prefs = AlertSettings.objects.get(organization=org_a)
    assert (prefs.renewal_share_pct, prefs.backstop_days) == (80, 0)
    assert prefs.expiry_policy().renewal_share == 0.8
    page_for_bob = login(bob).get(page(org_a)).content.decode()
    assert "an alert once 80% of a certificate's lifetime is used" in page_for_bob
    assert "days before expiry" not in page_for_bob   # the backstop is off
    response = save_settings(login(alice), org_a, share=30, backstop=90)
    assert response.status_code == 400
    assert field_error(response, "renewal_share_pct") == ["Ensure this value is greater than or equal to 50."]
    assert field_error(response, "backstop_days") == ["Ensure this value is less than or equal to 60."]
    assert AlertSettings.objects.get(organization=org_a).renewal_share_pct == 80   # nothing lost


def test_a_bad_recipient_is_a_form_error(login, alice, org_a):
    response = save_settings(login(alice), org_a, "ops@agency-a.test, not-an-address")
    assert response.status_code == 400
    assert field_error(response, "recipients") == ["Not an email address: not-an-address."]
    assert 'data-testid="error-recipients"' in response.content.decode()


def test_more_than_20_recipients_is_a_form_error(login, alice, org_a):
    response = save_settings(login(alice), org_a, " ".join(f"r{n}@agency-a.test" for n in range(21)))
    assert field_error(response, "recipients") == ["At most 20 recipients (21 given)."]


def test_an_unknown_event_kind_is_a_form_error(login, alice, org_a):
    response = save_settings(login(alice), org_a, kinds=["grade_dropped", "moon_phase"])
    assert response.status_code == 400
    assert "moon_phase is not one of the available choices" in field_error(response, "kinds")[0]


def test_a_webhook_secret_is_shown_once_then_only_its_last_four(login, alice, org_a, webhook_receiver):
    client = login(alice)
    response = add_webhook(client, org_a, webhook_receiver.url)
    hook = Webhook.objects.get(organization=org_a)
    assert hook.secret.startswith("whsec_") and len(hook.secret) > 40
    assert hook.secret in response.content.decode()
    later = client.get(page(org_a)).content.decode()
    assert hook.secret not in later and f"whsec_…{hook.secret[-4:]}" in later


@pytest.mark.parametrize("url,error", [
    ("", "This field is required."),
    ("not a url", "Enter a valid URL."),
    ("ftp://hooks.example.com/x", "Enter an https:// URL."),
    ("https://hooks.invalid/x", "hooks.invalid does not resolve."),
    ("https://user:pw@hooks.example.com/x", "Enter a URL with a host name and no user name or password."),
])
def test_a_bad_webhook_url_is_a_form_error(login, alice, org_a, url, error):
    response = add_webhook(login(alice), org_a, url)
    assert response.status_code == 400
    assert field_error(response, "url") == [error]
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("url,error", [
    ("https://127.0.0.1/hook", "127.0.0.1 is a loopback address (this machine): webhooks only go to public addresses."),
    ("https://localhost/hook", "localhost points to 127.0.0.1, a loopback address (this machine): "
                               "webhooks only go to public addresses."),
    ("https://10.1.2.3/hook", "10.1.2.3 is a private address (RFC 1918): webhooks only go to public addresses."),
    ("https://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe is an IPv6 form of 169.254.169.254 (IPv4-mapped), which is the cloud "
                                          "metadata address 169.254.169.254: webhooks only go to public addresses."),
])
def test_a_private_webhook_address_is_refused_in_production(login, alice, org_a, settings, url, error):
    settings.ALLOW_PRIVATE_TARGETS = False
    response = add_webhook(login(alice), org_a, url)
    assert field_error(response, "url") == [error]


def test_plain_http_is_refused_in_production_but_allowed_in_dev(login, alice, org_a, settings, webhook_receiver):
    settings.DEV_MODE = False
    response = add_webhook(login(alice), org_a, webhook_receiver.url)
    assert field_error(response, "url") == ["Use an https:// URL."]
    settings.DEV_MODE = True
    assert add_webhook(login(alice), org_a, webhook_receiver.url).status_code == 200


def test_an_org_has_at_most_ten_webhooks(login, alice, org_a, webhook_receiver):
    Webhook.objects.bulk_create([Webhook(organization=org_a, url=webhook_receiver.url) for _ in range(10)])
    response = add_webhook(login(alice), org_a, webhook_receiver.url)
    assert field_error(response, "url") == ["An organization can have at most 10 webhooks."]


def test_send_test_delivers_a_signed_test_body_and_shows_in_the_log(login, alice, org_a, webhook_receiver,
                                                                     django_capture_on_commit_callbacks):
    hook = Webhook.objects.create(organization=org_a, url=webhook_receiver.url)
    client = login(alice)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("alerts:test_webhook", args=[org_a.slug, hook.pk]))
    assert response.status_code == 302 and len(callbacks) == 1
    deliver_webhook.apply(args=[WebhookDelivery.objects.get().pk])
    assert webhook_receiver.json()["kind"] == "test"
    log = client.get(page(org_a)).content.decode()
    assert 'data-testid="delivery-log"' in log and "Delivered" in log and "<td>200" in log


def test_alice_deletes_a_webhook(login, alice, org_a):
    hook = Webhook.objects.create(organization=org_a, url="https://hooks.example.com/x")
    response = login(alice).post(reverse("alerts:delete_webhook", args=[org_a.slug, hook.pk]))
    assert response.status_code == 302 and not Webhook.objects.exists()


def test_bob_the_viewer_reads_but_cannot_change_anything(login, bob, org_a):
    AlertSettings.objects.create(organization=org_a, recipients=["ops@agency-a.test"])
    hook = Webhook.objects.create(organization=org_a, url="https://hooks.example.com/x")
    client = login(bob)
    body = client.get(page(org_a)).content.decode()
    assert "Recipients: 1 " in body and "Only owners and admins" in body and "Send test" not in body
    assert hook.secret not in body
    assert save_settings(client, org_a, "evil@example.com").status_code == 403
    assert add_webhook(client, org_a, "https://hooks.example.com/y").status_code == 403
    assert client.post(reverse("alerts:delete_webhook", args=[org_a.slug, hook.pk])).status_code == 403
    assert client.post(reverse("alerts:test_webhook", args=[org_a.slug, hook.pk])).status_code == 403
    assert AlertSettings.objects.get().recipients == ["ops@agency-a.test"] and Webhook.objects.count() == 1


def test_charlie_gets_404_for_agency_a_alerts(login, charlie, org_a, org_b):
    hook = Webhook.objects.create(organization=org_a, url="https://hooks.example.com/x")
    client = login(charlie)
    assert client.get(page(org_a)).status_code == 404
    assert save_settings(client, org_a, "evil@example.com").status_code == 404
    assert add_webhook(client, org_a, "https://hooks.example.com/y").status_code == 404
    # His own org in the URL, A's webhook id: still 404.
    assert client.post(reverse("alerts:delete_webhook", args=[org_b.slug, hook.pk])).status_code == 404
    assert client.post(reverse("alerts:test_webhook", args=[org_b.slug, hook.pk])).status_code == 404
    assert Webhook.objects.count() == 1


def test_the_org_settings_page_links_to_alerts(login, alice, org_a):
    assert f'href="{page(org_a)}"' in login(alice).get(reverse("orgs:settings", args=[org_a.slug])).content.decode()


def test_a_viewer_sees_where_alerts_go_but_not_the_webhook_paths_or_the_addresses(login, alice, bob, org_a):
    """A Slack or Teams webhook URL is itself the credential, and the agency's client (a viewer) has no use
    for its staff's addresses (#37 item 5)."""
    AlertSettings.objects.update_or_create(organization=org_a, defaults={"recipients": ["ops@agency-a.test"]})
    hook = Webhook.objects.create(organization=org_a, url="https://127.0.0.1:8443/services/T0/B0/s3cret-token")
    WebhookDelivery.objects.create(webhook=hook, status=WebhookDelivery.Status.OK, response_code=200)

    viewer_page = login(bob).get(page(org_a)).content.decode()
    assert "s3cret-token" not in viewer_page and "ops@agency-a.test" not in viewer_page
    assert viewer_page.count("https://127.0.0.1:8443/…") == 2       # the webhook and its delivery
    assert "Recipients: 1 (their addresses are shown to the organization's members)" in viewer_page

    owner_page = login(alice).get(page(org_a)).content.decode()
    assert owner_page.count("s3cret-token") == 2 and "ops@agency-a.test" in owner_page


def test_a_failed_alert_emails_reason_is_not_shown_to_a_viewer(login, alice, bob, org_a, site_a):
    # SMTP refusals name the recipients: "SMTPRecipientsRefused: {'ops@agency-a.test': (550, …)}"
    AlertEvent.objects.create(organization=org_a, site=site_a, kind="grade_dropped", dedupe_key="k",
                              title="Grade dropped from A to B",
                              email_error="SMTPRecipientsRefused: {'ops@agency-a.test': (550, b'no such user')}")
    viewer_page = login(bob).get(page(org_a)).content.decode()
    assert "ops@agency-a.test" not in viewer_page and "Email failed, will retry" in viewer_page
    assert "ops@agency-a.test" in login(alice).get(page(org_a)).content.decode()
