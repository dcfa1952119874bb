"""Audits run by a real Celery worker over the real Redis against real TLS servers."""

import time

import pytest
from django.urls import reverse

from tests.hostile import closed_port, tarpit
from tests.support import waiting
from tests.support.sites import added_site
from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from workers.celery import app

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def lab_site(org, tls_lab, name, **extra):
    return added_site(organization=org, hostname="localhost", https_port=tls_lab.port(name),
                               pinned_ip="127.0.0.1", **extra)


def wait_finished(audit, timeout=60.0) -> Audit:
    return waiting.wait_finished(audit, timeout, lambda a: a.progress[-3:])


def test_audit_now_runs_on_the_worker_and_stores_grade_and_results(audit_worker, login, alice, lab_org, tls_lab):
    site = lab_site(lab_org, tls_lab, "b_tls10_enabled")
    client = login(alice)
    response = client.post(reverse("audits:run", args=[lab_org.slug, site.pk]))
    audit = Audit.objects.get(site=site)
    assert response["Location"] == audit.get_absolute_url()
    audit = wait_finished(audit)
    assert audit.status == "done", audit.error_message
    assert (audit.grade, audit.score, audit.ip) == ("B", 91, "127.0.0.1")
    assert audit.protocols == ["TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"]
    # Normalised rows a user (or the API) can query.
    assert audit.findings.get(finding_id="proto.tls10").status == "fail"
    assert audit.suites.filter(protocol="TLSv1.2", forward_secret=True).count() == 5
    assert audit.certificates.filter(position=0).get().subject.startswith("CN=localhost")
    # Progress was recorded check by check, and the site shows the latest grade.
    names = [step["name"] for step in audit.progress]
    assert "tls_1_2_cipher_suites" in names and "mozilla" in names
    site.refresh_from_db()
    assert (site.last_grade, site.last_audit_id) == ("B", audit.pk)
    page = client.get(audit.get_absolute_url()).content.decode()
    assert 'data-testid="audit-grade">B<' in page and "hx-trigger" not in page


def test_a_second_request_while_one_is_active_returns_the_same_audit(audit_worker, alice, lab_org, tls_lab):
    site = lab_site(lab_org, tls_lab, "a_plus_rsa_hsts")
    first, created = services.queue_audit(site, user=alice)
    second, created_again = services.queue_audit(site, user=alice)
    assert created and not created_again and first.pk == second.pk
    assert wait_finished(first).grade == "A+"


def test_a_retried_delivery_does_not_run_an_audit_twice(audit_worker, alice, lab_org, tls_lab):
    site = lab_site(lab_org, tls_lab, "a_tls12_13_no_hsts")
    audit, _ = services.queue_audit(site, user=alice)
    audit = wait_finished(audit)
    finished_at = audit.finished_at
    # a duplicate delivery of the same task, asking for its result: the worker has handled it when .get() returns
    duplicate = app.send_task(services.AUDIT_TASK, args=[audit.pk], ignore_result=False)
    assert duplicate.get(timeout=30) == "skipped"
    audit.refresh_from_db()
    assert (audit.status, audit.finished_at, audit.attempts) == ("done", finished_at, 1)


@pytest.mark.parametrize("kind, code, message", [
    ("closed", "refused", "refused the connection"),
    ("plain_http", "no_tls", "does not speak TLS"),
    ("nxdomain", "dns", "does not resolve"),
])
def test_bad_targets_end_as_failed_audits_with_a_clear_message(audit_worker, alice, lab_org, tls_lab, kind, code,
                                                              message):
    site = {
        "closed": lambda: added_site(organization=lab_org, hostname="localhost", https_port=closed_port(),
                                              pinned_ip="127.0.0.1"),
        "plain_http": lambda: added_site(organization=lab_org, hostname="localhost",
                                                  https_port=tls_lab.http_port("a_plus_rsa_hsts"),
                                                  pinned_ip="127.0.0.1"),
        "nxdomain": lambda: added_site(organization=lab_org, hostname="no-such-site.invalid"),
    }[kind]()
    started = time.monotonic()
    audit = wait_finished(services.queue_audit(site, user=alice)[0], timeout=45)
    assert (audit.status, audit.error_code) == ("failed", code)
    assert message in audit.error_message
    assert time.monotonic() - started < 30
    site.refresh_from_db()
    assert (site.last_audit_status, site.last_grade) == ("failed", "")


def test_a_silent_server_fails_within_a_minute_and_the_worker_goes_on(audit_worker, alice, lab_org, tls_lab, settings):
    settings.SCAN_NETWORK_TIMEOUT = 2
    with tarpit() as port:
        silent = added_site(organization=lab_org, hostname="localhost", https_port=port,
                                     pinned_ip="127.0.0.1")
        started = time.monotonic()
        audit = wait_finished(services.queue_audit(silent, user=alice)[0], timeout=60)
        elapsed = time.monotonic() - started
    assert (audit.status, audit.error_code) == ("failed", "timeout")
    assert audit.error_message.startswith(f"No answer from 127.0.0.1:{port} within 2 s: the port accepts "
                                          "connections but never answers the TLS handshake")
    assert elapsed < 60
    # The same worker takes the next audit.
    good = lab_site(lab_org, tls_lab, "a_plus_rsa_hsts")
    assert wait_finished(services.queue_audit(good, user=alice)[0]).status == "done"


def test_private_targets_are_refused_when_the_guard_is_on(audit_worker, alice, lab_org, tls_lab, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    site = lab_site(lab_org, tls_lab, "a_plus_rsa_hsts")
    audit = wait_finished(services.queue_audit(site, user=alice)[0], timeout=20)
    assert (audit.status, audit.error_code) == ("failed", "private_target")
    assert "127.0.0.1" in audit.error_message


def test_two_audits_of_the_same_server_never_run_at_once(audit_worker, alice, lab_org, tls_lab):
    # Two sites (two organizations could own the same server) pointing at one ip:port.
    other = added_site(organization=lab_org, hostname="localhost", https_port=tls_lab.port("b_cbc_only"),
                                pinned_ip="127.0.0.1", name="again")
    site = added_site(organization=lab_org, hostname="127.0.0.1", https_port=tls_lab.port("b_cbc_only"))
    first = services.queue_audit(site, user=alice)[0]
    second = services.queue_audit(other, user=alice)[0]
    first, second = wait_finished(first, 90), wait_finished(second, 90)
    assert first.status == second.status == "done"
    ordered = sorted([first, second], key=lambda a: a.started_at)
    assert ordered[0].finished_at <= ordered[1].started_at


def test_the_reaper_requeues_an_abandoned_audit_once_then_fails_it(audit_worker, alice, lab_org, tls_lab, settings):
    from django.utils import timezone

    site = lab_site(lab_org, tls_lab, "a_plus_rsa_hsts")
    stuck = Audit.objects.create(site=site, organization=lab_org, status="running", attempts=1,
                                 started_at=timezone.now() - timezone.timedelta(hours=1))
    assert services.reap_abandoned() == {"requeued": 1, "failed": 0, "not_started": 0, "resent": 0, "orphaned": 0}
    assert wait_finished(stuck).status == "done"
    twice = Audit.objects.create(site=site, organization=lab_org, status="running", attempts=2,
                                 started_at=timezone.now() - timezone.timedelta(hours=1))
    assert services.reap_abandoned() == {"requeued": 0, "failed": 1, "not_started": 0, "resent": 0, "orphaned": 0}
    twice.refresh_from_db()
    assert (twice.status, twice.error_code) == ("failed", "worker_lost")


def test_a_site_deleted_while_its_audit_is_queued_is_skipped_and_the_worker_goes_on(start_audit_worker, alice,
                                                                                  lab_org, tls_lab,
                                                                                  django_capture_on_commit_callbacks):
    doomed = lab_site(lab_org, tls_lab, "b_cbc_only")
    with django_capture_on_commit_callbacks(execute=True):
        queued, _ = services.queue_audit(doomed, user=alice)  # the task message is in Redis now
    doomed.delete()  # the audit row goes with its site
    assert not Audit.objects.filter(pk=queued.pk).exists()
    start_audit_worker()
    good = lab_site(lab_org, tls_lab, "a_plus_rsa_hsts")
    assert wait_finished(services.queue_audit(good, user=alice)[0]).status == "done"
