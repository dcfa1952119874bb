"""Audit and probe rate limits: per organization per hour, per target (all organizations together)
per window. Refusals are RateLimited with a stable code and `retry_after` (the API's 429 + Retry-After);
the pages say what happened and how long to wait. Scheduled audits are never limited and never count."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.support.sites import added_site
from tlsaudit.audits.models import Audit
from tlsaudit.audits.services import AuditRateLimited, queue_audit
from tlsaudit.core.ratelimits import RateLimited
from tlsaudit.probes import services as probes
from tlsaudit.probes.models import Probe

pytestmark = pytest.mark.django_db


def past_audit(site, minutes_ago, trigger="manual", status="done"):
    audit = Audit.objects.create(site=site, organization=site.organization, trigger=trigger, status=status,
                                 host=site.hostname, port=site.https_port)
    Audit.objects.filter(pk=audit.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return audit


def past_probe(site, minutes_ago, status="done"):
    probe = Probe.objects.create(site=site, organization=site.organization, status=status, host=site.hostname)
    Probe.objects.filter(pk=probe.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return probe


@pytest.fixture
def shop_b(org_b, charlie):
    """Agency B monitors the very same server as Agency A's site_a."""
    return added_site(organization=org_b, hostname="shop.example.com", created_by=charlie)


@pytest.fixture
def more_sites(org_a):
    return [added_site(organization=org_a, hostname=f"s{n}.agency-a.test") for n in range(3)]


# --- audits ------------------------------------------------------------------------------------

def test_an_org_past_its_hourly_audits_is_refused_until_the_oldest_ages_out(alice, site_a, more_sites, settings):
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 2
    past_audit(more_sites[0], minutes_ago=50)
    past_audit(more_sites[1], minutes_ago=30)

    with pytest.raises(AuditRateLimited) as refusal:
        queue_audit(site_a, user=alice)

    assert isinstance(refusal.value, RateLimited) and refusal.value.code == "audits_per_org"
    assert 595 <= refusal.value.retry_after <= 600  # the audit of 50 minutes ago leaves the hour in 10
    assert refusal.value.message == ("Rate limit: your organization already started 2 audits in the last hour. "
                                     "Try again in 10 minutes.")
    assert Audit.objects.count() == 2


def test_audits_older_than_the_hour_do_not_count(alice, site_a, more_sites, settings):
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 2
    past_audit(more_sites[0], minutes_ago=61)
    past_audit(more_sites[1], minutes_ago=75)
    audit, created = queue_audit(site_a, user=alice)
    assert created and audit.status == "queued"


def test_a_target_audited_too_often_is_refused_to_every_org(alice, charlie, site_a, shop_b, settings):
    settings.AUDIT_LIMIT_PER_TARGET, settings.AUDIT_LIMIT_TARGET_MINUTES = 2, 10
    past_audit(site_a, minutes_ago=8)
    past_audit(site_a, minutes_ago=3)

    with pytest.raises(AuditRateLimited) as refusal:
        queue_audit(shop_b, user=charlie)  # another organization, the same host:port

    assert refusal.value.code == "audits_per_target"
    assert 115 <= refusal.value.retry_after <= 120
    assert "shop.example.com:443 was already audited 2 times" in refusal.value.message
    assert "in the last 10 minutes. Try again in 2 minutes." in refusal.value.message


def test_eight_names_pinned_to_one_address_share_its_limit(alice, org_a, settings):
    """#27: the limit counts the address:port the names point to, not the names: 8 names for one server
    got 8 of 8 audits, where the limit is 5 per 10 minutes."""
    settings.AUDIT_LIMIT_PER_TARGET, settings.AUDIT_LIMIT_TARGET_MINUTES = 5, 10
    sites = [added_site(organization=org_a, hostname=f"name{n}.shared-host.test", pinned_ip="198.51.100.7")
             for n in range(8)]

    for site in sites[:5]:
        assert queue_audit(site, user=alice)[1] is True
    with pytest.raises(AuditRateLimited) as refusal:
        queue_audit(sites[5], user=alice)

    assert refusal.value.code == "audits_per_target"
    assert "name5.shared-host.test:443 (198.51.100.7:443, under any name) was already audited 5 times" in (
        refusal.value.message)
    assert Audit.objects.filter(ip="198.51.100.7").count() == 5
    other_port = added_site(organization=org_a, hostname="name0.shared-host.test", https_port=8443,
                                     pinned_ip="198.51.100.7")
    assert queue_audit(other_port, user=alice)[1] is True      # another port of that address is another target


def test_another_port_of_the_same_host_is_another_target(alice, org_a, site_a, settings):
    settings.AUDIT_LIMIT_PER_TARGET = 1
    past_audit(site_a, minutes_ago=1)
    admin_port = added_site(organization=org_a, hostname="shop.example.com", https_port=8443)
    assert queue_audit(admin_port, user=alice)[1] is True


def test_api_audits_count_like_manual_ones(alice, site_a, more_sites, settings):
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 1
    past_audit(more_sites[0], minutes_ago=5, trigger="api")
    with pytest.raises(AuditRateLimited):
        queue_audit(site_a, user=alice, trigger=Audit.Trigger.API)


def test_scheduled_audits_are_never_limited_and_never_count(alice, site_a, more_sites, settings):
    settings.AUDIT_LIMIT_PER_ORG_HOUR = settings.AUDIT_LIMIT_PER_TARGET = 1
    past_audit(site_a, minutes_ago=1)             # the manual quota of the org and of the target is used up
    audit, created = queue_audit(site_a, trigger=Audit.Trigger.SCHEDULE)
    assert created and audit.trigger == "schedule"

    Audit.objects.filter(pk=audit.pk).update(status="done")
    Audit.objects.exclude(trigger="schedule").delete()
    for site in more_sites:                       # nightly run of every other site: no refusals
        assert queue_audit(site, trigger=Audit.Trigger.SCHEDULE)[1] is True
    Audit.objects.update(status="done")
    assert queue_audit(site_a, user=alice)[1] is True  # and the schedule used none of the manual quota


def test_an_active_audit_is_returned_even_past_the_limits(alice, site_a, settings):
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 1
    running = past_audit(site_a, minutes_ago=1, status="running")
    assert queue_audit(site_a, user=alice) == (running, False)


def test_the_audit_button_shows_the_refusal_and_creates_nothing(login, alice, org_a, site_a, settings):
    settings.AUDIT_LIMIT_PER_TARGET = 1
    past_audit(site_a, minutes_ago=2)

    response = login(alice).post(reverse("audits:run", args=[org_a.slug, site_a.pk]), follow=True)

    assert response.redirect_chain[-1][0] == site_a.get_absolute_url()
    assert "Rate limit: shop.example.com:443 was already audited 1 time " in response.content.decode()
    assert Audit.objects.count() == 1


def test_retrying_a_failed_audit_is_limited_too(login, alice, org_a, site_a, settings):
    settings.AUDIT_LIMIT_PER_TARGET = 1
    failed = past_audit(site_a, minutes_ago=1, status="failed")
    response = login(alice).post(reverse("audits:retry", args=[org_a.slug, site_a.pk, failed.pk]), follow=True)
    assert response.redirect_chain[-1][0] == failed.get_absolute_url()
    assert "Rate limit:" in response.content.decode() and Audit.objects.count() == 1


# --- browser probes ------------------------------------------------------------------------------

def test_an_org_past_its_hourly_probes_is_refused_with_429(login, alice, org_a, site_a, more_sites, settings):
    settings.PROBE_LIMIT_PER_ORG_HOUR = 2
    past_probe(more_sites[0], minutes_ago=40)
    past_probe(more_sites[1], minutes_ago=10)

    response = login(alice).post(reverse("probes:start", args=[org_a.slug, site_a.pk]), {"runs": 1})

    assert response.status_code == 429
    assert 1195 <= int(response["Retry-After"]) <= 1200
    assert ("Rate limit: your organization already ran 2 browser probes in the last hour. "
            "Try again in 20 minutes.") in response.content.decode()
    assert Probe.objects.count() == 2


def test_a_host_probed_too_often_is_refused_to_every_org(charlie, site_a, shop_b, settings):
    settings.PROBE_LIMIT_PER_TARGET, settings.PROBE_LIMIT_TARGET_MINUTES = 1, 30
    past_probe(site_a, minutes_ago=29)

    with pytest.raises(probes.ProbeRateLimited) as refusal:
        probes.queue_probe(shop_b, {"runs": 1}, user=charlie)

    # Still a ProbeRefused, so every existing caller of queue_probe handles it.
    assert isinstance(refusal.value, probes.ProbeRefused) and isinstance(refusal.value, RateLimited)
    assert refusal.value.code == "probes_per_target" and 55 <= refusal.value.retry_after <= 60
    assert "shop.example.com was already probed 1 time " in refusal.value.message


def test_probes_out_of_the_window_do_not_count(alice, site_a, settings, django_capture_on_commit_callbacks):
    settings.PROBE_LIMIT_PER_TARGET, settings.PROBE_LIMIT_TARGET_MINUTES = 1, 30
    past_probe(site_a, minutes_ago=31)
    with django_capture_on_commit_callbacks(execute=False):
        assert probes.queue_probe(site_a, {"runs": 1}, user=alice).status == "queued"


def test_the_worker_counts_the_address_a_name_resolved_to_when_the_web_could_not(alice, org_a, settings):
    """A name whose DNS answered slowly (or elsewhere) when the audit was queued escapes the web's count
    by address; the worker counts the address it resolved before it sends anything (#27)."""
    from tlsaudit.audits.services import over_target_limit

    settings.AUDIT_LIMIT_PER_TARGET, settings.AUDIT_LIMIT_TARGET_MINUTES = 5, 10
    sites = [added_site(organization=org_a, hostname=f"name{n}.attacker.test") for n in range(7)]
    for site in sites[:5]:
        past_audit(site, minutes_ago=2).__class__.objects.filter(site=site).update(ip="198.51.100.8")
    sneaky = Audit.objects.create(site=sites[5], organization=org_a, host=sites[5].hostname, port=443)
    nightly = Audit.objects.create(site=sites[6], organization=org_a, host=sites[6].hostname, port=443,
                                   trigger="schedule")

    refusal = over_target_limit(sneaky, "198.51.100.8", 443)

    assert refusal.startswith("Rate limit: 198.51.100.8:443, where name5.attacker.test points, was already "
                              "audited 5 times in the 10 minutes before this audit was asked for")
    assert over_target_limit(sneaky, "198.51.100.9", 443) is None        # another address
    assert over_target_limit(sneaky, "198.51.100.8", 8443) is None       # another port
    assert over_target_limit(nightly, "198.51.100.8", 443) is None       # scheduled audits are never limited
