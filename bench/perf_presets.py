"""Every Performance preset, as a new organization gets it (issue #26): its wall time against the bound
it shows before Start, and its answer, on loopback and behind 50 ms and 150 ms round trips.

    .venv/bin/python bench/perf_presets.py [--quick] [--json OUT]

Each preset of the Performance tab (tlsaudit/loadtests/presets.py, the shipped default caps) is started
the way its button starts it (services.queue_run with the button's fields) and run by the shipped `jobs`
worker (Procfile: prefork, 2 processes, queues load,browser,default) over the real PostgreSQL and
Redis (bench/stack.py). The target is the nginx lab (`load_no_resumption`: every handshake full) on
127.0.0.1, directly and through the latency lab's delay line (tests/support/wan.py). Per preset and
RTT: the wall time from the run's start to its end, the bound the button shows, and the answer in
words (every HTTPS vs HTTP figure with its 95 % interval; "answers" when every figure has a verdict).
`--quick`: loopback and 50 ms; full: 0, 50 and 150 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.stack import (  # noqa: E402
    Worker,
    WorkerOptions,
    bench_organization,
    configure_environment,
    ensure_database,
)
from tests.support.tls_servers import start_lab  # noqa: E402
from tests.support.wan import start_wan  # noqa: E402

BENCH = {"title": "Performance presets: time and answer", "order": 47, "quick_timeout_s": 900,
         "full_timeout_s": 2400}
FIXTURE = "load_no_resumption"
ANSWERS = ("higher", "lower", "no significant difference")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return parser.parse_args()


def lab_site(org, lab, ip: str, rtt_ms: int):
    from django.utils import timezone

    from tlsaudit.loadtests.verification import verification_for
    from tlsaudit.sites.models import Site

    site = Site.objects.create(organization=org, hostname="localhost", https_port=lab.port(FIXTURE),
                               http_port=lab.http_port(FIXTURE), pinned_ip=ip, name=f"lab at {rtt_ms} ms")
    verification = verification_for(site)
    verification.record_pass("http", timezone.now(), [ip])
    verification.save()
    return site


def raw_params(fields: list[tuple[str, object]]) -> dict:
    """The button's hidden fields as the view reads them (tlsaudit/loadtests/views.params_from_post)."""
    from django.http import QueryDict

    from tlsaudit.loadtests.views import params_from_post

    post = QueryDict(mutable=True)
    for name, value in fields:
        post.appendlist(name, str(value))
    return params_from_post(post["kind"], post)


def run_preset(site, preset: dict, timeout_s: float) -> tuple[float | None, object]:
    from tlsaudit.loadtests import services
    from tlsaudit.loadtests.models import PerfRun

    run = services.queue_run(site, preset["kind"], raw_params(preset["fields"]))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = PerfRun.objects.get(pk=run.pk)
        if run.status not in services.ACTIVE:
            break
        time.sleep(0.5)
    wall = (run.finished_at - run.started_at).total_seconds() if run.finished_at and run.started_at else None
    return wall, run


def answer(run) -> tuple[str, bool]:
    """The run's HTTPS vs HTTP (or TLS 1.3 vs 1.2) figures in words, and whether every one has a verdict."""
    from tlsaudit.domain import stats
    from tlsaudit.loadtests.summaries import summary_of

    if run.status != "done":
        return f"{run.status}: {run.error_message}", False
    summary = summary_of(run)
    if run.kind == "load":
        rate = summary["cell"]["requests_per_second"]
        low = "" if rate["low"] is None else f" [{rate['low']:.0f}, {rate['high']:.0f}]"
        return f"{rate['median']:.0f} req/s{low}, median request {summary['cell']['median_ms']:.2f} ms", True
    if run.kind == "sweep":
        parts, verdicts = [], []
        for mode, part in summary.items():
            if mode == "stats_version":
                continue
            for row in part["levels"]:
                change = row["time_taken_overhead"]
                verdicts.append(change["verdict"])
                parts.append(f"{mode} c={row['concurrency']}: {change['base_median'] / 1000:.2f} → "
                             f"{change['other_median'] / 1000:.2f} ms, {stats.change_text(change)}")
        return "; ".join(parts), all(v in ANSWERS for v in verdicts)
    rows = [r for r in summary["versions"] if r["family"] == "all"]
    texts = [f"{r['agents']} agents: {r['tls12_p50_ms']:.2f} → {r['tls13_p50_ms']:.2f} ms, "
             f"{stats.change_text(r['tls13_vs_tls12'], side='TLS 1.3')}" for r in rows]
    return "; ".join(texts), bool(rows) and all(r["tls13_vs_tls12"]["verdict"] in ANSWERS for r in rows)


def measure(recorder: Recorder, org, lab, rtt_ms: int, ip: str) -> bool:
    from tlsaudit.loadtests.models import LoadLimits
    from tlsaudit.loadtests.presets import presets_within

    ok = True
    site = lab_site(org, lab, ip, rtt_ms)
    for preset in presets_within(LoadLimits.for_org(org)):
        if preset["refused"]:
            recorder.note(f"{rtt_ms} ms, {preset['title']}: refused ({preset['refused']})")
            continue
        wall, run = run_preset(site, preset, timeout_s=preset["bound_s"] + 120)
        words, answered = answer(run)
        within = wall is not None and wall <= preset["bound_s"]
        ok &= within and answered
        recorder.figure(f"{preset['title']} at {rtt_ms} ms RTT: wall time", wall, "s",
                        goal=f"<= {preset['bound_s']:.0f} s shown, and an answer", met=within and answered,
                        note=f"{preset['what']}. Answer: {words}")
        print(f"{rtt_ms:>4} ms  {preset['title']:<36} {wall or 0:6.1f} s of {preset['bound_s']:.0f} s  {words}",
              flush=True)
    return ok


def main() -> None:
    args = parse_args()
    configure_environment()
    ensure_database()
    recorder = Recorder(BENCH["title"], args)
    ok = True
    log = ROOT / "var" / "bench" / "perf_presets.worker.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with start_lab() as lab, Worker(WorkerOptions(queues=("load", "browser", "default")), log) as worker:
        worker.wait_ready()
        for rtt_ms in (0, 50) if args.quick else (0, 50, 150):
            # an organization per RTT: a new one's caps (20 runs a day), as a new user has them
            org = bench_organization(f"presets{rtt_ms}", lab.ca_file.read_text())
            link = start_wan(rtt_ms) if rtt_ms else None
            try:
                ok &= measure(recorder, org, lab, rtt_ms, link.host if link else "127.0.0.1")
            finally:
                if link:
                    link.close()
                org.delete()
    recorder.write()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
