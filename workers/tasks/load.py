"""Performance runs as distributed agents: thin glue between the PerfRun row and the load engines.

A run is a list of steps (tlsaudit/loadtests/plans.py) run one after another; each step is a Celery
chord: a group of `run_agent` tasks (each runs its share of n and c, or of the handshake agents, and
returns the engine's plain dict with encoded histograms) whose callback `merge_agents` merges them
exactly, stores the step on the row and sends the next step's chord. The run's opening is the gate's
(gate.py); its ip:port locks outlive `start_run` and are freed when the run ends. All names are under
`workers.tasks.load.*`, so they run on the `load` queue, on any number of worker hosts.
"""

import logging
import time

from celery import chord
from django.conf import settings
from django.utils import timezone

from tlsaudit.domain.applicability import not_applicable_reason
from tlsaudit.loadtests import checks, plans, services
from tlsaudit.loadtests import verification as proofs
from tlsaudit.loadtests.models import LoadLimits, PerfRun
from tlsaudit.loadtests.outcomes import BUSY, LOCK_LOST, NO_LOAD, agents_failed, ended_early, stall_after, step_problem
from workers.celery import app
from workers.load.client import run_load
from workers.load.handshake import matrix_suites, run_handshakes
from workers.load.spec import HandshakeSpec, LoadSpec
from workers.load.steps import merged_entry
from workers.tasks import gate

log = logging.getLogger(__name__)
LOCK_MARGIN_SECONDS = 120
fail = gate.without_detail(services.fail)  # how the gate fails a run row


@app.task(name="workers.tasks.load.start_run", bind=True, acks_late=True, max_retries=60)
@gate.opening
def start_run(self, run_id: int) -> str:
    """1. load the queued run and check the site's proof still holds, 2. resolve and check the target
    (at the proven address), 3. pre-flight the ports it loads, 4. lock those ip:ports, 5. plan the steps,
    6. claim the row atomically, 7. hand the locks to the run (its end frees them), send the first step."""
    run = gate.queued(PerfRun, run_id)
    # The site may have been edited while the run was queued: to another service, or its proof lost.
    not_applicable = not_applicable_reason(run.site.tls_service, run.kind)
    if not_applicable:
        gate.refuse(run, fail, "not_applicable", f"{not_applicable} {NO_LOAD}")
    unverified = checks.unverified_reason(run.site)
    if unverified:
        gate.refuse(run, fail, "unverified", f"{unverified} {NO_LOAD}")
    target = gate.resolved(run, fail)
    unproven = proofs.address_unproven_reason(run.site, target.ip)   # the name may point elsewhere by now
    if unproven:
        gate.refuse(run, fail, "unverified", f"{unproven} {NO_LOAD}")
    ports = services.target_ports(run)
    gate.reachable(run, target.ip, ports, fail, then=f" {NO_LOAD}")
    limits = LoadLimits.for_org(run.site.organization)
    # Held by this process until the claim (a start task killed before it is taken over by its own
    # redelivery), then handed to the run, which outlives this task.
    seconds = limits.max_duration_s + LOCK_MARGIN_SECONDS
    with gate.target_lock(services.LOCK_KIND, target.ip, [port for _, port in ports], gate.holder_of(run_id),
                          seconds) as lock:
        if not lock:  # another run against this server is in progress
            gate.wait_for_target(self, settings.LOAD_LOCK_WAIT_SECONDS, give_up=lambda: services.fail(run, "busy", BUSY))
        steps = planned_steps(run, target.ip)
        if not services.claim(run_id, target.ip, steps, limits.max_duration_s, lock.keys):
            return gate.SKIPPED
        if not lock.keep(services.run_holder(run_id), seconds):
            # Redis may have run the hand-over and lost only its reply: then the run holds the keys,
            # and nothing else would free them before they expire.
            services.fail(run, "lock_lost", LOCK_LOST)
            services.release_locks(PerfRun.objects.get(pk=run_id))
            return gate.FAILED
    services.save_plan(run_id, steps)
    dispatch_step(run_id, 0)
    return "started"


def planned_steps(run, ip: str) -> list[dict]:
    try:
        return plan_steps(run, ip)
    except Exception as exc:  # a probe of the handshake plan failed: a site-owner message, not a crash
        gate.refuse(run, fail, "plan_failed", f"Could not prepare the run against {run.site.display_origin}: {exc}")


def plan_steps(run, ip: str) -> list[dict]:
    site = run.site
    ports = plans.ports_of(site)
    if run.kind == "load":
        return plans.load_steps(run.params, ports)
    if run.kind == "sweep":
        return plans.sweep_steps(run.params, ports)
    # Its probe handshakes end, with the plan, within the stall bound: a server that stalls them all fails here.
    suites, why_none = matrix_suites(site.hostname, site.https_port, ip, run.params["versions"],
                                     run.params["suites"] or None,
                                     deadline=time.monotonic() + settings.LOAD_STALL_SECONDS)
    steps = plans.handshake_steps(run.params, suites)
    if not steps:
        raise ValueError("; ".join(f"TLS {v}: {why}" for v, why in why_none.items()))
    return steps


def dispatch_step(run_id: int, index: int) -> None:
    """Send step `index` as a chord of agent tasks, or end the run if it was stopped or ran out of time."""
    run = PerfRun.objects.get(pk=run_id)
    if ended_early(run):
        return
    step = run.progress["steps"][index]
    shares = plans.agent_shares(step, settings.LOAD_AGENTS)
    services.mark_step(run_id, index, "running")
    header = [run_agent.s(run_id, index, share) for share in shares]
    chord(header)(merge_agents.s(run_id, index).on_error(agent_lost.si(run_id, index)))


@app.task(name="workers.tasks.load.run_agent", acks_late=True, ignore_result=False,
          soft_time_limit=settings.LOAD_MAX_DURATION_S * 10 + 60, time_limit=settings.LOAD_MAX_DURATION_S * 10 + 90)
def run_agent(run_id: int, index: int, share: dict) -> dict:
    """One agent's share of one step: {"result": engine dict} or {"error", "message"} (never raises,
    so a broken agent ends the run with a message instead of a stuck chord)."""
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
    timeout_s = float(run.params.get("timeout_s", 10))
    spec = LoadSpec(scheme=step["scheme"], host=run.host, port=step["port"], path=step["path"], ip=run.ip,
                    requests=share["requests"], concurrency=share["concurrency"],
                    keepalive=step["mode"] == "keepalive", timeout_s=timeout_s,
                    time_limit_s=step_limit(step, run), stall_s=stall_after(timeout_s))
    return run_load(spec, cancel=cancel, on_progress=counter).to_dict()


def step_limit(step: dict, run) -> float | None:  # the step's own seconds, or less if the deadline is sooner
    return min((limit for limit in (step.get("time_limit_s"), time_left(run)) if limit is not None), default=None)

def time_left(run) -> float | None:
    """Seconds until the run's deadline (its organization's max duration from the claim), at least 1."""
    remaining = (run.deadline_at - timezone.now()).total_seconds() if run.deadline_at else None
    return max(1.0, remaining) if remaining is not None else None


def run_handshake_share(run, step: dict, share: dict, cancel, counter) -> dict:
    spec = HandshakeSpec(host=run.host, port=run.site.https_port, ip=run.ip, version=step["version"],
                         suite=step["suite"], agents=share["agents"], per_agent=step["per_agent"],
                         resume=step["resume"], time_limit_s=step_limit(step, run),
                         timeout_s=settings.HANDSHAKE_STEP_TIMEOUT_SECONDS,
                         stall_s=stall_after(settings.HANDSHAKE_STEP_TIMEOUT_SECONDS))
    return run_handshakes(spec, cancel=cancel, on_progress=counter)


@app.task(name="workers.tasks.load.merge_agents", acks_late=True)
def merge_agents(outputs: list[dict], run_id: int, index: int) -> str:
    """The chord callback: merge the agents' results exactly, store the step, send the next one."""
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
            services.release_locks(run)
            return "failed"
    if errors and not run.cancel_requested:
        services.fail(run, *agents_failed(errors, index))
        services.release_locks(run)
        return "failed"
    if ended_early(run):
        return "ended"
    if index + 1 < len(run.progress["steps"]):
        dispatch_step(run_id, index + 1)
        return "next"
    services.finish(run, PerfRun.Status.DONE)
    services.release_locks(run)
    return "done"


@app.task(name="workers.tasks.load.agent_lost", acks_late=True)
def agent_lost(run_id: int, index: int) -> str:
    """Errback of a step's chord: an agent died (time limit, worker killed) without a result."""
    run = PerfRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished:
        return "skipped"
    services.fail(run, "worker_lost", f"An agent of step {index + 1} stopped without a result (worker lost or "
                                      "time limit). Please retry.")
    services.release_locks(run)
    return "failed"
