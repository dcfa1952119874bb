"""Fixtures of the scale tests: graded audits built from factory facts (no network), sites with
tags and history in any number, a finished performance run and probe in the workers' shapes."""

from datetime import timedelta

import pytest

from tests.domain.factories import make_facts
from tests.support.scale import T0
from tests.support.sites import added_site


@pytest.fixture
def graded_audit():
    """graded_audit(site, at=datetime, trigger="schedule", **make_facts kwargs) -> a done Audit, graded by
    the real rules, its rows written and the site's summary updated, as the audit task leaves them."""
    from tlsaudit.audits import services
    from tlsaudit.audits.models import Audit

    def make(site, at=T0, trigger="schedule", **facts_kwargs):
        audit = Audit.objects.create(site=site, organization=site.organization, status="running", trigger=trigger)
        audit.facts = make_facts(started_at=at, **facts_kwargs).to_dict()
        audit.status, audit.finished_at = "done", at
        services.apply_report(audit, save_fields=["facts", "status", "finished_at"])
        Audit.objects.filter(pk=audit.pk).update(created_at=at)
        services.update_site_summary(audit)
        return audit
    return make


@pytest.fixture
def failed_audit():
    from tlsaudit.audits import services
    from tlsaudit.audits.models import Audit

    def make(site, at=T0):
        audit = Audit.objects.create(site=site, organization=site.organization, status="running", trigger="schedule")
        Audit.objects.filter(pk=audit.pk).update(created_at=at)
        return services.fail(audit, "timeout", "No answer from the server within 3 s.")
    return make


@pytest.fixture
def history(graded_audit, failed_audit):
    """history(site, n) -> n nightly audits of the site (every fifth one drops TLS 1.0 back in, one failed)."""
    def make(site, n):
        audits = []
        for night in range(n):
            at = T0 + timedelta(days=night)
            if night == n // 2 and n > 2:
                audits.append(failed_audit(site, at))
                continue
            legacy = ("TLSv1.0", "TLSv1.2", "TLSv1.3") if night % 5 == 4 else ("TLSv1.2", "TLSv1.3")
            audits.append(graded_audit(site, at, protocols=legacy))
        return audits
    return make


@pytest.fixture
def many_sites(graded_audit):
    """many_sites(org, n) -> n sites, each with two tags and two done audits (so a trend and an expiry)."""
    from tlsaudit.sites.models import Tag

    def make(org, n):
        tags = [Tag.objects.get_or_create(organization=org, name=name)[0] for name in ("production", "eu", "shop")]
        sites = []
        for i in range(n):
            site = added_site(organization=org, hostname=f"site{i:03d}.example.com", name=f"Site {i}")
            site.tags.add(tags[i % 3], tags[(i + 1) % 3])
            graded_audit(site, T0)
            graded_audit(site, T0 + timedelta(days=1), protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3") if i % 2 else
                         ("TLSv1.2", "TLSv1.3"))
            sites.append(site)
        return sites
    return make


@pytest.fixture
def perf_runs():
    """perf_runs(site, n) -> n finished sweeps in the load workers' stored shape (tlsaudit.demo.perfdata)."""
    import random

    from tlsaudit.demo import perfdata
    from tlsaudit.loadtests.models import PerfRun

    def make(site, n, kind="sweep"):
        fields = perfdata.perf_run_fields(random.Random(n), kind, site.hostname, {"http": 80, "https": 443},
                                          "192.0.2.10", T0)
        return [PerfRun.objects.create(site=site, organization=site.organization, **fields) for _ in range(n)]
    return make


@pytest.fixture
def probes():
    """probes(site, n) -> n finished browser probes in the browser worker's stored shape."""
    import random

    from tlsaudit.demo import perfdata
    from tlsaudit.probes.models import Probe

    def make(site, n):
        return [Probe.objects.create(site=site, organization=site.organization,
                                     **perfdata.probe_fields(random.Random(i), site.hostname, "192.0.2.10", T0))
                for i in range(n)]
    return make
