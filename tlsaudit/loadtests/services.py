"""Performance-run lifecycle: validate, refuse (verification, caps, one at a time), queue, claim,
record progress and steps, summarise, finish, stop.

Views, and later the API and the schedule, call `queue_run`, so every caller gets the same checks.
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
from tlsaudit.domain import abstats
from tlsaudit.domain.applicability import not_applicable_reason
from tlsaudit.domain.handshake_stats import cell_rows, compare_resumption, compare_versions
from tlsaudit.loadtests import plans
from tlsaudit.loadtests import verification as proofs
from tlsaudit.loadtests.models import LoadLimits, PerfRun

START_TASK = "workers.tasks.load.start_run"
LOCK_KIND = "load"           # its target locks' kind (core.locks): one load run per ip:port
ACTIVE = (PerfRun.Status.QUEUED, PerfRun.Status.RUNNING)
# Defaults that fit the shipped caps (120 s): a sweep's 52 runs at 1.5 s, a handshake plan's 56 cells at 1 s
# (every candidate suite counted). The single visitor (c=1) first.
DEFAULT_LEVELS = (1, 20, 50, 100)
DEFAULT_AGENTS_LEVELS = (10, 50)
DEFAULT_REPEATS = 3          # per cell: the fewest that give a 95 % interval (stats.median_interval)
# 20 handshakes per agent: a TLS 1.3 cell over a 50 ms round trip lasts ~1.1 s.
DEFAULT_PER_AGENT = 20
MAX_REPEATS = 10
SUMMARY_VERSION = 4          # 4: intervals from Harrell-Davis jackknives; 3: every request's time compared
CANCEL_POLL_S = 0.5


class RunRefused(Exception):
    """Why a run may not start, in words for the site owner (`code` is stable for the API)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# --- params ------------------------------------------------------------------------------

def validate_params(kind: str, raw: dict) -> dict:
    """Normalised params of a run of `kind`, or RunRefused("invalid_params")."""
    try:
        return VALIDATORS[kind](raw)
    except KeyError as exc:
        raise RunRefused("invalid_params", f"Unknown run kind or missing field: {exc}.") from None
    except (TypeError, ValueError) as exc:
        raise RunRefused("invalid_params", str(exc)) from None


def positive(raw: dict, name: str, default: int) -> int:
    value = int(raw.get(name, default))
    if value < 1:
        raise ValueError(f"{name} must be at least 1.")
    return value


def int_list(raw: dict, name: str, default) -> list[int]:
    value = raw.get(name, default)
    if isinstance(value, str):
        value = [v for v in value.replace(" ", "").split(",") if v]
    numbers = sorted({int(v) for v in value})
    if not numbers or numbers[0] < 1:
        raise ValueError(f"{name} must list positive whole numbers.")
    return numbers


def seconds_of(raw: dict) -> float:
    value = float(raw.get("seconds", plans.RUN_TIME_LIMIT_S))
    if not plans.MIN_RUN_SECONDS <= value <= plans.MAX_RUN_SECONDS:
        raise ValueError(f"seconds must be between {plans.MIN_RUN_SECONDS:g} and {plans.MAX_RUN_SECONDS:g}.")
    return value


def repeats_of(raw: dict) -> int:
    value = positive(raw, "repeats", DEFAULT_REPEATS)
    if value > MAX_REPEATS:
        raise ValueError(f"repeats must be between 1 and {MAX_REPEATS}.")
    return value


def clean_path(raw: dict) -> str:
    path = str(raw.get("path") or "/")
    if not path.startswith("/") or any(c.isspace() for c in path) or len(path) > 500:
        raise ValueError("path must start with / and contain no spaces.")
    return path


def validate_load(raw: dict) -> dict:
    params = {"scheme": str(raw.get("scheme", "https")), "requests": positive(raw, "requests", 100),
              "concurrency": positive(raw, "concurrency", 1), "keepalive": bool(raw.get("keepalive", False)),
              "path": clean_path(raw), "timeout_s": float(raw.get("timeout_s", 10)), "repeats": repeats_of(raw),
              "seconds": seconds_of(raw)}
    if params["scheme"] not in ("http", "https"):
        raise ValueError("scheme must be http or https.")
    if params["concurrency"] > params["requests"]:
        raise ValueError("concurrency cannot exceed the number of requests (as with ab).")
    if not 0.5 <= params["timeout_s"] <= 60:
        raise ValueError("timeout_s must be between 0.5 and 60 seconds.")
    return params


def validate_sweep(raw: dict) -> dict:
    modes = raw.get("modes") or ["new", "keepalive"]  # the seeds measured both modes
    modes = [modes] if isinstance(modes, str) else list(modes)
    if not set(modes) <= {"new", "keepalive"}:
        raise ValueError("modes must be new and/or keepalive.")
    params = {"levels": int_list(raw, "levels", DEFAULT_LEVELS), "requests": positive(raw, "requests", 500),
              "modes": [m for m in ("new", "keepalive") if m in modes], "path": clean_path(raw),
              "repeats": repeats_of(raw), "seconds": seconds_of(raw)}
    if params["levels"][-1] > params["requests"]:
        raise ValueError("each level's concurrency cannot exceed the requests per level.")
    return params


def validate_handshakes(raw: dict) -> dict:
    versions = raw.get("versions") or ["1.2", "1.3"]
    versions = [versions] if isinstance(versions, str) else list(versions)
    if not versions or not set(versions) <= {"1.2", "1.3"}:
        raise ValueError("versions must be 1.2 and/or 1.3.")
    suites = raw.get("suites") or []
    return {"versions": [v for v in ("1.2", "1.3") if v in versions],
            "agents_levels": int_list(raw, "agents_levels", DEFAULT_AGENTS_LEVELS),
            "per_agent": positive(raw, "per_agent", DEFAULT_PER_AGENT), "resume": bool(raw.get("resume", False)),
            "suites": [str(s) for s in suites], "repeats": repeats_of(raw), "seconds": seconds_of(raw)}


VALIDATORS = {PerfRun.Kind.LOAD: validate_load, PerfRun.Kind.SWEEP: validate_sweep,
              PerfRun.Kind.HANDSHAKES: validate_handshakes}


# --- refusals ----------------------------------------------------------------------------

def check_caps(kind: str, params: dict, limits: LoadLimits) -> None:
    """Each refusal names the cap and the organization's value."""
    org = limits.organization.name
    concurrency, per_run = peak_concurrency(kind, params), requests_per_step(kind, params)
    if concurrency > limits.max_concurrency:
        raise RunRefused("cap_concurrency", f"Concurrency {concurrency} is above {org}'s maximum concurrency of "
                                            f"{limits.max_concurrency} connections.")
    if per_run > limits.max_requests_per_run:
        what = "handshakes per cell" if kind == PerfRun.Kind.HANDSHAKES else "requests per run"
        raise RunRefused("cap_requests", f"{per_run} {what} is above {org}'s maximum of "
                                         f"{limits.max_requests_per_run} requests per run.")
    check_duration(kind, params, limits)
    since = timezone.now() - timedelta(days=1)
    today = PerfRun.objects.filter(organization=limits.organization, created_at__gte=since).count()
    if today >= limits.runs_per_day:
        raise RunRefused("cap_runs_per_day", f"{org} already started {today} runs in the last 24 hours: the maximum "
                                             f"is {limits.runs_per_day} runs per day.")


def fitted_seconds(kind: str, params: dict, max_duration_s: int) -> dict:
    """A run that asked for no duration per run gets the longest of plans.FITTING_SECONDS that fits the
    organization's maximum duration (the shortest when none does: check_caps then says why)."""
    for seconds in plans.FITTING_SECONDS:
        fitted = {**params, "seconds": seconds}
        if plans.bound_s(kind, fitted) <= max_duration_s:
            return fitted
    return {**params, "seconds": plans.FITTING_SECONDS[-1]}


def check_duration(kind: str, params: dict, limits: LoadLimits) -> None:
    """Refused up front, with what would fit, when the plan can outlast the organization's maximum."""
    bound = plans.bound_s(kind, params)
    if bound <= limits.max_duration_s:
        return
    steps = len(plans.steps_of(kind, params))
    fits = (limits.max_duration_s - plans.RUN_OVERHEAD_S) / steps - plans.STEP_OVERHEAD_S
    hint = (f"at most {fits:.1f} s per run would fit" if fits >= plans.MIN_RUN_SECONDS else
            "fewer levels, suites, agents levels or repeats would fit")
    raise RunRefused("cap_duration", f"This plan can take up to {bound:.0f} s ({steps} runs of at most "
                                     f"{params['seconds']:g} s each, plus set-up): above {limits.organization.name}'s "
                                     f"maximum duration of {limits.max_duration_s} s per run. {hint[0].upper()}"
                                     f"{hint[1:]}.")


def peak_concurrency(kind: str, params: dict) -> int:
    if kind == PerfRun.Kind.LOAD:
        return params["concurrency"]
    if kind == PerfRun.Kind.SWEEP:
        return max(params["levels"])
    return max(params["agents_levels"])


def requests_per_step(kind: str, params: dict) -> int:
    if kind == PerfRun.Kind.HANDSHAKES:
        return max(params["agents_levels"]) * params["per_agent"]
    return params["requests"]


def ensure_verified(site) -> None:
    """Refuse unless the owner proved control; a proof older than VERIFICATION_MAX_AGE_DAYS is re-checked."""
    verification = proofs.host_proof(site)
    if verification.is_verified and verification.is_stale:
        proofs.check_now(verification.site, verification.method or None)  # the site whose proof it is
        verification = proofs.host_proof(site)
        if not verification.is_verified:
            raise RunRefused("unverified", f"{site.label}'s ownership proof expired and the re-check failed: "
                                           f"{verification.last_error}")
    reason = unverified_reason(site, verification)
    if reason:
        raise RunRefused("unverified", reason)


def unverified_reason(site, verification=None) -> str | None:
    """Why no run may go to `site` as it is now (None: its proof holds); no network, so the worker can
    ask again when it takes the run (the site may have been edited while the run was queued)."""
    verification = verification or proofs.host_proof(site)
    if verification.is_verified:
        return None
    if verification.site_changed:
        return (f"{site.label} changed since its owner proved control (host name, ports or pinned IP): the proof "
                "covered the old address. Check it again on the verification page.")
    return (f"{site.label} is not verified: load tests and handshake runs only go to sites whose owner proved "
            "control. Serve the verification file or add the DNS TXT record, then press \"Check now\" on the "
            "verification page.")


def ensure_applicable(site, kind: str) -> None:
    """Refuse a run that means nothing for the site's service (a load test of an SMTP server, #18)."""
    reason = not_applicable_reason(site.tls_service, kind)
    if reason:
        raise RunRefused("not_applicable", reason)


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


# --- the run on the worker ---------------------------------------------------------------

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


def summarise(run: PerfRun) -> dict:
    """Re-derivable from the results: sweeps, the overhead per level and on average (signed, with
    intervals); load tests, the cell over its repeats; handshakes, each cell over its repeats, TLS 1.3
    vs 1.2 and resumed vs full. Warm-ups and partial (stopped) steps are left out."""
    return summary_for(run.kind, run.results)


def summary_for(kind: str, results: list[dict]) -> dict:
    if kind == PerfRun.Kind.HANDSHAKES:
        cells = handshake_cells(results)
        summary = {"cells": cell_rows(cells), "versions": compare_versions(cells),
                   "resumption": compare_resumption(cells)}
    elif kind == PerfRun.Kind.SWEEP:
        summary = sweep_summary(results)
    else:
        summary = load_summary(results)
    return {**summary, "stats_version": SUMMARY_VERSION}


def summary_of(run: PerfRun) -> dict:
    """The stored summary, or one derived now for a run finished before repeats and signed overheads
    (its steps read as single runs: figures without intervals)."""
    if (run.summary or {}).get("stats_version") == SUMMARY_VERSION or not run.results:
        return run.summary or {}
    return summarise(run)


def measured_runs(results: list[dict]) -> list[dict]:
    """The ab-style runs a comparison may use: not warm-ups, not steps cut short by Stop or the deadline."""
    return [{"mode": e["mode"], "level": e["level"], "scheme": e["scheme"], "repeat": e.get("repeat", 0),
             **abstats.run_figures(with_request_times(e))}
            for e in results if "report" in e and not e.get("warmup") and not e["result"].get("cancelled")]


def with_request_times(entry: dict) -> dict:
    """The step's report with every request's time: runs stored before reports kept it have it in the
    engine's result."""
    report = entry["report"]
    if report.get("total_histogram"):
        return report
    return {**report, "total_histogram": ((entry.get("result") or {}).get("histograms") or {}).get("total")}


def sweep_summary(results: list[dict]) -> dict:
    """Per mode: abstats' rows (signed overhead per level, with intervals) and the average row."""
    return abstats.without_pairs(abstats.sweep_summary(measured_runs(results)))


def load_summary(results: list[dict]) -> dict:
    runs = measured_runs(results)
    return {"cell": abstats.cell_summary(runs)} if runs else {}


def handshake_cells(results: list[dict]) -> list[dict]:
    return [{**e["result"], "repeat": (e.get("cell") or {}).get("repeat", 0),
             "warmup": (e.get("cell") or {}).get("warmup", False)}
            for e in results if not e["result"].get("cancelled")]


# --- stop --------------------------------------------------------------------------------

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


# --- housekeeping ------------------------------------------------------------------------------

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
