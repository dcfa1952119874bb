"""Data for the fault tests, created inside an app process on the private database through the
product's own services (the test process never touches that database with the ORM).

Run by `App.django("from tests.faults.seed import ...; emit(...)")`: each function returns plain
data and `emit` prints it as the one JSON line the test reads back.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from tests.support.sites import added_site


def emit(value) -> None:
    print(json.dumps(value))


def owner(email: str, password: str, org_name: str, ca_file: str):
    from tlsaudit.accounts.models import User
    from tlsaudit.domain import roles
    from tlsaudit.orgs.models import Membership, Organization

    user = User.objects.create_user(email=email, password=password, email_verified=True)
    org = Organization.objects.create(name=org_name, custom_ca_pem=open(ca_file).read())
    Membership.objects.create(organization=org, user=user, role=roles.OWNER)
    return user, org


def lab_sites(ca_file: str, ports: list[int], orgs: int = 1, schedules: bool = False) -> dict:
    """Organizations trusting the TLS lab's CA, with one site per entry of `ports` spread over them
    (hostname localhost pinned to 127.0.0.1). New sites get a nightly schedule; turned off unless
    asked, so no nightly run fires in the middle of a test."""
    from tlsaudit.monitoring.schedules import update_schedule

    owners = [owner(f"owner{i}@faults.test", "correct horse battery staple", f"Faults {i}", ca_file)
              for i in range(orgs)]
    sites = []
    for index, port in enumerate(ports):
        user, org = owners[index % orgs]
        site = added_site(organization=org, hostname="localhost", https_port=port, pinned_ip="127.0.0.1",
                                   name=f"lab {index}", created_by=user)
        if not schedules:
            update_schedule(site.schedule, frequency="off", weekday=site.schedule.weekday)
        sites.append(site.pk)
    return {"sites": sites, "orgs": [org.slug for _, org in owners]}


def queue(site_ids: list[int]) -> dict:
    """Queue one audit per site, as the "Audit now" button does (sent to the broker on commit)."""
    from tlsaudit.audits.services import queue_audit
    from tlsaudit.sites.models import Site

    audits = {}
    for site in Site.objects.filter(pk__in=site_ids).order_by("pk"):
        audit, created = queue_audit(site)
        assert created
        audits[site.pk] = audit.pk
    return {"audits": audits}


def api_key(org_slug: str) -> str:
    """A read-write API key of the organization, created by its owner: its plaintext."""
    from tlsaudit.api.services import create_key
    from tlsaudit.orgs.models import Membership

    owner = Membership.objects.select_related("organization", "user").filter(organization__slug=org_slug).first()
    return create_key(owner.organization, name="faults", scope="rw", created_by=owner.user)[1]


def lab_audits(ca_file: str, ports: list[int], orgs: int = 1) -> dict:
    """lab_sites(), then one queued audit per site."""
    sites = lab_sites(ca_file, ports, orgs)
    return {**sites, **queue(sites["sites"])}


def nightly_at(site_id: int, due: str) -> dict:
    """Move the site's nightly schedule (and its beat entry) to `due` (ISO, UTC, whole minute), as if
    it had last run the night before: beat's entry remembers yesterday's run."""
    from django_celery_beat.models import PeriodicTask

    from tlsaudit.monitoring.models import SiteSchedule
    from tlsaudit.monitoring.schedules import sync_periodic_task

    moment = datetime.fromisoformat(due)
    schedule = SiteSchedule.objects.get(site_id=site_id)
    schedule.frequency, schedule.hour, schedule.minute = SiteSchedule.Frequency.NIGHTLY, moment.hour, moment.minute
    schedule.save()
    sync_periodic_task(schedule)
    # The schedule existed yesterday (the catch-up sweep looks at that) and so did its last run.
    SiteSchedule.objects.filter(pk=schedule.pk).update(created_at=moment - timedelta(days=2))
    PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(last_run_at=moment - timedelta(days=1))
    return {"task": schedule.periodic_task_id}


def lab_load_run(ca_file: str, https_port: int, http_port: int, params: dict) -> dict:
    """A verified site on a lab server (localhost pinned to 127.0.0.1) and its queued load run, sent to
    the broker: {"site", "run", "locks"} (the target locks its start task takes)."""
    from django.utils import timezone

    from tlsaudit.core import locks
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests.verification import verification_for

    user, org = owner("loader@faults.test", "correct horse battery staple", "Faults load", ca_file)
    site = added_site(organization=org, hostname="localhost", https_port=https_port, http_port=http_port,
                               pinned_ip="127.0.0.1", name="Lab", created_by=user)
    verification = verification_for(site)
    verification.record_pass("http", timezone.now(), ["127.0.0.1"])
    verification.save()
    run = services.queue_run(site, "load", params, user=user)
    keys = locks.keys(services.LOCK_KIND, "127.0.0.1", [port for _, port in services.target_ports(run)])
    return {"site": site.pk, "run": run.pk, "locks": keys}
