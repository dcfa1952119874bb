"""Performance-run lifecycle: queue (after the checks of checks.py), claim, record progress and steps,
finish, stop, and the reaper of abandoned runs. Summaries are in summaries.py.

The views, the API and the CLI's callers go through `queue_run`, so every caller gets the same checks.
Nothing here imports the engines: the tasks in workers/tasks/load.py do.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from tlsaudit.core import locks
from tlsaudit.core.queue import QueueUnavailable, enqueue, resend_queued
from tlsaudit.loadtests import plans
from tlsaudit.loadtests.checks import (
    RunRefused,
    check_caps,
    ensure_applicable,
    ensure_verified,
    fitted_seconds,
    validate_params,
)
from tlsaudit.loadtests.models import LoadLimits, PerfRun
from tlsaudit.loadtests.summaries import summarise

START_TASK = "workers.tasks.load.start_run"


LOCK_KIND = "load"           # its target locks' kind (core.locks): one load run per ip:port


ACTIVE = (PerfRun.Status.QUEUED, PerfRun.Status.RUNNING)


CANCEL_POLL_S = 0.5


def queue_run(site, kind: str, raw_params: dict, *, user=None) -> PerfRun:
    """Check everything, then create the queued run and send it on commit (or RunRefused)."""
    params = validate_params(kind, raw_params)
    ensure_applicable(site, kind)
    ensure_verified(site)
    with transaction.atomic():
        limits = LoadLimits.objects.select_for_update().get(pk=LoadLimits.for_org(site.organization).pk)
        if PerfRun.objects.filter(site=site, status__in=ACTIVE).exists():
            raise RunRefused("busy", f"A run against {site.label} is already queued or running: stop it or wait "
                                     "for it to finish (one run per site at a time).")
        if "seconds" not in raw_params:
            params = fitted_seconds(kind, params, limits.max_duration_s)
        check_caps(kind, params, limits)
        run = PerfRun.objects.create(site=site, organization_id=site.organization_id, kind=kind, params=params,
                                     requested_by=user if user and user.is_authenticated else None,
                                     host=site.hostname)
        enqueue(START_TASK, run.pk, unsent=lambda: fail_unsent(run))
    return run


def fail_unsent(run: PerfRun) -> QueueUnavailable:
    """The broker refused the run's message: it ends failed at once, saying so. A load test runs when its
    owner starts it, not whenever the broker comes back; starting it again is one click."""
    message = "The task queue was unavailable, so this run did not start. Please start it again in a moment."
    return QueueUnavailable(message, row=fail(run, "queue_unavailable", message))


def resend_queued_runs() -> int:
    """After the broker lost its messages: send the queued runs again (a duplicate loses the claim)."""
    return resend_queued(PerfRun.objects.filter(status=PerfRun.Status.QUEUED), START_TASK)


def claim(run_id: int, ip: str, steps: list[dict], max_duration_s: int, lock_keys: list[str]) -> bool:
    """One atomic UPDATE: whoever flips queued -> running owns the run (and records the target locks it
    took, the very keys its end releases, whatever the site's ports are by then)."""
    now = timezone.now()
    return PerfRun.objects.filter(pk=run_id, status=PerfRun.Status.QUEUED, cancel_requested=False).update(
        status=PerfRun.Status.RUNNING, started_at=now, deadline_at=now + timedelta(seconds=max_duration_s), ip=ip,
        progress={"steps": [{"label": s["label"], "status": "pending"} for s in steps], "current": 0},
        work_done=0, work_total=sum(s["work"] for s in steps), lock_keys=lock_keys) == 1


def save_plan(run_id: int, steps: list[dict]) -> None:
    """The claimed run's steps, all pending, for its chords to run one after another."""
    run = PerfRun.objects.get(pk=run_id)
    run.progress = {"steps": [{**step, "status": "pending"} for step in steps], "current": 0}
    run.save(update_fields=["progress"])


def target_ports(run: PerfRun) -> list[tuple[str, int]]:
    """The (scheme, port) pairs the run loads: what its start task pre-flights and locks."""
    return plans.target_ports(run.kind, run.params, plans.ports_of(run.site))


def run_holder(run_id: int) -> str:
    """What a claimed run's target locks hold: the run alone, no process (they outlive its start task)."""
    return locks.holder_for(run_id)


def release_locks(run: PerfRun) -> None:
    """Free the target locks the run took (taken by its start task through the gate, workers/tasks/gate.py,
    and held by the run until its end: its last step or the reaper frees them). The keys recorded at its
    claim, not ones rebuilt from the site's ports, which may have been edited since."""
    locks.release(run.lock_keys, run_holder(run.pk))


def mark_step(run_id: int, index: int, status: str) -> None:
    with transaction.atomic():
        run = PerfRun.objects.select_for_update().get(pk=run_id)
        if index < len(run.progress.get("steps", [])):
            run.progress["steps"][index]["status"] = status
            run.progress["current"] = index
            run.save(update_fields=["progress"])


def add_work(run_id: int, amount: int) -> None:
    if amount:
        PerfRun.objects.filter(pk=run_id).update(work_done=F("work_done") + amount)


def store_step(run_id: int, entry: dict) -> PerfRun:
    with transaction.atomic():
        run = PerfRun.objects.select_for_update().get(pk=run_id)
        run.results = [*run.results, entry]
        run.progress["steps"][entry["step"]]["status"] = "done"
        run.save(update_fields=["results", "progress"])
    return run


def finish(run: PerfRun, status: str, code: str = "", message: str = "") -> PerfRun:
    """End the run (once): summary of whatever steps finished, status, error."""
    run.refresh_from_db()
    summary = summarise(run)
    PerfRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(
        status=status, finished_at=timezone.now(), summary=summary, error_code=code, error_message=message)
    run.refresh_from_db()
    return run


def fail(run: PerfRun, code: str, message: str) -> PerfRun:
    return finish(run, PerfRun.Status.FAILED, code, message)


def request_stop(run: PerfRun) -> PerfRun:
    """Set the flag agents poll; a run no worker has picked up yet ends at once."""
    PerfRun.objects.filter(pk=run.pk, status__in=ACTIVE).update(cancel_requested=True)
    PerfRun.objects.filter(pk=run.pk, status=PerfRun.Status.QUEUED).update(
        status=PerfRun.Status.CANCELLED, finished_at=timezone.now(), error_code="cancelled",
        error_message="Stopped before it started.")
    run.refresh_from_db()
    return run


def is_cancel_requested(run_id: int) -> bool:
    return PerfRun.objects.filter(pk=run_id, cancel_requested=True).exists()


class AgentMonitor:
    """The engines' `cancel=` and `on_progress=` for one agent, without database calls in their
    threads (the load engine calls back from inside its event loop, where Django refuses queries).

    A helper thread reads the row's stop flag and adds the newly finished work to `work_done`
    every CANCEL_POLL_S; `cancel()` is True once the flag is set or the run's deadline passed.
    Use as a context manager around the engine call.
    """

    def __init__(self, run_id: int, deadline=None):
        self.run_id = run_id
        self.deadline = deadline
        self.cancelled = False
        self.done = 0
        self.reported = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.poll, name=f"perf-monitor-{run_id}", daemon=True)

    def __enter__(self) -> "AgentMonitor":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join(5)

    def cancel(self) -> bool:
        return self.cancelled

    def on_progress(self, done: int, total: int) -> None:
        self.done = done

    def poll(self) -> None:
        try:
            while True:
                self.check()
                if self.stopped.wait(CANCEL_POLL_S):
                    self.check()
                    return
        finally:
            connection.close()  # this thread's own connection

    def check(self) -> None:
        done = self.done
        add_work(self.run_id, done - self.reported)
        self.reported = done
        past_deadline = self.deadline is not None and timezone.now() >= self.deadline
        self.cancelled = self.cancelled or past_deadline or is_cancel_requested(self.run_id)


ABANDON_MARGIN_S = 120


def reap_abandoned_runs(now=None) -> int:
    """Runs still 'running' well past their deadline lost their worker mid-chord: end them as
    failed (keeping the steps that finished) and free their target locks."""
    now = now or timezone.now()
    stale = PerfRun.objects.filter(status=PerfRun.Status.RUNNING,
                                   deadline_at__lt=now - timedelta(seconds=ABANDON_MARGIN_S))
    count = 0
    for run in stale:
        fail(run, "worker_lost", "The run was interrupted (its worker stopped); the steps that finished are kept.")
        release_locks(run)
        count += 1
    return count
