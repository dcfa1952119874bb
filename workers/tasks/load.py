"""Performance runs as distributed agents: thin glue between the PerfRun row and the load engines.

A run is a list of steps (plans.py) run one after another; each step is a Celery chord: a group
of `run_agent` tasks (each runs its share of n and c, or of the handshake agents, and returns the
engine's plain dict with encoded histograms) whose callback `merge_agents` merges them exactly,
stores the step on the row and sends the next step's chord. All names are under
`workers.tasks.load.*`, so they run on the `load` queue, on any number of worker hosts.
"""

import logging
import time
from contextlib import suppress

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from workers.celery import app

log = logging.getLogger(__name__)
LOCK_WAIT_SECONDS = 5
LOCK_MARGIN_SECONDS = 120
STALL_MARGIN_S = 5.0


@app.task(name="workers.tasks.load.start_run", bind=True, acks_late=True, max_retries=60)
def start_run(self, run_id: int) -> str:
    """1. load the queued run and check the site's proof still holds, 2. resolve and check the target,
    3. lock its ip:port(s), 4. plan the steps, 5. claim the row atomically, 6. send the first step's agents."""
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests import verification as proofs
    from tlsaudit.loadtests.models import LoadLimits, PerfRun
    from workers.net.errors import TargetError
    from workers.net.target import resolve_target

    run = PerfRun.objects.select_related("site__organization").filter(pk=run_id).first()
    if run is None or run.status != PerfRun.Status.QUEUED:
        return "skipped"  # deleted with its site, stopped while queued, or another delivery ran it
    site = run.site
    unverified = services.unverified_reason(site)   # edited while the run was queued?
    if unverified:
        services.fail(run, "unverified", f"{unverified} No load was sent.")
        return "failed"
    try:
        target = resolve_target(site.hostname, site.https_port, pinned_ip=site.pinned_ip,
                                allow_private=settings.ALLOW_PRIVATE_TARGETS, resolver=settings.DNS_RESOLVER)
    except TargetError as exc:
        services.fail(run, exc.code, exc.message)
        return "failed"
    unproven = proofs.address_unproven_reason(site, target.ip)   # the name may point elsewhere by now
    if unproven:
        services.fail(run, "unverified", f"{unproven} No load was sent.")
        return "failed"
    problem = unreachable(run, target.ip)
    if problem is not None:
        services.fail(run, problem.code, f"{problem.message} No load was sent.")
        return "failed"
    limits = LoadLimits.for_org(site.organization)
    if not acquire_locks(run, target.ip, limits.max_duration_s):
        if self.request.retries >= self.max_retries:
            services.fail(run, "busy", "Another run against this server did not finish in time; please retry.")
            return "failed"
        raise self.retry(countdown=LOCK_WAIT_SECONDS)  # another run against this server is in progress
    try:
        steps = plan_steps(run, target.ip)
    except Exception as exc:  # a probe of the handshake plan failed: a site-owner message, not a crash
        release_locks(run, target.ip)
        services.fail(run, "plan_failed", f"Could not prepare the run against {site.display_origin}: {exc}")
        return "failed"
    if not services.claim(run_id, target.ip, steps, limits.max_duration_s):
        release_locks(run, target.ip)
        return "skipped"
    save_plan(run_id, steps)
    dispatch_step(run_id, 0)
    return "started"


def unreachable(run, ip: str):
    """Pre-flight every port the run will load (TCP, plus one TLS handshake for HTTPS) with a deadline
    on the whole exchange: a silent, dropping, trickling or non-TLS server fails the run in seconds,
    with the reason, before any agent starts (their per-request timeouts would take n/c x timeout_s).
    A refused port is left to the engine: it fails as fast and says so already."""
    from workers.tls.reach import engine_preflight

    for scheme, port in run_ports(run):
        problem = engine_preflight(ip, port, run.site.hostname, settings.SCAN_NETWORK_TIMEOUT, tls=scheme == "https")
        if problem is not None:
            return problem
    return None


def run_ports(run) -> list[tuple[str, int]]:
    site = run.site
    if run.kind == "sweep":
        return [("http", site.http_port), ("https", site.https_port)]
    scheme = run.params.get("scheme", "https") if run.kind == "load" else "https"
    return [(scheme, site.http_port if scheme == "http" else site.https_port)]


def plan_steps(run, ip: str) -> list[dict]:
    from tlsaudit.loadtests import plans

    site = run.site
    ports = {"http": site.http_port, "https": site.https_port}
    if run.kind == "load":
        return plans.load_steps(run.params, ports)
    if run.kind == "sweep":
        return plans.sweep_steps(run.params, ports)
    from workers.load.handshake import matrix_suites

    # Its probe handshakes end, with the plan, within the stall bound: a server that stalls them all fails here.
    suites, why_none = matrix_suites(site.hostname, site.https_port, ip, run.params["versions"],
                                     run.params["suites"] or None,
                                     deadline=time.monotonic() + settings.LOAD_STALL_SECONDS)
    steps = plans.handshake_steps(run.params, suites)
    if not steps:
        raise ValueError("; ".join(f"TLS {v}: {why}" for v, why in why_none.items()))
    return steps


def save_plan(run_id: int, steps: list[dict]) -> None:
    from tlsaudit.loadtests.models import PerfRun

    run = PerfRun.objects.get(pk=run_id)
    run.progress = {"steps": [{**step, "status": "pending"} for step in steps], "current": 0}
    run.save(update_fields=["progress"])


def dispatch_step(run_id: int, index: int) -> None:
    """Send step `index` as a chord of agent tasks, or end the run if it was stopped or ran out of time."""
    from celery import chord

    from tlsaudit.loadtests import plans, services
    from tlsaudit.loadtests.models import PerfRun

    run = PerfRun.objects.get(pk=run_id)
    if ended_early(run):
        return
    step = run.progress["steps"][index]
    shares = plans.agent_shares(step, settings.LOAD_AGENTS)
    services.mark_step(run_id, index, "running")
    header = [run_agent.s(run_id, index, share) for share in shares]
    chord(header)(merge_agents.s(run_id, index).on_error(agent_lost.si(run_id, index)))


def ended_early(run) -> bool:
    """Stopped by the user, or past the organization's max duration: finish the run, say so."""
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests.models import LoadLimits, PerfRun

    if run.cancel_requested:
        services.finish(run, PerfRun.Status.CANCELLED, "cancelled", "Stopped on request; the steps that finished "
                                                                    "are kept.")
    elif run.deadline_at and timezone.now() >= run.deadline_at:
        limit = LoadLimits.for_org(run.organization).max_duration_s
        services.fail(run, "max_duration", f"The run reached {run.organization.name}'s maximum duration of {limit} s; "
                                           "the steps that finished are kept.")
    else:
        return False
    release_locks(run, run.ip)
    return True


@app.task(name="workers.tasks.load.run_agent", acks_late=True, ignore_result=False,
          soft_time_limit=settings.LOAD_MAX_DURATION_S * 10 + 60, time_limit=settings.LOAD_MAX_DURATION_S * 10 + 90)
def run_agent(run_id: int, index: int, share: dict) -> dict:
    """One agent's share of one step: {"result": engine dict} or {"error", "message"} (never raises,
    so a broken agent ends the run with a message instead of a stuck chord)."""
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests.models import PerfRun

    run = PerfRun.objects.select_related("site").filter(pk=run_id).first()
    if run is None or run.status != PerfRun.Status.RUNNING or run.cancel_requested:
        return {"skipped": "cancelled"}  # queued agents of a stopped run do nothing
    step = run.progress["steps"][index]
    try:
        with services.AgentMonitor(run_id, run.deadline_at) as monitor:
            run_share = run_load_share if step["engine"] == "load" else run_handshake_share
            result = run_share(run, step, share, monitor.cancel, monitor.on_progress)
    except Exception as exc:  # engine bug or unexpected network state: report it on the row
        log.exception("agent %s of run %s step %s failed", share, run_id, index)
        return {"error": exc.__class__.__name__, "message": str(exc)[:500]}
    return {"result": result}


def run_load_share(run, step: dict, share: dict, cancel, counter) -> dict:
    from workers.load.client import run_load
    from workers.load.spec import LoadSpec

    timeout_s = float(run.params.get("timeout_s", 10))
    limits = [limit for limit in (step.get("time_limit_s"), time_left(run)) if limit is not None]
    spec = LoadSpec(scheme=step["scheme"], host=run.host, port=step["port"], path=step["path"], ip=run.ip,
                    requests=share["requests"], concurrency=share["concurrency"],
                    keepalive=step["mode"] == "keepalive", timeout_s=timeout_s,
                    time_limit_s=min(limits) if limits else None, stall_s=stall_after(timeout_s))
    return run_load(spec, cancel=cancel, on_progress=counter).to_dict()


def time_left(run) -> float | None:
    """Seconds until the run's deadline (its organization's max duration from the claim), at least 1."""
    remaining = (run.deadline_at - timezone.now()).total_seconds() if run.deadline_at else None
    return max(1.0, remaining) if remaining is not None else None


def stall_after(timeout_s: float) -> float:
    """The progress deadline of a step (LOAD_STALL_SECONDS): a server that lets every request time out
    for that long (dead, stalling, trickling) ends the run, whatever its size. Always longer than one
    request or handshake may take, so that a single timeout never ends a run by itself."""
    return max(float(settings.LOAD_STALL_SECONDS), timeout_s + STALL_MARGIN_S)


def run_handshake_share(run, step: dict, share: dict, cancel, counter) -> dict:
    from workers.load.handshake import run_handshakes
    from workers.load.spec import HandshakeSpec

    spec = HandshakeSpec(host=run.host, port=run.site.https_port, ip=run.ip, version=step["version"],
                         suite=step["suite"], agents=share["agents"], per_agent=step["per_agent"],
                         resume=step["resume"], time_limit_s=time_left(run),
                         stall_s=stall_after(HandshakeSpec.timeout_s))
    return run_handshakes(spec, cancel=cancel, on_progress=counter)


@app.task(name="workers.tasks.load.merge_agents", acks_late=True)
def merge_agents(outputs: list[dict], run_id: int, index: int) -> str:
    """The chord callback: merge the agents' results exactly, store the step, send the next one."""
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests.models import PerfRun

    run = PerfRun.objects.select_related("site", "organization").get(pk=run_id)
    if run.status != PerfRun.Status.RUNNING or any(e["step"] == index for e in run.results):
        return "skipped"  # a duplicate delivery of this callback
    step = run.progress["steps"][index]
    results = [o["result"] for o in outputs if "result" in o]
    errors = [o for o in outputs if "error" in o]
    if results:
        entry = merged_entry(step, index, results)
        services.store_step(run_id, entry)
        run.refresh_from_db()
        problem = step_problem(run, entry)
        if problem and not run.cancel_requested:
            services.fail(run, *problem)
            release_locks(run, run.ip)
            return "failed"
    if errors and not run.cancel_requested:
        detail = "; ".join(f"{e['error']}: {e['message']}" for e in errors)[:1000]
        services.fail(run, "engine_error", f"The measurement of step {index + 1} failed ({detail}).")
        release_locks(run, run.ip)
        return "failed"
    if ended_early(run):
        return "ended"
    if index + 1 < len(run.progress["steps"]):
        dispatch_step(run_id, index + 1)
        return "next"
    services.finish(run, PerfRun.Status.DONE)
    release_locks(run, run.ip)
    return "done"


def merged_entry(step: dict, index: int, results: list[dict]) -> dict:
    if step["engine"] == "handshake":
        from workers.load.handshake import merge_handshake_results

        cell = {k: step.get(k) for k in ("version", "suite", "agents", "per_agent", "resume", "repeat", "warmup")}
        return {"step": index, "label": step["label"], "cell": cell, "result": merge_handshake_results(results)}
    from tlsaudit.domain.abstats import ab_report
    from workers.load.client import merge_results

    merged = merge_results(results)
    report = ab_report(merged)
    merged.pop("samples", None)  # per-request samples are large; the histograms stay and re-derive the report
    return {"step": index, "label": step["label"], "scheme": step["scheme"], "level": step["level"],
            "mode": step["mode"], "repeat": step.get("repeat", 0), "warmup": step.get("warmup", False),
            "result": merged, "report": report}


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
    return run.site.http_port if entry["scheme"] == "http" else run.site.https_port


@app.task(name="workers.tasks.load.agent_lost", acks_late=True)
def agent_lost(run_id: int, index: int) -> str:
    """Errback of a step's chord: an agent died (time limit, worker killed) without a result."""
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests.models import PerfRun

    run = PerfRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished:
        return "skipped"
    services.fail(run, "worker_lost", f"An agent of step {index + 1} stopped without a result (worker lost or "
                                      "time limit). Please retry.")
    release_locks(run, run.ip)
    return "failed"


# --- one run per target ----------------------------------------------------------------------

def lock_keys(run, ip: str) -> list[str]:
    site = run.site
    ports = {"load": [site.http_port if run.params.get("scheme") == "http" else site.https_port],
             "sweep": [site.http_port, site.https_port], "handshakes": [site.https_port]}[run.kind]
    return [f"tlsaudit:loadlock:{ip}:{port}" for port in sorted(set(ports))]


def acquire_locks(run, ip: str, max_duration_s: int) -> bool:
    """All of the run's ip:port locks or none (cache.add is SET NX on Redis)."""
    taken = []
    for key in lock_keys(run, ip):
        if not cache.add(key, run.pk, timeout=max_duration_s + LOCK_MARGIN_SECONDS):
            for held in taken:
                cache.delete(held)
            return False
        taken.append(key)
    return True


def release_locks(run, ip: str | None) -> None:
    if not ip:
        return
    for key in lock_keys(run, ip):
        with suppress(Exception):
            if cache.get(key) == run.pk:
                cache.delete(key)
