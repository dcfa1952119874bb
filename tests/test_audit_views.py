"""The audit pages: who may start one, live progress by htmx polling, the report, failures."""

from dataclasses import replace
from datetime import datetime, timezone

import pytest
from django.urls import reverse

from tests.domain.factories import deployment, make_facts
from tlsaudit.audits import services
from tlsaudit.audits.models import Audit
from tlsaudit.domain.scanfacts import OCSP_RESPONDER, REVOKED, Revocation

pytestmark = pytest.mark.django_db


def make_audit(site, status="queued", **fields):
    return Audit.objects.create(site=site, organization=site.organization, status=status, **fields)


def done_audit(site, **facts_kwargs):
    audit = make_audit(site, status="running")
    audit.facts = make_facts(**facts_kwargs).to_dict()
    audit.status = "done"
    services.apply_report(audit, save_fields=["facts", "status"])
    return audit


def detail_url(audit):
    return reverse("audits:detail", args=[audit.site.organization.slug, audit.site_id, audit.pk])


def test_alice_starts_an_audit_and_lands_on_its_progress_page(login, alice, site_a, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = login(alice).post(reverse("audits:run", args=[site_a.organization.slug, site_a.pk]))
    audit = Audit.objects.get(site=site_a)
    assert (audit.status, audit.trigger, audit.requested_by) == ("queued", "manual", alice)
    assert response["Location"] == audit.get_absolute_url()
    assert len(callbacks) == 1  # the task is sent only once the row is committed


def test_a_second_click_returns_the_running_audit(login, alice, site_a):
    running = make_audit(site_a, status="running")
    client = login(alice)
    response = client.post(reverse("audits:run", args=[site_a.organization.slug, site_a.pk]), follow=True)
    assert response.redirect_chain[-1][0] == running.get_absolute_url()
    assert Audit.objects.filter(site=site_a).count() == 1
    assert "already queued or running" in response.content.decode()


def test_an_unverified_user_is_asked_to_verify_first(login, alice, site_a):
    alice.email_verified = False
    alice.save()
    response = login(alice).post(reverse("audits:run", args=[site_a.organization.slug, site_a.pk]), follow=True)
    assert "Verify your email address before running audits" in response.content.decode()
    assert not Audit.objects.exists()


def test_bob_the_viewer_cannot_start_or_retry_but_can_read(login, bob, site_a):
    failed = make_audit(site_a, status="failed", error_code="refused", error_message="Port 443 refused")
    client = login(bob)
    assert client.post(reverse("audits:run", args=[site_a.organization.slug, site_a.pk])).status_code == 403
    assert client.post(reverse("audits:retry", args=[site_a.organization.slug, site_a.pk, failed.pk])).status_code == 403
    page = client.get(detail_url(failed)).content.decode()
    assert "Port 443 refused" in page and "Retry the audit" not in page


def test_charlie_gets_404_for_agency_a_audits(login, charlie, site_a, site_b):
    audit = make_audit(site_a, status="failed")
    client = login(charlie)
    org_a = site_a.organization.slug
    assert client.get(detail_url(audit)).status_code == 404
    assert client.post(reverse("audits:run", args=[org_a, site_a.pk])).status_code == 404
    assert client.post(reverse("audits:retry", args=[org_a, site_a.pk, audit.pk])).status_code == 404
    # His own org and site in the URL, A's audit id: still 404.
    assert client.get(reverse("audits:detail", args=[site_b.organization.slug, site_b.pk, audit.pk])).status_code == 404


def test_progress_polls_until_done_then_the_report_stops_polling(login, alice, site_a):
    audit = make_audit(site_a, status="running", progress=[{"name": "resolve", "status": "done", "t": 0.01},
                                                           {"name": "tls_1_3_cipher_suites", "status": "done", "t": 1}])
    client = login(alice)
    partial = client.get(detail_url(audit), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="audit-body"')
    assert 'hx-trigger="every 2s"' in partial and "tls_1_3_cipher_suites" in partial
    assert 'aria-valuenow="7"' in partial  # 2 of 28 steps
    audit.facts = make_facts().to_dict()
    audit.status = "done"
    services.apply_report(audit, save_fields=["facts", "status"])
    final = client.get(detail_url(audit), HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in final
    assert 'data-testid="audit-grade">A+<' in final


def test_the_report_explains_the_grade_and_the_fix(login, alice, site_a):
    audit = done_audit(site_a, protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"))
    page = login(alice).get(detail_url(audit)).content.decode()
    assert 'data-testid="audit-grade">B<' in page
    assert "TLS 1.0 and TLS 1.1 are supported (cap B since January 2020)" in page
    assert "Disable TLS 1.0 and TLS 1.1" in page
    assert 'data-testid="predicted-grade">A+<' in page
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in page
    assert 'id="scores-data"' in page  # chart data through json_script
    for section in ("mozilla", "protocols", "certificates", "findings", "recommendations"):
        assert f'data-testid="{section}"' in page, section


def test_the_report_shows_a_revoked_certificate_and_its_t_grade(login, alice, site_a):
    revoked = Revocation(REVOKED, method=OCSP_RESPONDER, source="http://ocsp.example/",
                         revocation_reason="key_compromise", revoked_at=datetime(2026, 2, 27, 9, 30, tzinfo=timezone.utc))
    audit = done_audit(site_a, cert=replace(deployment(), revocation=revoked))
    page = login(alice).get(detail_url(audit)).content.decode()
    assert 'data-testid="audit-grade">T<' in page
    assert ('Revocation: <span class="bad">revoked on 2026-02-27 09:30 UTC (key compromise), according to the '
            'OCSP responder http://ocsp.example/</span>') in page


def test_a_failed_audit_says_what_went_wrong_and_offers_a_retry(login, alice, site_a,
                                                                  django_capture_on_commit_callbacks):
    failed = make_audit(site_a, status="failed", error_code="dns",
                        error_message="The name shop.example.com does not resolve (DNS lookup failed).")
    client = login(alice)
    page = client.get(detail_url(failed)).content.decode()
    assert "does not resolve (DNS lookup failed)" in page and "Retry the audit" in page
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(reverse("audits:retry", args=[site_a.organization.slug, site_a.pk, failed.pk]))
    retry = Audit.objects.exclude(pk=failed.pk).get()
    assert response["Location"] == retry.get_absolute_url() and retry.status == "queued"


def test_only_failed_audits_can_be_retried(login, alice, site_a):
    done = done_audit(site_a)
    response = login(alice).post(reverse("audits:retry", args=[site_a.organization.slug, site_a.pk, done.pk]))
    assert response.status_code == 404


def test_the_site_page_and_list_show_the_latest_grade(login, alice, site_a):
    audit = done_audit(site_a, hsts_max_age=None)
    services.update_site_summary(audit)
    client = login(alice)
    detail = client.get(site_a.get_absolute_url()).content.decode()
    assert 'data-testid="grade-badge">A<' in detail and f">{audit.pk}</a>" in detail
    listing = client.get(reverse("sites:list", args=[site_a.organization.slug])).content.decode()
    assert '<span class="grade grade-A">A</span>' in listing


def test_regrade_rederives_stored_audits_from_their_inputs(site_a):
    from django.core.management import call_command

    from tlsaudit.domain.audit_report import RULES_VERSION

    audit = done_audit(site_a)
    findings = audit.findings.count()
    Audit.objects.filter(pk=audit.pk).update(grade="F", score=0, rules_version="old")
    audit.findings.all().delete()
    call_command("regrade")
    audit.refresh_from_db()
    assert (audit.grade, audit.score, audit.rules_version) == ("A+", 93, RULES_VERSION)
    assert audit.findings.count() == findings > 0


def test_an_audit_waiting_for_its_turn_at_a_shared_address_says_so_not_that_a_worker_is_missing(login, alice,
                                                                                                 site_a):
    note = services.turn_message("203.0.113.9", type("Place", (), {"ahead": 2, "waited_s": 75})())
    audit = make_audit(site_a, turn_note=note)

    body = login(alice).get(detail_url(audit)).content.decode()

    assert "Waiting for its turn…" in body and "Waiting for a worker" not in body
    assert ("Waiting for its turn at 203.0.113.9: TLS Audit audits one site per address at a time, each within "
            "5 connections to the address; 2 audits of other sites on that address are ahead of it. Waiting 1 minute "
            "so far; its own deadline starts with its turn.") in body


def test_the_mozilla_verdicts_name_their_guidelines_and_a_5_7_verdict_is_judged_again_on_6_0(login, alice, site_a):
    """An audit from before the move stored sslyze's 5.7 verdicts ("old" included, no version): its page
    says 5.7 until it is re-derived, and then our checker judges it on 6.0 (sslyze's 5.7 answer is not
    passed off as a 6.0 one)."""
    audit = done_audit(site_a)
    page = login(alice).get(detail_url(audit)).content.decode()
    assert 'data-testid="mozilla-guidelines">guidelines 6.0<' in page
    verdict_5_7 = {"compliant": True, "issues": {}, "error": ""}
    stored = {**audit.report, "mozilla": {name: verdict_5_7 for name in ("modern", "intermediate", "old")}}
    Audit.objects.filter(pk=audit.pk).update(report=stored, mozilla_raw=stored["mozilla"])
    page = login(alice).get(detail_url(audit)).content.decode()
    assert 'data-testid="mozilla-guidelines">guidelines 5.7<' in page and "<td>old</td>" in page
    audit.refresh_from_db()
    services.apply_report(audit, save_fields=[])
    mozilla = Audit.objects.get(pk=audit.pk).report["mozilla"]
    assert set(mozilla) == {"modern", "intermediate"}
    assert {v["source"] for v in mozilla.values()} == {"tlsaudit"}
    assert mozilla["modern"]["compliant"] is False  # an RSA certificate: 5.7's stored "True" is gone


def test_a_check_that_could_not_run_says_why_and_not_what_a_failure_would_mean(login, alice, site_a):
    """#30 item 6: "? Not tested: Certificate not revoked — The certificate's CA has revoked it …" read as a
    failure. A check that could not run shows its reason only."""
    audit = done_audit(site_a)
    untested = [f for f in audit.report["findings"] if f["status"] == "not_tested"]
    assert untested, "the factory's facts leave some checks untested"
    page = login(alice).get(detail_url(audit)).content.decode()
    for finding in untested:
        assert finding["explanation"] not in page.replace("&#x27;", "'"), finding["id"]
    assert page.count('data-testid="not-checked">Could not be checked: ') == len(untested)


def test_the_page_speaks_words_not_ids(login, alice, site_a):
    """#30 item 6: no rule or finding ids, no rules version in the text, and the trigger in words."""
    import re

    older = done_audit(site_a, protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"))
    Audit.objects.filter(pk=older.pk).update(finished_at=datetime(2026, 3, 1, tzinfo=timezone.utc))
    newer = done_audit(site_a)
    Audit.objects.filter(pk=newer.pk).update(finished_at=datetime(2026, 3, 2, tzinfo=timezone.utc))
    services.update_site_summary(Audit.objects.get(pk=newer.pk))
    client = login(alice)
    for url in (detail_url(newer), reverse("sites:detail", args=[site_a.organization.slug, site_a.pk]),
                reverse("monitoring:history", args=[site_a.organization.slug, site_a.pk])):
        page = re.sub(r"<pre.*?</pre>", " ", client.get(url).content.decode(), flags=re.S)   # config snippets
        text = re.sub(r"<[^>]+>", " ", page)
        assert not re.search(r"\b(cap|cert|proto|cipher|vuln|hsts|kx)\.[a-z_0-9]+\b", text), url
        assert "tlsaudit." not in text and "Audit now audit" not in text, url


def test_an_untrusted_chain_points_to_where_the_organizations_own_ca_is_added(login, alice, site_a):
    """#30 item 5: the advice to trust an internal CA links to the setting that does it."""
    untrusted = done_audit(site_a, certs=(deployment(trusted=False, error="unable to get local issuer "
                                                                            "certificate"),))
    page = login(alice).get(detail_url(untrusted)).content.decode()
    settings_url = reverse("orgs:settings", args=[site_a.organization.slug])
    assert page.count('data-testid="custom-ca-hint"') == 1
    assert f'href="{settings_url}#custom-ca"' in page
    trusted = done_audit(site_a)
    assert 'data-testid="custom-ca-hint"' not in login(alice).get(detail_url(trusted)).content.decode()
