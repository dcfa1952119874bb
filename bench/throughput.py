"""Audit throughput (issue #9): N local TLS servers audited by real Celery workers. Goal: 100 in < 120 s.

    .venv/bin/python bench/throughput.py [--quick] [--json OUT] [--targets 100] [--concurrency 2]
        [--prefetch N] [--connections N] [--pool prefork] [--nginx-workers 1]

1. Start one nginx with `--targets` TLS server blocks (bench/fleet.py: the lab's graded configurations,
   mixed), and a bench organization trusting its CA, with one site per server (localhost, pinned 127.0.0.1).
2. Start a real `celery worker -Q scan -c CONCURRENCY` (prefork: CONCURRENCY worker processes) on the
   bench Redis and PostgreSQL, and wait until every pool process has warmed up (sslyze loaded).
3. Queue every audit through the service layer (`tlsaudit.audits.services.queue_audit`) as scheduled
   audits (the nightly path; manual ones are rate-limited per organization), and poll the rows until
   every audit has finished.
4. Report wall time (first queue_audit to last finished_at), audits/minute, audit duration
   percentiles, CPU seconds of the workers and of nginx, peak RSS, and check every grade against the
   fixture's expected grade: a wrong or failed audit fails the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.fleet import start_fleet  # noqa: E402
from bench.stack import (  # noqa: E402
    RssSampler,
    Worker,
    WorkerOptions,
    bench_organization,
    configure_environment,
    ensure_database,
    purge_queues,
    tree_cpu_seconds,
)

BENCH = {"title": "Audit throughput", "order": 10, "quick_timeout_s": 300, "full_timeout_s": 900}
GOAL_S_PER_100 = 120
POLL_S = 0.25
CORES = len(os.sched_getaffinity(0))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--targets", type=int, help="number of servers/audits (default 100, quick 20)")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes (default %(default)s)")
    parser.add_argument("--pool", default="prefork", choices=("prefork", "threads"))
    parser.add_argument("--prefetch", type=int, help="worker_prefetch_multiplier (default: workers/celery.py's)")
    parser.add_argument("--connections", type=int, help="SCAN_CONNECTIONS_PER_SERVER (default: settings')")
    parser.add_argument("--nginx-workers", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=480, help="give up after this many seconds of auditing")
    parser.add_argument("--nice", type=int, default=0,
                        help="run this script, the worker and nginx at this niceness (e.g. -10 on a shared machine: "
                             "other jobs yield the cores; needs root for negative values)")
    parser.add_argument("--keep", action="store_true", help="keep the organization and its audits (to inspect)")
    parser.add_argument("--worker-log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING"),
                        help="of the worker's log, var/bench/throughput-worker.log")
    args = parser.parse_args()
    args.targets = args.targets if args.targets is not None else (20 if args.quick else 100)
    for name in ("targets", "concurrency", "nginx_workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.connections is not None and not 1 <= args.connections <= 5:
        parser.error("--connections must be 1..5 (settings.SCAN_CONNECTIONS_PER_SERVER)")
    if args.prefetch is not None and args.prefetch < 1:
        parser.error("--prefetch must be at least 1")
    if not -20 <= args.nice <= 19:
        parser.error("--nice must be -20..19")
    return args


def create_sites(org, fleet) -> dict[int, object]:
    from tlsaudit.sites.models import Site

    sites = Site.objects.bulk_create([
        Site(organization=org, hostname="localhost", https_port=s.port, http_port=s.http_port, pinned_ip="127.0.0.1",
             name=s.name) for s in fleet.servers])
    return {site.pk: server for site, server in zip(sites, fleet.servers)}


def queue_all(sites) -> list[int]:
    from tlsaudit.audits.services import queue_audit

    ids = []
    for site in sites:
        audit, created = queue_audit(site, trigger="schedule")  # the nightly path (manual audits are rate-limited)
        assert created, f"site {site.pk} already had an active audit"
        ids.append(audit.pk)
    return ids


def wait_finished(org, count: int, timeout_s: float) -> int:
    from tlsaudit.audits.models import Audit

    deadline, finished = time.monotonic() + timeout_s, 0
    while time.monotonic() < deadline:
        finished = Audit.objects.filter(organization=org, status__in=("done", "failed")).count()
        if finished >= count:
            return finished
        time.sleep(POLL_S)
    return finished


def check_grades(org, servers_by_site: dict) -> list[str]:
    """Every audit done with its fixture's grade; the list of what is wrong."""
    from tlsaudit.audits.models import Audit

    wrong = []
    for audit in Audit.objects.filter(organization=org):
        server = servers_by_site[audit.site_id]
        if audit.status != "done":
            wrong.append(f"{server.name}: {audit.status} {audit.error_code} {audit.error_message}")
        elif audit.grade != server.spec.grade:
            wrong.append(f"{server.name}: graded {audit.grade}, expected {server.spec.grade}")
    return wrong


def audit_times(org) -> dict:
    from django.db.models import Max, Min

    from tlsaudit.audits.models import Audit

    rows = Audit.objects.filter(organization=org)
    span = rows.aggregate(first_queued=Min("created_at"), first_started=Min("started_at"), last=Max("finished_at"))
    durations = sorted(d for d in rows.values_list("duration_s", flat=True) if d is not None)
    claimed = [(f - s).total_seconds() for s, f in rows.values_list("started_at", "finished_at") if s and f]
    return {**span, "durations": durations, "claimed": claimed}


def percentile(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main() -> None:
    args = parse_args()
    configure_environment()
    # Every server is on 127.0.0.1: one audit of an address at a time (#27) would serialize the run, so
    # the address stands for as many addresses as there are servers, as bench/audit_fleet.py does.
    os.environ["SCAN_AUDITS_PER_IP"] = "100000"
    ensure_database()
    recorder = Recorder(BENCH["title"], args)
    if args.nice:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)  # inherited by nginx and the worker started below
    started = time.perf_counter()
    with start_fleet(args.targets, workers=args.nginx_workers) as fleet:
        print(f"{args.targets} TLS servers up in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        org = bench_organization("throughput", fleet.ca_file.read_text())
        try:
            servers_by_site = create_sites(org, fleet)
            run = audit_fleet(args, org, fleet)
            run["wrong"] = check_grades(org, servers_by_site) if run["finished"] == args.targets else [
                f"only {run['finished']} of {args.targets} audits finished within {args.timeout:.0f} s"]
        finally:
            clean_up(org, args.keep)
    record(recorder, args, run)
    recorder.write()
    if run["wrong"]:
        print("\n".join(["WRONG:", *run["wrong"]]), file=sys.stderr)
        sys.exit(1)


def audit_fleet(args, org, fleet) -> dict:
    """Start the worker, queue every audit, wait for all: wall time, CPU of the worker and of nginx, RSS."""
    options = WorkerOptions(concurrency=args.concurrency, pool=args.pool, prefetch_multiplier=args.prefetch,
                            connections_per_server=args.connections, log_level=args.worker_log_level)
    log = ROOT / "var" / "bench" / "throughput-worker.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    purge_queues("scan", "default")
    with Worker(options, log) as worker:
        ready_s = worker.wait_ready()
        print(f"worker ready in {ready_s:.1f} s (pid {worker.pid}, pool {worker.pool_pids()})", file=sys.stderr)
        sampler = RssSampler(worker.pid, pool_pids=worker.pool_pids)
        sampler.start()
        cpu_worker, cpu_nginx = worker.cpu_seconds(), tree_cpu_seconds(fleet.process.pid)
        t0, t0_wall = time.perf_counter(), datetime.now(timezone.utc)
        queue_all(org.sites.order_by("pk"))
        finished = wait_finished(org, args.targets, args.timeout)
        wall = time.perf_counter() - t0
        cpu_worker = worker.cpu_seconds() - cpu_worker
        cpu_nginx = tree_cpu_seconds(fleet.process.pid) - cpu_nginx
        sampler.stop()
    times = audit_times(org)
    if times["last"] is not None:  # the row's finished_at, not when the poll noticed
        wall = (times["last"] - t0_wall).total_seconds()
    return {"finished": finished, "wall": wall, "cpu_worker": cpu_worker, "cpu_nginx": cpu_nginx,
            "sampler": sampler, "times": times}


def clean_up(org, keep: bool) -> None:
    purge_queues("scan", "default")  # the alert evaluations the audits sent (no default worker here)
    if keep:
        print(f"kept organization {org.pk} ({org.name})", file=sys.stderr)
    else:
        org.delete()


def record(recorder: Recorder, args, run: dict) -> None:
    from django.conf import settings

    connections = args.connections or settings.SCAN_CONNECTIONS_PER_SERVER
    wall, cpu_worker, cpu_nginx = run["wall"], run["cpu_worker"], run["cpu_nginx"]
    sampler, times, wrong = run["sampler"], run["times"], run["wrong"]
    n = args.targets
    goal_s = GOAL_S_PER_100 * n / 100
    setup = (f"{n} servers, celery -c {args.concurrency} ({args.pool}), prefetch "
             f"{args.prefetch or 'default'}, {connections} connections/server"
             + (f", nice {args.nice}" if args.nice else ""))
    recorder.figure(f"wall time, {n} audits", wall, "s", goal=f"< {goal_s:.0f} s" + ("" if n == 100 else
                    f" (120 s per 100, scaled to {n})"), met=wall < goal_s and not wrong, note=setup)
    recorder.figure("throughput", n / wall * 60, "audits/min", goal=f"> {100 / GOAL_S_PER_100 * 60:.0f} audits/min",
                    met=n / wall * 60 > 50 and not wrong)
    durations = times["durations"]
    if durations:
        recorder.figure("audit duration, median", statistics.median(durations), "s")
        recorder.figure("audit duration, p95", percentile(durations, 95), "s")
        overhead = (sum(times["claimed"]) - sum(durations)) / len(durations)
        idle = (wall * args.concurrency - sum(times["claimed"])) / n
        recorder.figure("task overhead per audit", overhead, "s",
                        note="claim -> finished_at minus the engine's duration: the CA file, progress writes")
        recorder.figure("worker idle per audit", idle, "s",
                        note="wall x processes minus claim -> finished_at, per audit: grading and storing the "
                             "result (after finished_at), fetching the next task, the lock, the ramp at both ends")
    recorder.figure("worker CPU (main + pool)", cpu_worker, "s",
                    note=f"{cpu_worker / wall * 100:.0f} % of one core over the run; "
                         f"{cpu_worker / n:.2f} s per audit")
    recorder.figure("nginx CPU (the audited servers)", cpu_nginx, "s",
                    note=f"{cpu_nginx / wall * 100:.0f} % of one core; on the internet this is the sites' cost")
    cpu_per_audit = (cpu_worker + cpu_nginx) / n
    recorder.figure("CPU per audit, worker + nginx", cpu_per_audit, "s",
                    note="the load-independent figure: wall time on a shared machine is mostly waiting for a core")
    recorder.figure(f"estimate: wall time if the {CORES} cores were ours", cpu_per_audit * n / CORES, "s",
                    note=f"CPU / {CORES}: a floor, not a measurement (assumes both cores busy throughout)")
    recorder.figure("peak RSS of one worker process", sampler.peak_child_mib, "MiB", goal="< 300 MiB",
                    met=sampler.peak_child_mib < 300)
    recorder.figure("peak RSS, worker main + pool", sampler.peak_total_mib, "MiB")
    recorder.figure("audits wrong or failed", len(wrong), "", goal="0", met=not wrong,
                    note="; ".join(wrong[:3]))
    recorder.note(f"Throughput: {setup}; wall time from the first `queue_audit` to the last audit finished "
                  "(worker start-up and warm-up excluded: the worker is up before the first audit is queued). "
                  "nginx shares the 2 cores with the workers: on the internet the servers' CPU is not ours.")


if __name__ == "__main__":
    main()
