"""Probe lifecycle: validate, refuse (unverified email, one active per site, daily cap), queue,
claim, record progress, store the result and its summary, fail.

Views (and later the API) call `queue_probe`, so every caller gets the same checks. Nothing here
imports the browser engine: workers/tasks/browser.py does.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from tlsaudit.core import runners
from tlsaudit.core.queue import QueueUnavailable, enqueue, resend_queued
from tlsaudit.core.ratelimits import RateLimited, enforce, times, times_since
from tlsaudit.domain import probe_stats
from tlsaudit.domain.applicability import PROBE, not_applicable_reason
from tlsaudit.domain.probe_stats import SETUP_S
from tlsaudit.orgs.models import Organization
from tlsaudit.probes.models import Probe

PROBE_TASK = "workers.tasks.browser.run_probe"
ACTIVE = (Probe.Status.QUEUED, Probe.Status.RUNNING)
VARIANTS = ("https", "http")
MODES = ("cold", "warm")
MIN_SECONDS = 5


class ProbeRefused(Exception):
    """Why a probe may not start, in words for the site owner (`code` is stable for the API)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class ProbeRateLimited(RateLimited, ProbeRefused):
    """A ProbeRefused that a wait would cure: the API answers 429 with `retry_after`."""


# --- params --------------------------------------------------------------------------------

def validate_params(raw: dict) -> dict:
    """{"path", "runs", "seconds", "variants"} normalised, or ProbeRefused("invalid_params"). A probe is
    sized by time (`seconds`, like ab -t); `runs` caps its rounds."""
    try:
        return {"path": clean_path(raw.get("path")), "runs": clean_runs(raw.get("runs")),
                "seconds": clean_seconds(raw.get("seconds")), "variants": clean_variants(raw.get("variants"))}
    except (TypeError, ValueError) as exc:
        raise ProbeRefused("invalid_params", str(exc)) from None


def clean_path(value) -> str:
    path = str(value or "/").strip()
    if not path.startswith("/") or any(c.isspace() for c in path) or len(path) > 500:
        raise ValueError("The path must start with / and contain no spaces.")
    return path


def clean_runs(value) -> int:
    try:
        runs = int(settings.PROBE_MAX_RUNS if value in (None, "") else value)
    except (TypeError, ValueError):
        raise ValueError("Repetitions must be a whole number.") from None
    if not 1 <= runs <= settings.PROBE_MAX_RUNS:
        raise ValueError(f"Repetitions must be between 1 and {settings.PROBE_MAX_RUNS}.")
    return runs


def clean_seconds(value) -> int:
    try:
        seconds = int(settings.PROBE_DEFAULT_SECONDS if value in (None, "") else value)
    except (TypeError, ValueError):
        raise ValueError("The time must be a whole number of seconds.") from None
    if not MIN_SECONDS <= seconds <= max_seconds():
        raise ValueError(f"The time must be between {MIN_SECONDS} and {max_seconds()} seconds.")
    return seconds


def max_seconds() -> int:
    """What fits the task's time limit with the browser's start and the last round's overshoot."""
    return max(MIN_SECONDS, min(settings.PROBE_MAX_SECONDS, settings.PROBE_SOFT_TIME_LIMIT - 2 * SETUP_S))


def planned_s(params: dict) -> int:
    """The longest a probe of these params should take (shown before Start): its rounds' time, and the
    browser's start and the warm-up loads."""
    return int(params.get("seconds") or settings.PROBE_DEFAULT_SECONDS) + SETUP_S


def clean_variants(value) -> list[str]:
    variants = value or list(VARIANTS)
    variants = [variants] if isinstance(variants, str) else list(variants)
    if not variants or not set(variants) <= set(VARIANTS):
        raise ValueError("Variants must be https and/or http.")
    return [v for v in VARIANTS if v in variants]


# --- refusals and queueing --------------------------------------------------------------------

def ensure_email_verified(user) -> None:
    if user is None or not user.is_authenticated or not user.email_verified:
        raise ProbeRefused("unverified_email", "Verify your email address before running browser probes: a probe "
                                               "loads the site in a real browser, so we need to know who asks.")


def ensure_applicable(site) -> None:
    """Refuse a probe of a service with no web page to load (an SMTP server)."""
    reason = not_applicable_reason(site.tls_service, PROBE)
    if reason:
        raise ProbeRefused("not_applicable", reason)


def queue_probe(site, raw_params: dict, *, user) -> Probe:
    """Check everything, then create the queued probe and send it on commit (or ProbeRefused)."""
    ensure_applicable(site)
    ensure_email_verified(user)
    params = validate_params(raw_params)
    with transaction.atomic():
        # The organization's row serialises its queuers, so the daily cap cannot be overrun by a race.
        org = Organization.objects.select_for_update().get(pk=site.organization_id)
        if Probe.objects.filter(site=site, status__in=ACTIVE).exists():
            raise ProbeRefused("busy", f"A browser probe of {site.label} is already queued or running: wait for it "
                                       "to finish (one probe per site at a time).")
        enforce_probe_limits(org, site)
        today = Probe.objects.filter(organization=org, created_at__gte=timezone.now() - timedelta(days=1)).count()
        if today >= settings.PROBE_RUNS_PER_DAY:
            raise ProbeRefused("cap_probes_per_day", f"{org.name} already ran {today} browser probes in the last 24 "
                                                     f"hours: the maximum is {settings.PROBE_RUNS_PER_DAY} per day.")
        probe = Probe.objects.create(site=site, organization=org, params=params, requested_by=user,
                                     host=site.hostname, loads_total=loads_planned(params))
        enqueue(PROBE_TASK, probe.pk, unsent=lambda: fail_unsent(probe))
    return probe


def fail_unsent(probe: Probe) -> QueueUnavailable:
    """The broker refused the probe's message: it ends failed at once, saying so (as a load run does)."""
    message = "The task queue was unavailable, so this probe did not start. Please start it again in a moment."
    return QueueUnavailable(message, row=fail(probe, "queue_unavailable", message))


def resend_queued_probes() -> int:
    """After the broker lost its messages: send the queued probes again (a duplicate loses the claim)."""
    return resend_queued(Probe.objects.filter(status=Probe.Status.QUEUED), PROBE_TASK)


def enforce_probe_limits(org, site) -> None:
    """Per organization per hour, and per host (all organizations together) per window."""
    hour, per_org = timedelta(hours=1), settings.PROBE_LIMIT_PER_ORG_HOUR
    enforce(times_since(Probe.objects.filter(organization=org), hour), limit=per_org, window=hour,
            code="probes_per_org", error=ProbeRateLimited,
            what=f"your organization already ran {per_org} browser probes")
    per_target, window = settings.PROBE_LIMIT_PER_TARGET, timedelta(minutes=settings.PROBE_LIMIT_TARGET_MINUTES)
    enforce(times_since(Probe.objects.filter(host__iexact=site.hostname), window), limit=per_target, window=window,
            code="probes_per_target", error=ProbeRateLimited,
            what=f"{site.hostname} was already probed {times(per_target)} (by all users of TLS Audit together)")


def loads_planned(params: dict) -> int:
    return len(params["variants"]) * len(MODES) * params["runs"]


# --- the probe on the worker -------------------------------------------------------------------

def claim(probe_id: int, ip: str | None) -> bool:
    """One atomic UPDATE: whoever flips queued -> running owns the probe."""
    return Probe.objects.filter(pk=probe_id, status=Probe.Status.QUEUED).update(
        status=Probe.Status.RUNNING, started_at=timezone.now(), ip=ip, attempts=F("attempts") + 1,
        loads_done=0, current_step="Starting the browser", runner=runners.this_process()) == 1


def record_progress(probe_id: int, done: int, total: int, step: str) -> None:
    Probe.objects.filter(pk=probe_id, status=Probe.Status.RUNNING).update(
        loads_done=done, loads_total=total or F("loads_total"), current_step=step[:120])


def store_result(probe: Probe, result: dict) -> Probe:
    """Save the engine's JSON and its summary; a probe-level error ends the probe as failed."""
    error = result.get("error")
    duration = round(result["duration_s"], 2) if isinstance(result.get("duration_s"), (int, float)) else None
    if error:
        Probe.objects.filter(pk=probe.pk).update(result=result, summary=summarise(result))
        return fail(probe, error.get("code") or "probe_failed", error.get("message") or "The probe failed.",
                    duration_s=duration)
    loads = result.get("loads") or []
    Probe.objects.filter(pk=probe.pk, status=Probe.Status.RUNNING).update(
        status=Probe.Status.DONE, finished_at=timezone.now(), result=result, summary=summarise(result),
        duration_s=duration, loads_done=len(loads), current_step="")
    probe.refresh_from_db()
    return probe


def summarise(result: dict) -> dict:
    """Medians and spread per variant x mode, and the increase % HTTPS over HTTP (as the seed's
    Table VII), re-derived from the loads by the pure domain module."""
    loads = [load for load in result.get("loads") or [] if load.get("ok")]
    summary, changes = probe_stats.summarize(loads), probe_stats.increase(loads)
    return {"summary": summary, "increase_pct": probe_stats.increase_pct(summary, changes), "increase": changes,
            "stats_version": probe_stats.STATS_VERSION}


def increase_pct_of(probe: Probe) -> dict:
    """The seed's Table VII: `increase_of` rounded, with the counts' change; re-derived for old probes."""
    if (probe.summary or {}).get("stats_version") == probe_stats.STATS_VERSION:
        return probe.summary["increase_pct"]
    loads = [load for load in (probe.result or {}).get("loads") or [] if load.get("ok")]
    return probe_stats.increase_pct(probe_stats.summarize(loads), increase_of(probe)) if loads else {}


def increase_of(probe: Probe) -> dict:
    """The signed HTTPS-over-HTTP changes with intervals; derived from the loads for probes stored before them."""
    if (probe.summary or {}).get("stats_version") == probe_stats.STATS_VERSION:
        return probe.summary["increase"]
    return probe_stats.increase([load for load in (probe.result or {}).get("loads") or [] if load.get("ok")])


def fail(probe: Probe, code: str, message: str, duration_s: float | None = None) -> Probe:
    Probe.objects.filter(pk=probe.pk, status__in=ACTIVE).update(
        status=Probe.Status.FAILED, finished_at=timezone.now(), error_code=code[:40], error_message=message,
        duration_s=duration_s, current_step="")
    probe.refresh_from_db()
    return probe


def reap_abandoned_probes(now=None) -> int:
    """Probes 'running' whose worker (and its browser) is gone: its process died on this reaper's host
    (core.runners: seen at once), or it is past the hard time limit (anywhere). Fail them."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PROBE_HARD_TIME_LIMIT + 60)
    count = 0
    for probe in Probe.objects.filter(status=Probe.Status.RUNNING):
        if (probe.started_at and probe.started_at < cutoff) or runners.is_gone(probe.runner):
            fail(probe, "worker_lost", "The probe was interrupted (its worker stopped). Please run it again.")
            count += 1
    return count
