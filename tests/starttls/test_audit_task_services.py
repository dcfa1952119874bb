"""A site that is a STARTTLS service, audited by a real Celery worker over the real Redis (#18 item 3):
the task hands the site's service to the engine, which scans the mail server, not an HTTPS one."""

import pytest

from tests.support import waiting
from tests.support.sites import added_site
from tlsaudit.audits import services

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_the_worker_audits_an_smtp_site_over_starttls(audit_worker, alice, org_a, smtp_servers, service_pki):
    org_a.custom_ca_pem = service_pki.ca_file.read_text()
    org_a.save()
    site = added_site(organization=org_a, hostname="localhost", https_port=smtp_servers["smtp"],
                               pinned_ip="127.0.0.1", service="smtp")

    audit, _ = services.queue_audit(site, user=alice)
    audit = waiting.wait_finished(audit, 60.0, lambda a: a.progress[-3:])

    assert audit.status == "done", audit.error_message
    assert (audit.grade, audit.protocols) == ("A", ["TLSv1.2", "TLSv1.3"])
    assert audit.facts["service"] == "smtp" and audit.service == "smtp"   # the column the API's compact object shows
    assert audit.facts["hsts_check"]["status"] == "not_applicable"
