"""Per-site schedules: real django-celery-beat entries, one claim per site and night, one
catch-up after downtime, and a frozen-time scheduler tick that runs exactly the due sites."""

import json
import threading
from datetime import datetime, timezone

import pytest
import redis
import time_machine
from django.conf import settings
from django.db import connection
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from tests.support.sites import added_site
from tlsaudit.audits.models import Audit
from tlsaudit.domain import nightly
from tlsaudit.monitoring import schedules
from tlsaudit.monitoring.models import OrgSchedulePolicy, ScheduledRun, SiteSchedule
from workers.celery import app
from workers.tasks.schedule import catch_up, run_scheduled_audit

pytestmark = pytest.mark.django_db
UTC = timezone.utc


def add_sites(org, n, prefix="s"):
    return [added_site(organization=org, hostname=f"{prefix}{i}.example.com") for i in range(n)]


def set_time(site, hour, minute, frequency="nightly", weekday=1):
    schedule = site.schedule
    schedule.hour, schedule.minute = hour, minute
    schedule.save()
    return schedules.update_schedule(schedule, frequency=frequency, weekday=weekday)


def test_it_gives_every_new_site_a_beat_entry_at_a_random_time_inside_the_window(org_a):
    OrgSchedulePolicy.objects.create(organization=org_a, window_start_hour=2, window_end_hour=4)
    sites = add_sites(org_a, 12)
    times = set()
    for site in sites:
        schedule = SiteSchedule.objects.get(site=site)
        task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
        cron = task.crontab
        assert schedule.frequency == "nightly" and schedule.hour in (2, 3) and 0 <= schedule.minute < 60
        assert (cron.hour, cron.minute, cron.day_of_week, str(cron.timezone)) == (
            str(schedule.hour), str(schedule.minute), "*", "UTC")
        assert (task.task, task.args, task.enabled) == ("workers.tasks.schedule.run_scheduled_audit",
                                                       f"[{site.pk}]", True)
        times.add((schedule.hour, schedule.minute))
    assert len(times) > 1  # spread, never all at one minute
    assert CrontabSchedule.objects.filter(periodictask__name__startswith="scheduled audit").count() == 12


def test_the_default_window_is_one_to_five_utc(org_a):
    site = add_sites(org_a, 1)[0]
    assert site.schedule.hour in (1, 2, 3, 4)
    assert OrgSchedulePolicy.objects.get(organization=org_a).hours() == [1, 2, 3, 4]


@pytest.mark.parametrize("start, end, hours", [(1, 5, [1, 2, 3, 4]), (22, 2, [22, 23, 0, 1]), (7, 8, [7]),
                                               (3, 3, list(range(3, 24)) + [0, 1, 2])])
def test_a_window_may_wrap_past_midnight(start, end, hours):
    assert OrgSchedulePolicy(window_start_hour=start, window_end_hour=end).hours() == hours


def test_weekly_sets_the_weekday_and_off_removes_the_beat_entry(site_a):
    schedule = schedules.update_schedule(site_a.schedule, frequency="weekly", weekday=3)
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).crontab.day_of_week == "3"
    task_id, cron_id = schedule.periodic_task_id, schedule.periodic_task.crontab_id

    schedules.update_schedule(schedule, frequency="off", weekday=3)
    assert not PeriodicTask.objects.filter(pk=task_id).exists()
    assert not CrontabSchedule.objects.filter(pk=cron_id).exists()
    assert SiteSchedule.objects.get(pk=schedule.pk).periodic_task is None

    schedule = schedules.update_schedule(SiteSchedule.objects.get(pk=schedule.pk), frequency="nightly", weekday=3)
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).crontab.day_of_week == "*"


def test_deleting_a_site_deletes_its_beat_entry(site_a):
    task = site_a.schedule.periodic_task
    site_a.delete()
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert not CrontabSchedule.objects.filter(pk=task.crontab_id).exists()


def test_narrowing_the_window_moves_only_the_schedules_outside_it(org_a):
    early, late = add_sites(org_a, 2)
    set_time(early, 1, 10)
    set_time(late, 4, 20)
    moved = schedules.update_policy(org_a.schedule_policy, start=4, end=6)
    early.schedule.refresh_from_db()
    late.schedule.refresh_from_db()
    assert moved == 1
    assert early.schedule.hour in (4, 5) and (late.schedule.hour, late.schedule.minute) == (4, 20)
    assert PeriodicTask.objects.get(pk=early.schedule.periodic_task_id).crontab.hour == str(early.schedule.hour)


def test_two_runs_for_the_same_site_and_night_make_exactly_one_audit(site_a):
    with time_machine.travel(datetime(2026, 3, 3, 2, 15, tzinfo=UTC), tick=False):
        assert run_scheduled_audit.apply(args=[site_a.pk]).get() == "queued"
        # Even once the first audit finished (so queue_audit would make a new one), the claim holds.
        Audit.objects.filter(site=site_a).update(status="done")
        assert run_scheduled_audit.apply(args=[site_a.pk]).get() == "duplicate"
    audit = Audit.objects.get(site=site_a)
    assert audit.trigger == "schedule"
    assert ScheduledRun.objects.get(site=site_a).audit == audit


def test_the_next_night_is_a_new_run(site_a):
    for day in (3, 4):
        with time_machine.travel(datetime(2026, 3, day, 2, 15, tzinfo=UTC), tick=False):
            run_scheduled_audit.apply(args=[site_a.pk])
        Audit.objects.filter(site=site_a).update(status="done")
    assert list(ScheduledRun.objects.filter(site=site_a).values_list("run_date", flat=True).order_by("run_date")) \
        == [datetime(2026, 3, 3).date(), datetime(2026, 3, 4).date()]
    assert Audit.objects.filter(site=site_a, trigger="schedule").count() == 2


def test_a_site_deleted_before_its_run_is_skipped(site_a):
    site_id = site_a.pk
    site_a.delete()
    assert run_scheduled_audit.apply(args=[site_id]).get() == "skipped"
    assert not ScheduledRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_schedulers_racing_for_one_night_make_one_audit(site_a):
    barrier = threading.Barrier(2)
    outcomes = []

    def fire():
        barrier.wait()
        try:
            outcomes.append(schedules.run_scheduled(site_a.pk, datetime(2026, 3, 3, 2, 15, tzinfo=UTC)))
        finally:
            connection.close()

    threads = [threading.Thread(target=fire) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["duplicate", "queued"]
    assert Audit.objects.filter(site=site_a).count() == 1


def test_catch_up_after_downtime_queues_once_not_once_per_missed_night(org_a):
    # Given two nightly sites at 02:00 created a week ago, and beat down for five nights
    missed, ran = add_sites(org_a, 2)
    for site in (missed, ran):
        set_time(site, 2, 0)
    SiteSchedule.objects.update(created_at=datetime(2026, 2, 24, tzinfo=UTC))
    ScheduledRun.objects.create(site=missed, run_date=datetime(2026, 2, 25).date())
    ScheduledRun.objects.create(site=ran, run_date=datetime(2026, 3, 2).date())
    # When the sweep runs on the morning of March 2, twice
    with time_machine.travel(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), tick=False):
        assert catch_up.apply().get() == [missed.pk]
        assert catch_up.apply().get() == []
        # and a late beat delivery of last night's entry arrives too
        assert run_scheduled_audit.apply(args=[missed.pk]).get() == "duplicate"
    # Then the missed site got one audit, the one that ran got none
    assert Audit.objects.filter(site=missed).count() == 1
    assert not Audit.objects.filter(site=ran).exists()
    run = ScheduledRun.objects.get(site=missed, run_date=datetime(2026, 3, 2).date())
    assert run.caught_up and run.audit.trigger == "schedule"


def test_catch_up_skips_sites_off_weekly_not_due_and_schedules_newer_than_the_slot(org_a):
    off, weekly, new = add_sites(org_a, 3)
    set_time(off, 2, 0, frequency="off")
    set_time(weekly, 2, 0, frequency="weekly", weekday=3)  # Wednesdays; 2026-03-02 is a Monday
    set_time(new, 2, 0)
    SiteSchedule.objects.exclude(site=new).update(created_at=datetime(2026, 2, 26, 12, tzinfo=UTC))
    SiteSchedule.objects.filter(site=new).update(created_at=datetime(2026, 3, 2, 8, tzinfo=UTC))
    ScheduledRun.objects.create(site=weekly, run_date=datetime(2026, 2, 25).date())
    assert schedules.catch_up(datetime(2026, 3, 2, 9, 0, tzinfo=UTC)) == []
    # A week later the Wednesday slot was missed: one run, dated that Wednesday.
    assert schedules.catch_up(datetime(2026, 3, 5, 9, 0, tzinfo=UTC)) == [weekly.pk, new.pk]
    assert ScheduledRun.objects.get(site=weekly, caught_up=True).run_date == datetime(2026, 3, 4).date()


def test_a_scheduler_tick_with_time_frozen_runs_exactly_the_due_sites(org_a):
    # Given sites at 02:00, 02:10, 03:00 and a weekly one on Tuesdays at 02:05, all last run last night
    at_0200, at_0210, at_0300, weekly = add_sites(org_a, 4)
    set_time(at_0200, 2, 0)
    set_time(at_0210, 2, 10)
    set_time(at_0300, 3, 0)
    set_time(weekly, 2, 5, frequency="weekly", weekday=2)
    PeriodicTask.objects.filter(task=schedules.RUN_TASK).update(last_run_at=datetime(2026, 3, 2, 3, 30, tzinfo=UTC))
    # When beat ticks at 02:11 on Tuesday, March 3, reading its entries from the database
    with time_machine.travel(datetime(2026, 3, 3, 2, 11, tzinfo=UTC), tick=False):
        ran = tick()
    # Then exactly the sites whose time has come got an audit
    assert sorted(ran) == sorted([at_0200.pk, at_0210.pk, weekly.pk])
    assert set(Audit.objects.values_list("site_id", flat=True)) == {at_0200.pk, at_0210.pk, weekly.pk}
    # And the 03:01 tick runs the 03:00 site only; Wednesday's 02:11 tick no longer runs the weekly one
    Audit.objects.update(status="done")
    with time_machine.travel(datetime(2026, 3, 3, 3, 1, tzinfo=UTC), tick=False):
        assert tick() == [at_0300.pk]
    Audit.objects.update(status="done")
    with time_machine.travel(datetime(2026, 3, 4, 2, 11, tzinfo=UTC), tick=False):
        assert sorted(tick()) == sorted([at_0200.pk, at_0210.pk])
    assert Audit.objects.filter(trigger="schedule").count() == 6


def tick() -> list[int]:
    """What DatabaseScheduler does each beat: ModelEntry.is_due() per entry, run the due ones."""
    ran = []
    for model in PeriodicTask.objects.filter(task=schedules.RUN_TASK, enabled=True).select_related("crontab"):
        entry = ModelEntry(model, app=app)
        if entry.is_due().is_due:
            app.tasks[entry.task].apply(args=entry.args)
            model.last_run_at = datetime.now(UTC)
            model.save(update_fields=["last_run_at"])
            ran.append(entry.args[0])
    return ran


@pytest.mark.parametrize("hour", [0, 5, 13, 23])
def test_beat_skips_an_entry_whose_schedule_vanished_while_it_read_and_keeps_the_others(org_a, hour):
    """Beat reads the tasks, then their schedules (prefetch): a site deleted in between left a task
    without a schedule and upstream's all_as_schedule raised, which killed beat (seen in the fault
    tests). The same state, made for real: the task row left, its crontab gone."""
    from workers.beat import RobustDatabaseScheduler

    kept, vanishing = add_sites(org_a, 2)
    # Beat only loads crontab entries due within +-2 hours of now (django-celery-beat 2.8): put both there.
    for site in (kept, vanishing):
        set_time(site, hour, 30)
    gone = PeriodicTask.objects.get(pk=vanishing.schedule.periodic_task_id)
    PeriodicTask.objects.filter(pk=gone.pk).update(crontab=None)

    with time_machine.travel(datetime(2026, 3, 3, hour, 10, tzinfo=UTC), tick=False):
        entries = RobustDatabaseScheduler(app=app, lazy=True).all_as_schedule()

    assert schedules.task_name(kept.pk) in entries
    assert gone.name not in entries
    assert app.conf.beat_scheduler == "workers.beat:RobustDatabaseScheduler"


def test_a_scheduled_audit_starts_at_its_sites_own_second_not_at_second_zero(org_a, django_capture_on_commit_callbacks):
    # Given sites whose nightly entries all fire at 02:15:00 (beat fires at second 0)
    sites = add_sites(org_a, 3, prefix="sec")
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete("scan")   # an earlier run's messages would name the same audit ids (a kept database)
    # When beat's task queues their audits
    with django_capture_on_commit_callbacks(execute=True):
        for site in sites:
            schedules.run_scheduled(site.pk, datetime(2026, 3, 3, 2, 15, tzinfo=UTC))
    sent = datetime.now(UTC)
    # Then each audit's message waits until the site's own second (stable: the same every night)
    etas = {}
    for message in map(json.loads, broker.lrange("scan", 0, -1)):
        audit_id = json.loads(message["headers"]["argsrepr"])[0]
        if message["headers"]["eta"]:   # a stray message of an earlier test's thread can name the same id
            etas[audit_id] = message["headers"]["eta"]
    for site in sites:
        audit = Audit.objects.get(site=site)
        second = nightly.second_of_minute(site.pk)
        if second == 0:   # one site in sixty starts at second 0 itself: sent at once, with no eta
            assert audit.pk not in etas
        else:
            delay = (datetime.fromisoformat(etas.pop(audit.pk)) - sent).total_seconds()
            assert second - 2 <= delay <= second + 0.5, delay
        broker.lrem("scan", 0, next(m for m in broker.lrange("scan", 0, -1) if f"[{audit.pk}]".encode() in m))
