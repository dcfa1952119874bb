"""Security and speed side by side on the site's page (#26 item 6): each recommendation of the latest
audit with its grade effect and its effect on a visitor's time, from the site's own probe and
handshake run where they measured it."""

import pytest
from django.urls import reverse

from tests.test_audit_views import done_audit
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.probes.models import Probe

pytestmark = pytest.mark.django_db


def site_page(login, user, site):
    return login(user).get(reverse("sites:detail", args=[site.organization.slug, site.pk])).content.decode()


def probed(site, rtt_ms=48.0, redirect_ms=97.5):
    return Probe.objects.create(
        site=site, organization=site.organization, status="done", params={"path": "/", "runs": 5, "seconds": 20},
        result={"rtt": {"rtt_ms": rtt_ms}, "loads": []},
        summary={"summary": {"http_cold": {"redirect": {"median": redirect_ms}, "samples": 5},
                             "https_cold": {"requests": {"median": 8}, "protocol": "h2", "samples": 5}}})


def test_each_recommendation_shows_its_grade_and_the_visitor_time_at_the_probes_rtt(login, alice, site_a):
    done_audit(site_a, protocols=("TLSv1.2",), hsts_max_age=None)
    probe = probed(site_a)

    page = site_page(login, alice, site_a)

    assert 'data-testid="side-by-side"' in page
    assert f"−48 ms: 1 round trip at the 48.0 ms RTT measured by browser probe #{probe.pk}" in page   # TLS 1.3
    assert "−98 ms per visit that starts on plain HTTP" in page and f"browser probe #{probe.pk}" in page  # HSTS
    assert page.count("estimated</span>") >= 1 and page.count("measured</span>") >= 1


def test_the_sites_handshake_run_is_the_measured_side_of_tls13(login, alice, site_a):
    done_audit(site_a, protocols=("TLSv1.2",))
    run = PerfRun.objects.create(
        site=site_a, organization=site_a.organization, kind="handshakes", status="done", params={}, results=[],
        summary={"stats_version": 0, "versions": [
            {"family": "all", "agents": 50, "tls12_p50_ms": 180.0, "tls13_p50_ms": None},
            {"family": "all", "agents": 10, "tls12_p50_ms": 101.2, "tls13_p50_ms": None}]})
    PerfRun.objects.filter(pk=run.pk).update(summary={**run.summary, "stats_version": summary_version()})

    page = site_page(login, alice, site_a)

    assert f"TLS 1.2 full handshakes take 101.2 ms (median, handshake run #{run.pk}, 10 agents)" in page


def test_without_measurements_every_figure_is_an_estimate_that_says_what_would_measure_it(login, alice, site_a):
    done_audit(site_a, protocols=("TLSv1.2",))

    page = site_page(login, alice, site_a)

    assert "a browser probe measures this site&#x27;s round trip time" in page
    assert "measured</span>" not in page


def test_no_audit_no_card(login, alice, site_a):
    assert 'data-testid="side-by-side"' not in site_page(login, alice, site_a)


def summary_version():
    from tlsaudit.loadtests.summaries import SUMMARY_VERSION

    return SUMMARY_VERSION


def test_the_audit_report_shows_the_same_visitor_time_beside_each_recommendations_grade(login, alice, site_a):
    audit = done_audit(site_a, protocols=("TLSv1.2",))
    probe = probed(site_a)

    page = login(alice).get(reverse("audits:detail", args=[site_a.organization.slug, site_a.pk, audit.pk]))

    text = page.content.decode()
    assert 'data-testid="visitor-proto.enable_tls13"' in text
    assert f"1 round trip at the 48.0 ms RTT measured by browser probe #{probe.pk}" in text
