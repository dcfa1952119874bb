"""The signed one-click unsubscribe link in alert emails: GET confirms, POST removes the address
from its organization's recipients; a changed, foreign or expired token is refused with 400."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import signing
from django.urls import reverse
from django.utils import timezone

from tlsaudit.alerts import services
from tlsaudit.alerts.models import AlertEvent, AlertSettings

pytestmark = pytest.mark.django_db


@pytest.fixture
def prefs(org_a):
    return AlertSettings.objects.create(organization=org_a, recipients=["ops@agency-a.test", "cto@agency-a.test"])


def link_for(org, address):
    return reverse("alerts:unsubscribe", args=[org.slug, services.unsubscribe_token(address, org.pk)])


@time_machine.travel("2026-11-22 06:00:00 +0000", tick=False)
def test_each_alert_email_carries_its_recipients_own_link(prefs, site_a, mailoutbox, settings):
    # Frozen clock: the token carries a timestamp in seconds, and the email and the expected link
    # are made at different moments (they differed once, across a second boundary).
    AlertEvent.objects.create(organization=site_a.organization, site=site_a, kind="certificate_changed",
                              dedupe_key="cert:1", title="Certificate changed",
                              payload={"old": {"not_after": "2026-01-01"}, "new": {"not_after": "2027-01-01"}})
    assert services.email_pending() == 1
    assert len(mailoutbox) == 2
    for message in mailoutbox:
        [to] = message.to
        link = settings.SITE_URL + link_for(site_a.organization, to)
        assert f"Stop alerts to this address (one click): {link}" in message.body
        [(html, _)] = message.alternatives
        assert f'href="{link}"' in html
        path = re.search(r"one click\): \S+?(/o/\S+)", message.body).group(1)
        assert services.read_unsubscribe_token(path.rstrip("/").rsplit("/", 1)[1]) == (to, site_a.organization.pk)


def test_get_confirms_and_changes_nothing_then_post_removes_only_that_address(client, prefs, org_a):
    url = link_for(org_a, "OPS@agency-a.test")  # the address is matched without case
    response = client.get(url)  # anonymous: the token is the credential
    page = response.content.decode()
    assert response.status_code == 200 and 'data-testid="unsubscribe-confirm"' in page
    assert "ops@agency-a.test" in page and 'data-testid="unsubscribe-form"' in page
    prefs.refresh_from_db()
    assert prefs.recipients == ["ops@agency-a.test", "cto@agency-a.test"]

    response = client.post(url)  # no CSRF token needed: mail clients POST it (RFC 8058)
    assert response.status_code == 200
    assert "no longer receives alert emails from Agency A" in response.content.decode()
    prefs.refresh_from_db()
    assert prefs.recipients == ["cto@agency-a.test"]

    again = client.post(url)  # a second click is harmless
    assert again.status_code == 200 and "was not an alert recipient" in again.content.decode()
    prefs.refresh_from_db()
    assert prefs.recipients == ["cto@agency-a.test"]


def test_one_click_post_works_without_a_csrf_token(prefs, org_a):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert strict.post(link_for(org_a, "ops@agency-a.test")).status_code == 200
    prefs.refresh_from_db()
    assert prefs.recipients == ["cto@agency-a.test"]


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_tampered_token_is_refused_with_400(client, prefs, org_a, method):
    token = services.unsubscribe_token("ops@agency-a.test", org_a.pk)
    tampered = token[:-3] + ("AAA" if token[-3:] != "AAA" else "BBB")
    forged = signing.dumps({"email": "ops@agency-a.test", "org": org_a.pk})  # right data, wrong salt
    for bad in (tampered, forged, "nonsense"):
        response = getattr(client, method)(reverse("alerts:unsubscribe", args=[org_a.slug, bad]))
        assert response.status_code == 400
        assert "This unsubscribe link is not valid" in response.content.decode()
    prefs.refresh_from_db()
    assert prefs.recipients == ["ops@agency-a.test", "cto@agency-a.test"]


def test_a_token_of_another_organization_is_refused(client, prefs, org_a, org_b):
    AlertSettings.objects.create(organization=org_b, recipients=["ops@agency-a.test"])
    token_b = services.unsubscribe_token("ops@agency-a.test", org_b.pk)
    response = client.post(reverse("alerts:unsubscribe", args=[org_a.slug, token_b]))
    assert response.status_code == 400 and "not valid" in response.content.decode()
    prefs.refresh_from_db()
    assert "ops@agency-a.test" in prefs.recipients
    assert AlertSettings.objects.get(organization=org_b).recipients == ["ops@agency-a.test"]


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_expired_token_is_refused_with_400(client, prefs, org_a, method):
    url = link_for(org_a, "ops@agency-a.test")
    later = timezone.now() + timedelta(seconds=services.UNSUBSCRIBE_MAX_AGE + 60)
    with time_machine.travel(later, tick=False):
        response = getattr(client, method)(url)
    assert response.status_code == 400
    assert "This unsubscribe link has expired" in response.content.decode()
    prefs.refresh_from_db()
    assert prefs.recipients == ["ops@agency-a.test", "cto@agency-a.test"]
    # Within its lifetime it still works.
    with time_machine.travel(timezone.now() + timedelta(days=80), tick=False):
        assert client.post(url).status_code == 200
    prefs.refresh_from_db()
    assert prefs.recipients == ["cto@agency-a.test"]


def test_other_methods_are_refused(client, org_a):
    assert client.put(link_for(org_a, "ops@agency-a.test")).status_code == 405
