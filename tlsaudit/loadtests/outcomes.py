"""How a run ends other than done, in the site owner's words: not started (no load sent), stopped or out
of time, or a step where nothing got through (every request refused or timed out, every handshake
failed, or no progress for the stall bound). Read by the load task (workers/tasks/load.py).
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from tlsaudit.loadtests import plans, services
from tlsaudit.loadtests.models import LoadLimits, PerfRun

STALL_MARGIN_S = 5.0
NO_LOAD = "No load was sent."
BUSY = "Another run against this server did not finish in time; please retry."
# The start task's target locks expired or Redis failed between its claim and their hand-over to the run.
LOCK_LOST = f"The lock on this server could not be kept for the run (the cache did not answer). {NO_LOAD} Please retry."


def stall_after(timeout_s: float) -> float:
    """The progress deadline of a step (LOAD_STALL_SECONDS): a server that lets every request time out
    for that long (dead, stalling, trickling) ends the run, whatever its size. Always longer than one
    request or handshake may take, so that a single timeout never ends a run by itself."""
    return max(float(settings.LOAD_STALL_SECONDS), timeout_s + STALL_MARGIN_S)


def ended_early(run) -> bool:
    """Stopped by the user, or past the organization's max duration: finish the run, say so."""
    if run.cancel_requested:
        services.finish(run, PerfRun.Status.CANCELLED, "cancelled", "Stopped on request; the steps that finished "
                                                                    "are kept.")
    elif run.deadline_at and timezone.now() >= run.deadline_at:
        limit = LoadLimits.for_org(run.organization).max_duration_s
        services.fail(run, "max_duration", f"The run reached {run.organization.name}'s maximum duration of {limit} s; "
                                           "the steps that finished are kept.")
    else:
        return False
    services.release_locks(run)
    return True


def agents_failed(errors: list[dict], index: int) -> tuple[str, str]:
    """Agents of step `index` that raised (their {"error", "message"}): the run ends with their errors."""
    detail = "; ".join(f"{e['error']}: {e['message']}" for e in errors)[:1000]
    return "engine_error", f"The measurement of step {index + 1} failed ({detail})."


def step_problem(run, entry: dict) -> tuple[str, str] | None:
    """A step where nothing got through ends the run: say why, in the site owner's words."""
    result = entry["result"]
    if result.get("stalled"):
        return "stalled", stalled_message(run, entry)
    if result.get("cancelled"):
        return None  # stopped or out of time: ended_early() says which
    if "counters" in result:
        counters = result["counters"]
        if counters["complete"] == 0 and counters["failed"]:
            where = f"{entry['scheme']}://{run.host}:{entry_port(run, entry)}"
            if set(result.get("errors") or {}) == {"timeout"}:   # a short step (the warm-up) can end before the stall bound
                return "stalled", (f"Every request to {where} timed out ({describe_error('timeout', counters['failed'], run)})"
                                   ", so the run was stopped: the server stalls, or sends its responses a few bytes "
                                   "at a time.")
            errors = ", ".join(describe_error(k, v, run) for k, v in (result.get("errors") or {}).items()) or \
                f"{counters['failed_connect']} connection failures"
            return "no_response", f"No request to {where} completed ({errors}): is the server up on this port?"
        return None
    if not result.get("count") and result.get("failures"):
        failures = ", ".join(f"{k}: {v}" for k, v in result["failures"].items())
        return "handshake_failed", f"No TLS {result.get('version')} handshake with {run.host} succeeded ({failures})."
    return None


def stalled_message(run, entry: dict) -> str:
    """A step its progress deadline ended: every request (or handshake) timed out for that long."""
    result = entry["result"]
    stall = stall_after(float(run.params.get("timeout_s", 10)))  # handshake runs: 10 s, HandshakeSpec's
    if "counters" in result:
        where = f"{entry['scheme']}://{run.host}:{entry_port(run, entry)}"
        return (f"Every request to {where} timed out for {stall:g} s, so the run was stopped: the server stalls, "
                "or sends its responses a few bytes at a time.")
    return (f"Every TLS {result.get('version')} handshake with {run.host} timed out for {stall:g} s, so the run "
            "was stopped: the server stalls handshakes, or sends them a few bytes at a time.")


def describe_error(key: str, count: int, run) -> str:
    """An engine error key in words: "timeout" says after how long."""
    if key == "timeout":
        return f"{count} got no complete response within {run.params.get('timeout_s', 10):g} s"
    return f"{key}: {count}"


def entry_port(run, entry: dict) -> int:
    return plans.ports_of(run.site)[entry["scheme"]]
