"""What running audits' heartbeats cost (issue #14): 100 audits in flight in one process, each
beating its row every AUDIT_HEARTBEAT_SECONDS (3 s by default) through the real `keep_alive`.

    .venv/bin/python bench/heartbeat_cost.py [--quick] [--json OUT] [--audits 100] [--seconds 60]

1. Create `--audits` running audits (claimed through `services.claim`, as the task does) in a bench
   organization on the bench database.
2. Run the real `workers.tasks.heartbeat.keep_alive` for each of them for `--seconds`, all in this
   process (as when one worker runs many audits at once), and read PostgreSQL's own counters before
   and after: row updates of audits_audit (and how many were HOT, i.e. touched no index),
   transactions, backends; this process's CPU time, and the server's when it runs on this machine.
3. Timed alone: one audit's beat on a new connection (what each audit's own thread did before
   #14, closing its connection after every beat) and one beat of all the audits on the kept
   connection (what the process's heartbeat thread does now).
Reported: row updates and transactions per second, worker and PostgreSQL CPU, ms per beat.
PostgreSQL's CPU is only meaningful on a server nothing else uses (e.g. a private one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.stack import CLOCK_TICKS, bench_organization, configure_environment, ensure_database  # noqa: E402

BENCH = {"title": "Heartbeat cost", "order": 60, "quick_timeout_s": 120, "full_timeout_s": 400}
TIMED_BEATS = 300


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--audits", type=int, default=100, help="running audits beating at once")
    parser.add_argument("--seconds", type=float, help="how long they beat (default 60, quick 12)")
    args = parser.parse_args()
    args.seconds = args.seconds or (12.0 if args.quick else 60.0)   # quick: 4 beats per audit
    return args


def running_audits(org, count: int) -> list[tuple[int, int]]:
    """(audit id, attempt) of `count` audits claimed as the task claims them."""
    from tlsaudit.audits import services
    from tlsaudit.audits.models import Audit
    from tlsaudit.sites.models import Site

    claimed = []
    for index in range(count):
        site = Site.objects.create(organization=org, hostname=f"beat{index}.bench.test", name=f"beat {index}")
        audit = Audit.objects.create(site=site, organization=org, status=Audit.Status.QUEUED)
        claimed.append((audit.pk, services.claim(audit.pk)))
    return claimed


def counters() -> dict:
    """PostgreSQL's counters for the audits table and this database, this process's CPU time and the
    PostgreSQL server's (when it runs on this machine)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'audits_audit'")
        updates, hot = cursor.fetchone()
        cursor.execute("SELECT xact_commit, numbackends, pg_backend_pid() FROM pg_stat_database "
                       "WHERE datname = current_database()")
        commits, backends, backend = cursor.fetchone()
    return {"updates": updates, "hot": hot, "commits": commits, "backends": backends, "cpu": time.process_time(),
            "server_cpu": server_cpu_seconds(backend)}


def server_cpu_seconds(backend_pid: int) -> float | None:
    """CPU seconds of the PostgreSQL server so far: the postmaster with its exited children, plus the
    live ones. None when the server is not on this machine (its backend's pid is not ours to read)."""
    try:
        postmaster = int(stat_fields(backend_pid)[1])
        ticks = sum(int(v) for v in stat_fields(postmaster)[11:15])  # utime stime cutime cstime
        children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    except (OSError, ValueError, IndexError):
        return None
    for pid in children:
        try:
            ticks += sum(int(v) for v in stat_fields(int(pid))[11:13])
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile: counted in the postmaster's cutime from now on
    return ticks / CLOCK_TICKS


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: [state, ppid, ...] (field 3 onwards)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def beat_for(audits: list[tuple[int, int]], seconds: float, period: float) -> dict:
    """Every audit's real keep_alive; the counters' deltas over `seconds` of steady beating, counted from
    one `period` after they start (the first beats come a period in: counting from the start would miss
    one per audit, a quarter of a 12 s window). The statistics lag ~0.5 s."""
    from workers.tasks.heartbeat import keep_alive

    backends = []
    with ExitStack() as stack:
        for audit_id, attempt in audits:
            stack.enter_context(keep_alive(audit_id, attempt, [f"tlsaudit:bench-heartbeat:{audit_id}"], f"{audit_id}"))
        time.sleep(period)
        before = counters()
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            time.sleep(1)
            backends.append(counters()["backends"])
    elapsed = time.monotonic() - started
    time.sleep(1.0)  # the statistics collector reports with a delay
    after = counters()
    server = None if None in (before["server_cpu"], after["server_cpu"]) else after["server_cpu"] - before["server_cpu"]
    return {"elapsed": elapsed, "updates": after["updates"] - before["updates"], "hot": after["hot"] - before["hot"],
            "commits": after["commits"] - before["commits"], "cpu": after["cpu"] - before["cpu"],
            "backends": max(backends), "server_cpu": server}


def ms_per_beat(beat) -> float:
    samples = []
    for _ in range(TIMED_BEATS):
        started = time.perf_counter()
        beat()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def one_audit_reconnecting(audit: tuple[int, int]):
    from django.db import connection

    from tlsaudit.audits import services

    def beat():
        assert services.beat(*audit)
        connection.close()
    return beat


def all_audits_kept(audits: list[tuple[int, int]]):
    from tlsaudit.audits import services

    attempts = dict(audits)
    return lambda: services.beat_all(attempts) == set() or sys.exit("a run lost its row")


def main() -> int:
    args = parse_args()
    configure_environment()
    ensure_database()
    from django.conf import settings

    recorder = Recorder("Heartbeat cost", args)
    org = bench_organization("heartbeat", "")
    try:
        audits = running_audits(org, args.audits)
        period = settings.AUDIT_HEARTBEAT_SECONDS
        print(f"{args.audits} running audits beating every {period} s for {args.seconds:.0f} s", file=sys.stderr)
        run = beat_for(audits, args.seconds, period)
        per_second = run["updates"] / run["elapsed"]
        recorder.figure(f"heartbeat row updates, {args.audits} audits in flight", per_second, "per s",
                        goal=f"{args.audits / period:.0f}/s (each audit's row every {period} s)",
                        met=abs(per_second - args.audits / period) <= 0.2 * args.audits / period,
                        note=f"{run['hot'] / max(run['updates'], 1):.0%} HOT (no index touched); "
                             f"up to {run['backends']} backends in the database (the bench's own included)")
        recorder.figure(f"transactions for {args.audits} audits' heartbeats", run["commits"] / run["elapsed"],
                        "per s", note="PostgreSQL's xact_commit (the bench's counter reads included)")
        recorder.figure(f"worker CPU for {args.audits} audits' heartbeats", 100 * run["cpu"] / run["elapsed"],
                        "% of a core", note="the beating threads, Redis lock touches included")
        server = run["server_cpu"]
        recorder.figure(f"PostgreSQL CPU for {args.audits} audits' heartbeats",
                        None if server is None else 100 * server / run["elapsed"], "% of a core",
                        note="every process of the server, connection start-ups included; only meaningful on a "
                             "PostgreSQL nothing else uses" if server is not None else "server not on this machine")
        recorder.figure("one audit's beat, new connection", ms_per_beat(one_audit_reconnecting(audits[0])), "ms",
                        note="before #14 every audit's thread connected, updated and closed (median)")
        recorder.figure(f"one beat of all {args.audits} audits, kept connection", ms_per_beat(all_audits_kept(audits)),
                        "ms", note="the process's heartbeat thread now: a SELECT and an UPDATE (median)")
    finally:
        org.delete()
    recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
