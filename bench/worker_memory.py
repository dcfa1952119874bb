"""Worker memory (issue #9): the RSS of a Celery worker process over consecutive audits. Goal: flat, < 300 MB.

    .venv/bin/python bench/worker_memory.py [--quick] [--json OUT] [--audits 200] [--recycle-after 50]

One real `celery worker -Q scan -c 1` (prefork: one pool process) on the bench PostgreSQL and Redis,
and the fleet's graded servers (bench/fleet.py). Audits go through `queue_audit` (as scheduled audits:
manual ones are rate-limited per organization) one after another
(the next is queued when the previous finished), cycling over the servers; after each one the RSS of
the pool process is read from /proc. Two phases, each with a fresh worker:

1. recycling on: `worker_max_tasks_per_child` as workers/celery.py sets it (`--recycle-after` overrides);
2. recycling off: `worker_max_tasks_per_child = None`, the same pool process runs every audit,
   so a leak in sslyze or in our code shows as a slope.

Quick mode runs phase 2 only, 20 audits, and does not judge flatness (RSS climbs for about 40 audits
before it levels off); the full mode's 200 audits per phase do.

Reported per phase: RSS after the first audit, peak, last, and the drift: the median RSS of the last
quarter of the audits minus that of the second quarter. "Flat" means a drift under 10 MiB (a
least-squares slope is in the note, but recycling makes RSS a saw-tooth that a slope misreads).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.fleet import start_fleet  # noqa: E402
from bench.stack import (  # noqa: E402
    Worker,
    WorkerOptions,
    bench_organization,
    configure_environment,
    ensure_database,
    purge_queues,
    rss_mib,
)

BENCH = {"title": "Worker memory", "order": 20, "quick_timeout_s": 300, "full_timeout_s": 2400}
GOAL_MIB = 300
FLAT_DRIFT_MIB = 10.0
DEFAULT_AUDITS = 200
MIN_AUDITS_TO_JUDGE = 100  # a pool process's RSS climbs for about 40 audits before it levels off
WARM_UP_AUDITS = 10
POLL_S = 0.02


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--audits", type=int, help="consecutive audits per phase (default 200, quick 20)")
    parser.add_argument("--recycle-after", type=int,
                        help="worker_max_tasks_per_child in the recycling phase (default: workers/celery.py's)")
    parser.add_argument("--servers", type=int, default=21, help="distinct servers to cycle over")
    parser.add_argument("--phases", choices=("both", "recycling", "no-recycling"),
                        help="which phases to run (default both; quick: no-recycling)")
    args = parser.parse_args()
    args.audits = args.audits if args.audits is not None else (20 if args.quick else DEFAULT_AUDITS)
    if args.audits <= WARM_UP_AUDITS + 2:
        parser.error(f"--audits must be more than {WARM_UP_AUDITS + 2} (the first {WARM_UP_AUDITS} are warm-up)")
    if args.recycle_after is not None and args.recycle_after < 1:
        parser.error("--recycle-after must be at least 1")
    if args.servers < 1:
        parser.error("--servers must be at least 1")
    args.phases = args.phases or ("no-recycling" if args.quick else "both")
    return args


def slope_per_100(samples: list[float]) -> float:
    """Least-squares slope of RSS over audit number, in MiB per 100 audits."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(samples) / n
    num = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(samples))
    den = sum((x - mean_x) ** 2 for x in range(n))
    return num / den * 100


def run_phase(label: str, options: WorkerOptions, sites: list, audits: int) -> dict:
    """`audits` consecutive audits on one fresh worker; RSS of its pool process after each."""
    from tlsaudit.audits.models import Audit
    from tlsaudit.audits.services import queue_audit

    log = ROOT / "var" / "bench" / f"worker-memory-{label}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    rss, pids, failed = [], [], []
    purge_queues("scan", "default")
    started = time.perf_counter()
    with Worker(options, log) as worker:
        worker.wait_ready()
        for i in range(audits):
            pool = tuple(worker.pool_pids())  # with -c 1: the process that will run this audit
            audit, _ = queue_audit(sites[i % len(sites)], trigger="schedule")
            while (status := Audit.objects.filter(pk=audit.pk).values_list("status", flat=True)[0]) in (
                    "queued", "running"):
                time.sleep(POLL_S)
            if status != "done":
                failed.append(audit.pk)
            rss.append(rss_after(pool, worker))
            pids.append(pool)
            if (i + 1) % 20 == 0:
                print(f"  {label}: {i + 1}/{audits} audits, pool RSS {rss[-1] or 0:.0f} MiB", file=sys.stderr,
                      flush=True)
        main_rss = rss_mib(worker.pid)
    return {"label": label, "rss": rss, "pids": pids, "pool_processes": len(set(pids)), "failed": failed,
            "main_rss": main_rss,
            "wall_s": time.perf_counter() - started}


def rss_after(pool: tuple[int, ...], worker: Worker) -> float | None:
    """RSS of the process that ran the audit; None when it has just been recycled (exited after its
    last task): the new process did not run the audit, so its RSS would say nothing about it."""
    alive = [p for p in pool if p in worker.pool_pids()]
    return max((rss_mib(p) for p in alive), default=0.0) or None


def drift(samples: list[float]) -> float:
    """Median RSS of the last quarter minus that of the second quarter: robust to noise and to the
    saw-tooth of recycling, where a least-squares slope is not."""
    quarter = max(1, len(samples) // 4)
    return statistics.median(samples[-quarter:]) - statistics.median(samples[quarter:2 * quarter])


def generation_peaks(rss: list[float | None], pids: list[tuple]) -> list[float]:
    """The peak RSS of each pool process in turn (a new one after each recycling)."""
    peaks, current = [], None
    for value, pool in zip(rss, pids):
        if value is None:
            continue
        if pool != current:
            peaks.append(value)
            current = pool
        peaks[-1] = max(peaks[-1], value)
    return peaks


def record_phase(recorder: Recorder, phase: dict, setting: str) -> bool:
    samples = phase["rss"]
    rss = [v for v in samples if v is not None]  # not the samples taken as a pool process was recycled
    peak, change = max(rss), drift(rss)
    recorder.figure(f"{setting}: RSS after audit 1", rss[0], "MiB")
    recorder.figure(f"{setting}: peak RSS", peak, "MiB", goal=f"< {GOAL_MIB} MiB", met=peak < GOAL_MIB)
    last = max(i for i, v in enumerate(samples) if v is not None) + 1
    recorder.figure(f"{setting}: RSS after audit {last}", rss[-1], "MiB")
    judged = len(rss) >= MIN_AUDITS_TO_JUDGE
    recorder.figure(f"{setting}: drift, last quarter vs second quarter", change, "MiB",
                    goal=f"< {FLAT_DRIFT_MIB:.0f} MiB (flat)" if judged else "",
                    met=change < FLAT_DRIFT_MIB if judged else None,
                    note=("" if judged else "too few audits to judge: RSS climbs over the first ~40 audits, then "
                                            f"levels off (the full mode's {DEFAULT_AUDITS} decide); ")
                    + f"slope after audit {WARM_UP_AUDITS}: {slope_per_100(rss[WARM_UP_AUDITS:]):+.1f} MiB/100 "
                      f"audits; {phase['pool_processes']} pool process(es); {len(samples) - len(rss)} samples skipped "
                      f"(the process had just been recycled); {len(phase['failed'])} audits not done; "
                      f"{phase['wall_s']:.0f} s")
    every = max(1, len(rss) // 10)
    peaks = generation_peaks(samples, phase["pids"])
    recorder.note(f"{setting}: pool RSS every {every} audits (MiB): "
                  + ", ".join(f"{rss[i]:.0f}" for i in range(0, len(rss), every)) + f", last {rss[-1]:.0f}"
                  + (f"; peak of each pool process: {', '.join(f'{p:.0f}' for p in peaks)}" if len(peaks) > 1
                     else "")
                  + f"; worker main process {phase['main_rss']:.0f} MiB.")
    return not phase["failed"]  # a goal missed is a result; an audit that failed makes the run invalid


def main() -> None:
    args = parse_args()
    configure_environment()
    ensure_database()
    from workers.celery import app

    recorder = Recorder(BENCH["title"], args)
    default_recycle = app.conf.worker_max_tasks_per_child
    recycle = args.recycle_after if args.recycle_after is not None else default_recycle
    phases = [(f"recycling after {recycle} tasks", WorkerOptions(concurrency=1, max_tasks_per_child=recycle)),
              ("no recycling", WorkerOptions(concurrency=1, max_tasks_per_child=None))]
    if args.phases != "both":  # quick: the leak check only, 20 audits would not reach a recycling anyway
        phases = phases[:1] if args.phases == "recycling" else phases[1:]
    ok = True
    with start_fleet(args.servers) as fleet:
        org = bench_organization("memory", fleet.ca_file.read_text())
        try:
            from tlsaudit.sites.models import Site

            sites = Site.objects.bulk_create([
                Site(organization=org, hostname="localhost", https_port=s.port, http_port=s.http_port,
                     pinned_ip="127.0.0.1", name=s.name) for s in fleet.servers])
            for index, (setting, options) in enumerate(phases):
                phase = run_phase(f"phase{index + 1}", options, sites, args.audits)
                ok &= record_phase(recorder, phase, f"{setting}, {args.audits} audits")
        finally:
            purge_queues("scan", "default")
            org.delete()
    recorder.note(f"One pool process (celery -c 1, prefork); workers/celery.py sets worker_max_tasks_per_child="
                  f"{default_recycle}. RSS read from /proc/PID/statm after each audit finished. "
                  f"Slope: least squares over audits {WARM_UP_AUDITS + 1}..{args.audits}.")
    recorder.write()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
