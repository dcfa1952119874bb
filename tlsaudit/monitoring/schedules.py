"""Audit schedules: place each site in the organization's window (domain/nightly.py), mirror it in
django-celery-beat, claim each (site, date) once, and catch up a missed run once.

Called by the service that adds sites (sites/services.py), the views and workers/tasks/schedule.py;
nothing here imports an engine.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, OuterRef, Q, Subquery
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from tlsaudit.audits.models import Audit
from tlsaudit.audits.services import queue_audit
from tlsaudit.core.queue import QueueUnavailable
from tlsaudit.domain import nightly
from tlsaudit.monitoring.models import OrgSchedulePolicy, ScheduledRun, SiteSchedule
from tlsaudit.sites.models import Site

RUN_TASK = "workers.tasks.schedule.run_scheduled_audit"
_rng = random.SystemRandom()


def policy_for(org) -> OrgSchedulePolicy:
    return OrgSchedulePolicy.objects.get_or_create(organization=org)[0]


def capacity() -> int:
    """Scheduled audit starts per minute the worker pool takes (settings, derived from the scan pool)."""
    return settings.NIGHTLY_MAX_STARTS_PER_MINUTE


def address_capacity() -> int:
    """Scheduled starts per minute one IP address takes (its audits run one at a time)."""
    return nightly.address_capacity(settings.NIGHTLY_AUDIT_SECONDS, settings.SCAN_AUDITS_PER_IP)


def latest_audited_ip() -> Subquery:
    """The address a site's latest audit connected to (annotate a Site queryset with it)."""
    return Subquery(Audit.objects.filter(site=OuterRef("pk"), ip__isnull=False).order_by("-created_at").values("ip")[:1])


def site_addresses(sites) -> dict[int, str]:
    """Each site's IP address as far as we know it without asking DNS: its pinned IP, else the address its
    latest audit connected to. Sites never audited and not pinned are left out (placed by time alone)."""
    rows = sites.annotate(audited_ip=latest_audited_ip()).values_list("pk", "pinned_ip", "audited_ip")
    return {pk: pinned or audited for pk, pinned, audited in rows if pinned or audited}


def window_load(org, address: str | None = None) -> tuple[Counter, nightly.AddressLoad]:
    """Starts per minute offset of the organization's enabled schedules inside its window, and, for
    `address`, its starts per minute (one query each: a new site with no known address costs none).
    Weekly sites count every night: conservative, and a weekday change then never overfills a minute."""
    hours = policy_for(org).hours()
    enabled = SiteSchedule.objects.filter(site__organization=org).exclude(frequency=SiteSchedule.Frequency.OFF)
    load: Counter = Counter()
    for hour, minute, n in enabled.values_list("hour", "minute").annotate(n=Count("pk")):
        offset = nightly.offset_of(hours, hour, minute)
        if offset is not None:
            load[offset] += n
    per_address = nightly.AddressLoad(per_minute=address_capacity())
    if address:
        on_address = enabled.filter(Q(site__pinned_ip=address) | Q(site__audits__ip=address)).distinct()
        for _, hour, minute in on_address.values_list("pk", "hour", "minute"):   # pk: distinct schedules
            offset = nightly.offset_of(hours, hour, minute)
            if offset is not None:
                per_address.add(address, offset)
    return load, per_address


def pick_time(policy: OrgSchedulePolicy, site_id: int, load: Counter, address: str | None = None,
              per_address: nightly.AddressLoad | None = None) -> tuple[int, int]:
    """The site's (hour, minute): its stable place in the window, in a minute with room for the pool and
    for its address (domain/nightly.py)."""
    hours = policy.hours()
    return nightly.clock(hours, nightly.place(site_id, load, nightly.window_minutes(hours), capacity(),
                                              address=address, addresses=per_address))


def ensure_schedule(site, rng=_rng) -> SiteSchedule:
    """The site's schedule, created nightly at its place in its organization's window."""
    existing = SiteSchedule.objects.filter(site=site).first()
    if existing:
        return existing
    policy = policy_for(site.organization)
    load, per_address = window_load(site.organization, site.pinned_ip)   # a new site's only known address
    hour, minute = pick_time(policy, site.pk, load, site.pinned_ip, per_address)
    schedule = SiteSchedule.objects.create(site=site, hour=hour, minute=minute, weekday=rng.randrange(7))
    sync_periodic_task(schedule)
    return schedule


def policy_with_load(org) -> OrgSchedulePolicy:
    """The policy with `scheduled` (enabled schedules) and `busiest` (most starts in one minute), for the
    portfolio page. One grouped query over this organization's schedules, reached through its sites (their
    organization index): as correlated subqueries, PostgreSQL scanned every organization's schedules."""
    policy = policy_for(org)
    per_minute = list(SiteSchedule.objects.filter(site__organization_id=org.pk)
                      .exclude(frequency=SiteSchedule.Frequency.OFF).order_by()
                      .values("hour", "minute").annotate(n=Count("pk")).values_list("n", flat=True))
    policy.scheduled, policy.busiest = sum(per_minute), max(per_minute, default=0)
    return policy


def crowded_addresses(policy: OrgSchedulePolicy) -> list[nightly.AddressVerdict]:
    """The IP addresses whose scheduled sites of this organization do not fit its window, audited one at
    a time (one query). A weekly site counts as a seventh of a nightly one here: this is about the
    time the address needs in a night, not about which minute may fill up."""
    rows = (Site.objects.filter(organization_id=policy.organization_id)
            .exclude(schedule__frequency=SiteSchedule.Frequency.OFF).exclude(schedule__isnull=True)
            .annotate(audited_ip=latest_audited_ip()).values_list("pinned_ip", "audited_ip", "schedule__frequency"))
    nightly_sites, weekly_sites = Counter(), Counter()
    for pinned, audited, frequency in rows:
        if pinned or audited:
            (weekly_sites if frequency == SiteSchedule.Frequency.WEEKLY else nightly_sites)[pinned or audited] += 1
    per_address = {a: nightly_sites[a] + math.ceil(weekly_sites[a] / 7) for a in nightly_sites | weekly_sites}
    return nightly.crowded_addresses({a: n for a, n in per_address.items() if n > 1},
                                     nightly.window_minutes(policy.hours()), settings.NIGHTLY_AUDIT_SECONDS,
                                     settings.SCAN_AUDITS_PER_IP)


def window_verdict(policy: OrgSchedulePolicy) -> nightly.Verdict:
    """How the organization's scheduled starts fit its window (a policy from policy_with_load)."""
    return nightly.window_verdict(sites=policy.scheduled or 0, minutes=nightly.window_minutes(policy.hours()),
                                  capacity=capacity(), busiest=policy.busiest or 0)


def sync_periodic_task(schedule: SiteSchedule) -> None:
    """Create, update or delete the beat entry (one PeriodicTask + CrontabSchedule per site)."""
    task = schedule.periodic_task
    if not schedule.enabled:
        if task:
            delete_periodic_task(task)
            SiteSchedule.objects.filter(pk=schedule.pk).update(periodic_task=None)
            schedule.periodic_task = None
        return
    cron = dict(minute=str(schedule.minute), hour=str(schedule.hour), day_of_month="*", month_of_year="*",
                day_of_week=str(schedule.weekday) if schedule.frequency == SiteSchedule.Frequency.WEEKLY else "*",
                timezone=ZoneInfo("UTC"))
    if task is None:
        crontab = CrontabSchedule.objects.create(**cron)
        task = PeriodicTask.objects.create(name=task_name(schedule.site_id), task=RUN_TASK, crontab=crontab,
                                           args=json.dumps([schedule.site_id]))
        SiteSchedule.objects.filter(pk=schedule.pk).update(periodic_task=task)
        schedule.periodic_task = task
        return
    CrontabSchedule.objects.filter(pk=task.crontab_id).update(**cron)
    task.enabled = True
    task.save()  # save() tells beat its schedule changed


def delete_periodic_task(task: PeriodicTask) -> None:
    crontab_id = task.crontab_id
    task.delete()
    CrontabSchedule.objects.filter(pk=crontab_id, periodictask__isnull=True).delete()


def task_name(site_id: int) -> str:
    return f"scheduled audit of site {site_id}"


def update_schedule(schedule: SiteSchedule, *, frequency: str, weekday: int) -> SiteSchedule:
    schedule.frequency, schedule.weekday = frequency, weekday
    schedule.save(update_fields=["frequency", "weekday", "updated_at"])
    sync_periodic_task(schedule)
    return schedule


def update_policy(policy: OrgSchedulePolicy, *, start: int, end: int) -> int:
    """Save the window and move the organization's schedules now outside it (or in a minute over the
    pool's capacity) to their places in it; returns how many moved. Sites already well placed stay."""
    policy.window_start_hour, policy.window_end_hour = start, end
    policy.save(update_fields=["window_start_hour", "window_end_hour"])
    hours, cap = policy.hours(), capacity()
    schedules = list(SiteSchedule.objects.filter(site__organization_id=policy.organization_id)
                     .exclude(frequency=SiteSchedule.Frequency.OFF).select_related("periodic_task")
                     .order_by("site_id"))
    addresses = site_addresses(Site.objects.filter(organization_id=policy.organization_id))
    load: Counter = Counter()
    per_address = nightly.AddressLoad(per_minute=address_capacity())
    stray = []
    for schedule in schedules:  # keep whoever fits, in id order, so the oldest sites keep their time
        offset = nightly.offset_of(hours, schedule.hour, schedule.minute)
        address = addresses.get(schedule.site_id)
        if offset is not None and load[offset] < cap and per_address.has_room(address, offset):
            load[offset] += 1
            per_address.add(address, offset)
        else:
            stray.append(schedule)
    for schedule in stray:
        schedule.hour, schedule.minute = pick_time(policy, schedule.site_id, load, addresses.get(schedule.site_id),
                                                   per_address)
        schedule.save(update_fields=["hour", "minute", "updated_at"])
        sync_periodic_task(schedule)
    return len(stray)


# --- running ---------------------------------------------------------------------------------

def claim_run(site, run_date: date, *, caught_up: bool = False) -> ScheduledRun | None:
    """One atomic INSERT: whoever creates (site, run_date) owns that run; None = someone else has it."""
    try:
        with transaction.atomic():
            return ScheduledRun.objects.create(site=site, run_date=run_date, caught_up=caught_up)
    except IntegrityError:
        return None


def run_scheduled(site_id: int, now: datetime | None = None, *, caught_up: bool = False,
                  run_date: date | None = None, delay_s: int | None = None) -> str:
    """Claim the site's run for the (UTC) date and queue its audit, to start at the site's own second
    of the minute (beat fires every entry at second 0), or `delay_s` from now. "queued", "active" (an
    audit of the site was already queued or running: the run is that one), "duplicate" or "skipped"."""
    site = Site.objects.select_related("organization").filter(pk=site_id).first()
    if site is None:
        return "skipped"  # deleted since beat read its entry
    run_date = run_date or utc(now or timezone.now()).date()
    run = claim_run(site, run_date, caught_up=caught_up)
    if run is None:
        return "duplicate"
    delay_s = nightly.second_of_minute(site.pk) if delay_s is None else delay_s
    try:
        audit, created = queue_audit(site, trigger=Audit.Trigger.SCHEDULE, delay_s=delay_s)
    except QueueUnavailable as refusal:
        audit, created = refusal.row, True  # saved and marked unsent: the reaper sends it once the broker answers
    ScheduledRun.objects.filter(pk=run.pk).update(audit=audit)
    return "queued" if created else "active"


def due_within_a_day(org, now: datetime | None = None) -> list[tuple[SiteSchedule, datetime]]:
    """The organization's scheduled sites whose next slot falls within the next 24 hours, soonest first."""
    now = utc(now or timezone.now())
    schedules = (SiteSchedule.objects.filter(site__organization_id=org.pk)
                 .exclude(frequency=SiteSchedule.Frequency.OFF).order_by("site_id"))
    due = [(schedule, next_slot(schedule, now)) for schedule in schedules]
    return sorted(((schedule, slot) for schedule, slot in due if slot - now <= timedelta(days=1)),
                  key=lambda pair: (pair[1], pair[0].site_id))


def run_next_now(org, now: datetime | None = None) -> tuple[int, int]:
    """"Run tonight's audits now": each scheduled site whose next slot falls within the next 24 hours is
    audited now, as its scheduled run of that date (so beat skips the slot later, and a second press
    queues nothing new). Never limited, like the runs it replaces, and bounded by them: at most one per
    site and date. Started at the pool's pace (capacity() a minute, as the window spreads them), not all
    at once. Runs in a task: a large portfolio is thousands of claims. Returns (queued, already)."""
    now = utc(now or timezone.now())
    queued = already = 0
    for index, (schedule, slot) in enumerate(due_within_a_day(org, now)):
        delay_s = index // capacity() * 60 + nightly.second_of_minute(schedule.site_id)
        outcome = run_scheduled(schedule.site_id, now, run_date=slot.date(), delay_s=delay_s)
        queued += outcome == "queued"
        already += outcome in ("duplicate", "active")
    return queued, already


def next_slot(schedule: SiteSchedule, now: datetime) -> datetime:
    """The earliest time after `now` at which the schedule fires."""
    step = timedelta(days=7 if schedule.frequency == SiteSchedule.Frequency.WEEKLY else 1)
    return last_slot(schedule, now) + step


def last_slot(schedule: SiteSchedule, now: datetime) -> datetime:
    """The latest time at or before `now` at which the schedule should have fired."""
    now = utc(now)
    slot = datetime.combine(now.date(), time(schedule.hour, schedule.minute), tzinfo=dt_timezone.utc)
    if slot > now:
        slot -= timedelta(days=1)
    if schedule.frequency == SiteSchedule.Frequency.WEEKLY:
        while cron_weekday(slot) != schedule.weekday:
            slot -= timedelta(days=1)
    return slot


def cron_weekday(moment: datetime) -> int:
    return (moment.weekday() + 1) % 7  # cron counts from Sunday = 0, Python from Monday = 0


def catch_up(now: datetime | None = None) -> list[int]:
    """1. for each enabled schedule, find the latest slot that should have fired by now;
    2. skip it when a run is claimed for that date or later, or the schedule did not exist yet;
    3. else claim that one date and queue: after N missed nights, one audit, not N.
    Returns the ids of the sites queued."""
    now = utc(now or timezone.now())
    schedules = (SiteSchedule.objects.exclude(frequency=SiteSchedule.Frequency.OFF)
                 .annotate(last_run=Max("site__scheduled_runs__run_date")).order_by("site_id"))
    queued = []
    for schedule in schedules:
        slot = last_slot(schedule, now)
        if slot < schedule.created_at or (schedule.last_run and schedule.last_run >= slot.date()):
            continue
        if run_scheduled(schedule.site_id, now, caught_up=True, run_date=slot.date()) == "queued":
            queued.append(schedule.site_id)
    return queued


def utc(moment: datetime) -> datetime:
    return moment.astimezone(dt_timezone.utc)
