"""Alerts reach someone by default (#30 item 8): the creator, or whoever they name when creating the
organization; organizations from before get their owners; the page says when nobody receives them."""

import pytest
from django.urls import reverse

from tests.support.migrations import latest, migrate
from tlsaudit.alerts.models import AlertSettings
from tlsaudit.orgs.models import Organization


@pytest.mark.django_db
def test_the_creator_receives_alerts_unless_they_name_someone_else(login, charlie):
    client = login(charlie)
    page = client.get(reverse("orgs:create")).content.decode()
    assert 'value="charlie@agency-b.test"' in page and "Alerts go to" in page
    client.post(reverse("orgs:create"), {"name": "Agency C", "alert_email": "charlie@agency-b.test"})
    client.post(reverse("orgs:create"), {"name": "Agency D", "alert_email": "ops@agency-d.test"})
    client.post(reverse("orgs:create"), {"name": "Agency E", "alert_email": ""})
    recipients = {s.organization.name: s.recipients for s in AlertSettings.objects.select_related("organization")}
    assert recipients == {"Agency C": ["charlie@agency-b.test"], "Agency D": ["ops@agency-d.test"], "Agency E": []}


@pytest.mark.django_db
def test_a_bad_address_is_refused_and_nothing_is_created(login, charlie):
    response = login(charlie).post(reverse("orgs:create"), {"name": "Agency C", "alert_email": "not an address"})
    assert response.status_code == 200 and "Enter a valid email address" in response.content.decode()
    assert not Organization.objects.filter(name="Agency C").exists()


@pytest.mark.django_db
def test_the_alerts_page_says_when_nobody_receives_them(login, alice, bob, org_a):
    AlertSettings.objects.create(organization=org_a, recipients=[])
    for user, action in ((alice, "Add a recipient below."), (bob, "An owner or admin can add one.")):
        page = login(user).get(reverse("alerts:settings", args=[org_a.slug])).content.decode()
        assert 'data-testid="no-recipients">Nobody receives these alerts by email' in page and action in page
    AlertSettings.objects.filter(organization=org_a).update(recipients=["alice@agency-a.test"])
    page = login(alice).get(reverse("alerts:settings", args=[org_a.slug])).content.decode()
    assert "no-recipients" not in page


@pytest.mark.django_db(transaction=True)
def test_organizations_from_before_get_their_owners_and_a_saved_choice_is_kept(org_a, org_b):
    migrate([("alerts", "0006_renewal_moved_kind")])
    AlertSettings.objects.create(organization=org_b, recipients=[])  # saved, with nobody: a choice
    migrate([("alerts", "0007_owners_receive_alerts")])
    migrate(latest())
    assert AlertSettings.objects.get(organization=org_a).recipients == ["alice@agency-a.test"]
    assert AlertSettings.objects.get(organization=org_b).recipients == []


@pytest.mark.django_db
def test_the_settings_page_does_not_ask_where_alerts_go(login, alice, org_a):
    """Asked on creation only: the settings form inherits the creation form, not its alert field."""
    page = login(alice).get(reverse("orgs:settings", args=[org_a.slug])).content.decode()
    assert "Alerts go to" not in page and 'name="alert_email"' not in page
