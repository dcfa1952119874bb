"""Migration audits/0006: every existing audit gets the service it audited, from its stored facts when it
has them, else from its site (queued and failed audits have no facts). Runs the real migrations."""

import pytest

from tests.support.migrations import latest, migrate
from tests.support.sites import added_site
from tlsaudit.audits.models import Audit

BEFORE = [("audits", "0005_audit_runner")]
AFTER = [("audits", "0006_audit_service")]


@pytest.mark.django_db(transaction=True)
def test_existing_audits_take_the_service_of_their_facts_else_of_their_site(org_a):
    mail = added_site(organization=org_a, hostname="mail.example.com", service="smtp", https_port=25)
    web = added_site(organization=org_a, hostname="www.example.com")
    old = migrate(BEFORE).get_model("audits", "Audit")
    failed = old.objects.create(site_id=mail.pk, organization_id=org_a.pk, status="failed", facts=None)
    scanned = old.objects.create(site_id=mail.pk, organization_id=org_a.pk, status="done", facts={"service": "smtps"})
    before_18 = old.objects.create(site_id=web.pk, organization_id=org_a.pk, status="done", facts={"host": "x"})

    migrate(AFTER)
    migrate(latest())   # back to today's models

    services = dict(Audit.objects.values_list("pk", "service"))
    assert services == {failed.pk: "smtp", scanned.pk: "smtps", before_18.pk: "https"}
