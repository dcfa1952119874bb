"""A realistic fleet at the shipped defaults (issue #27 item 5): sites that share addresses, 50 ms away.

    .venv/bin/python bench/realistic_fleet.py [--quick] [--json OUT] [--sites 1000] [--rtt 50]
        [--sslyze-sites N]

1. One nginx with the lab's graded configurations (bench/fleet.py), reached through the latency lab's
   delay lines (tests/support/wan.py, `hosts=`) at many addresses, every one --rtt ms away, and through a
   counting relay at the servers' side that counts each address's concurrent connections apart
   (tests/support/relay.py). The sites, as an agency's portfolio: 40 % on 4 shared-hosting addresses,
   30 % on a 6-address CDN, 30 % on addresses of their own (1,000 sites: 100 per shared host, 50 per CDN
   address, 300 alone); every site is its own ip:port.
2. One worker host: 2 scan processes, each `celery worker -Q scan --pool threads` at the shipped settings
   (nothing raised: SCAN_CONNECTIONS_PER_IP 5, SCAN_AUDITS_PER_IP 1, SCAN_POOL_THREADS 16, the audit's 50 s
   deadline), every audit queued at once as the nightly run does. Prints wall time (first queue to last
   finished), audits/hour, failed audits and why (goal 0), connections per audit (counted at the relay),
   the peak of concurrent connections per address across both processes (goal <= 5; the relay sees a
   closing connection up to one event late, so it may read one more), and checks every grade.
3. The sslyze CLI over the same targets in the same run (its own concurrency: 10 servers at once, 5
   connections each, so up to 50 connections to one address): wall time, audits/hour, peak per address.
Quick: 60 sites (24 shared, 18 CDN, 18 alone), 10 servers.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.audit_fleet import HOST, measured_rtt_ms, sslyze_cli, wait_all  # noqa: E402
from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.fleet import start_fleet  # noqa: E402
from bench.stack import (  # noqa: E402
    Worker,
    WorkerOptions,
    configure_environment,
    ensure_database,
    purge_queues,
    remove_stale_organizations,
)

BENCH = {"title": "A realistic fleet at 50 ms RTT, shipped defaults: shared hosts, a CDN, sites alone", "order": 14,
         "quick_timeout_s": 300, "full_timeout_s": 3600}
SHARED_HOSTS, CDN_ADDRESSES = 4, 6
SHARE_SHARED, SHARE_CDN = 0.4, 0.3
PROCESSES = 2
PER_IP_LIMIT = 5                   # the shipped SCAN_CONNECTIONS_PER_IP
GOAL_WALL_S = 600                  # 1,000 audits in 10 minutes (scaled by --sites)
SITES_PER_ORG = 100


@dataclass(frozen=True)
class Placement:
    """One site: which address it stands behind (kind, index) and which lab server answers for it."""
    kind: str           # "shared", "cdn" or "alone"
    address: int
    server: int

    @property
    def group(self) -> str:
        return f"{self.kind}{self.address}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--sites", type=int, help="sites in the fleet (default 1000, quick 60)")
    parser.add_argument("--rtt", type=float, default=50.0, help="round trip to every address, ms (default 50)")
    parser.add_argument("--sslyze-sites", type=int, help="sites the sslyze CLI scans (default all)")
    parser.add_argument("--timeout", type=float, default=1800, help="give up on the Celery run after this many s")
    args = parser.parse_args()
    args.sites = args.sites or (60 if args.quick else 1000)
    args.sslyze_sites = min(args.sslyze_sites or args.sites, args.sites)
    return args


def plan(sites: int) -> list[Placement]:
    """Sites on a shared host or CDN address get distinct servers (distinct ports) on that address."""
    shared, cdn = round(sites * SHARE_SHARED), round(sites * SHARE_CDN)
    alone = sites - shared - cdn
    servers = max(math.ceil(shared / SHARED_HOSTS), math.ceil(cdn / CDN_ADDRESSES), 1)
    return ([Placement("shared", i % SHARED_HOSTS, i // SHARED_HOSTS) for i in range(shared)]
            + [Placement("cdn", i % CDN_ADDRESSES, i // CDN_ADDRESSES) for i in range(cdn)]
            + [Placement("alone", i, i % servers) for i in range(alone)])


def shipped_environment() -> None:
    """No limit of ours raised: a benchmark runs the shipped defaults."""
    for name in [k for k in os.environ if k.startswith(("SCAN_", "AUDIT_"))]:
        del os.environ[name]
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")     # as docker-compose.yml's scan worker


def main() -> None:
    args = parse_args()
    shipped_environment()
    configure_environment()
    ensure_database()
    from django.conf import settings

    from tests.support.relay import counting_relay
    from tests.support.wan import start_wan
    from tests.support.wanline import MAX_HOSTS

    placements = plan(args.sites)
    groups = list(dict.fromkeys(p.group for p in placements))
    recorder = Recorder(BENCH["title"], args)
    servers = max(p.server for p in placements) + 1
    links_needed = math.ceil(len(groups) / MAX_HOSTS)
    with start_fleet(servers) as fleet, open_links(start_wan, args.rtt, len(groups), MAX_HOSTS, links_needed) as hosts, \
            counting_relay([fleet.servers[p.server].port for p in placements], [p.group for p in placements]) as relay:
        address = dict(zip(groups, hosts))
        targets = [(address[p.group], port, fleet.servers[p.server]) for p, port in zip(placements, relay.ports())]
        rtt = measured_rtt_ms(targets[0][0], targets[0][1])
        print(f"{args.sites} sites on {len(groups)} addresses ({links_needed} delay lines, RTT {rtt:.0f} ms), "
              f"{servers} servers; shipped limits: {settings.SCAN_CONNECTIONS_PER_IP} connections and "
              f"{settings.SCAN_AUDITS_PER_IP} audit per address, {settings.SCAN_POOL_THREADS} threads x {PROCESSES}",
              file=sys.stderr)
        ours = through_celery(args, fleet, targets, relay)
        ours["peaks"] = peaks(relay)
        reset(relay)
        raw = sslyze_cli([Target(port, server.name) for _, port, server in targets[:args.sslyze_sites]],
                         None, fleet.ca_file, ips=[ip for ip, _, _ in targets[:args.sslyze_sites]])
        raw["peaks"], raw["connections"] = peaks(relay), relay.total
    record(recorder, args, rtt, len(groups), ours, raw)
    recorder.write()
    wrong = ours["wrong"] + raw["wrong"]
    if wrong:
        print("\n".join(["WRONG:", *wrong[:30]]), file=sys.stderr)
        sys.exit(1)


@dataclass(frozen=True)
class Target:
    port: int
    name: str


@contextmanager
def open_links(start_wan, rtt: float, count: int, per_link: int, links: int):
    """As many delay lines as the addresses need; yields every far-end address, in order."""
    with ExitStack() as stack:
        sizes = [min(per_link, count - i * per_link) for i in range(links)]
        opened = [stack.enter_context(start_wan(rtt, hosts=size)) for size in sizes]
        yield [host for link in opened for host in link.hosts]


def peaks(relay) -> dict[str, int]:
    return {group: counts["peak"] for group, counts in relay.by_group.items() if counts["total"]}


def reset(relay) -> None:
    relay.total = relay.peak = 0
    for counts in relay.by_group.values():
        counts.update(peak=0, total=0)


def through_celery(args, fleet, targets, relay) -> dict:
    from tlsaudit.audits.models import Audit
    from tlsaudit.audits.services import queue_audit

    orgs, expected = create_sites(fleet, targets)
    purge_queues("scan", "default")
    logs = [ROOT / "var" / "bench" / f"realistic_fleet-worker{i}.log" for i in range(PROCESSES)]
    logs[0].parent.mkdir(parents=True, exist_ok=True)
    from django.conf import settings
    options = WorkerOptions(concurrency=settings.SCAN_POOL_THREADS, pool="threads", max_tasks_per_child=None)
    workers = [Worker(options, log) for log in logs]
    try:
        for worker in workers:
            worker.wait_ready()
        time.sleep(2)  # the threads pool answers pings before its warm-up (sslyze's trust stores) is over
        started = datetime.now(timezone.utc)
        for org in orgs:
            for site in org.sites.order_by("pk"):
                queue_audit(site, trigger="schedule")
        finished = wait_all(orgs, len(targets), args.timeout)
        audits = list(Audit.objects.filter(organization__in=orgs))
        last = max((a.finished_at for a in audits if a.finished_at), default=started)
        return {"finished": finished, "wall": (last - started).total_seconds(), "connections": relay.total,
                "count": len(targets), "wrong": check(audits, expected, finished, len(targets), args.timeout),
                "errors": Counter(a.error_code for a in audits if a.status == "failed"),
                "waits": [w for a in audits if (w := queue_wait_s(a)) is not None], "handoffs": handoffs_s(audits),
                "audit_s": [(a.finished_at - a.started_at).total_seconds() for a in audits
                            if a.finished_at and a.started_at]}
    finally:
        for worker in workers:
            worker.stop()
        purge_queues("scan", "default")
        for org in orgs:
            org.delete()


def create_sites(fleet, targets):
    from tlsaudit.orgs.models import Organization
    from tlsaudit.sites.models import Site

    remove_stale_organizations()
    orgs, expected = [], {}
    for first in range(0, len(targets), SITES_PER_ORG):
        org = Organization.objects.create(name=f"bench realistic{first} {os.getpid()} {time.time():.0f}",
                                          custom_ca_pem=fleet.ca_file.read_text())
        chunk = targets[first:first + SITES_PER_ORG]
        sites = Site.objects.bulk_create([
            Site(organization=org, hostname=HOST, https_port=port, http_port=server.http_port, pinned_ip=ip,
                 name=f"{server.name} at {ip}:{port}") for ip, port, server in chunk])
        expected.update({site.pk: server for site, (_, _, server) in zip(sites, chunk)})
        orgs.append(org)
    return orgs, expected


def queue_wait_s(audit) -> float | None:
    if audit.started_at and audit.created_at:
        return (audit.started_at - audit.created_at).total_seconds()
    return None


def handoffs_s(audits) -> list[float]:
    """On each address with more than one site: from one audit's end to the next one's start, the time the
    address stood idle between turns (the line's own cost)."""
    by_ip: dict[str, list] = {}
    for audit in audits:
        if audit.started_at and audit.finished_at:
            by_ip.setdefault(str(audit.ip), []).append(audit)
    gaps = []
    for line in (sorted(a, key=lambda x: x.started_at) for a in by_ip.values() if len(a) > 1):
        gaps += [(after.started_at - before.finished_at).total_seconds() for before, after in zip(line, line[1:])]
    return gaps


def check(audits, expected, finished: int, count: int, timeout: float) -> list[str]:
    wrong = [] if finished == count else [f"only {finished} of {count} audits finished within {timeout:.0f} s"]
    for audit in audits:
        server = expected[audit.site_id]
        if audit.status != "done":
            wrong.append(f"celery {server.name}: {audit.status} {audit.error_code} {audit.error_message}")
        elif audit.grade != server.spec.grade:
            wrong.append(f"celery {server.name}: graded {audit.grade}, expected {server.spec.grade}")
    return wrong


def record(recorder: Recorder, args, rtt: float, addresses: int, ours: dict, raw: dict) -> None:
    goal_wall = GOAL_WALL_S * args.sites / 1000
    failed = sum(ours["errors"].values())
    recorder.figure("measured RTT to the addresses", rtt, "ms", note=f"{addresses} addresses")
    recorder.figure(f"wall time, {ours['count']} audits through Celery", ours["wall"], "s",
                    goal=f"<= {goal_wall:.0f} s", met=ours["wall"] <= goal_wall and ours["finished"] == ours["count"])
    recorder.figure("throughput through Celery", ours["count"] / ours["wall"] * 3600 if ours["wall"] else None,
                    "audits/h")
    recorder.figure("failed audits", failed, "", goal="0", met=failed == 0,
                    note=", ".join(f"{code}: {n}" for code, n in ours["errors"].most_common()) or "none")
    recorder.figure("connections per audit (at the servers)", ours["connections"] / ours["count"], "",
                    goal="<= 100 modern, <= 150 legacy (mean over the mix)")
    shared_peaks = {g: p for g, p in ours["peaks"].items() if not g.startswith("alone")}
    recorder.figure("peak concurrent connections per address, both processes", max(ours["peaks"].values()), "",
                    goal=f"<= {PER_IP_LIMIT} (+1: the relay's view of a closing connection)",
                    met=max(ours["peaks"].values()) <= PER_IP_LIMIT + 1,
                    note="shared and CDN addresses: " + ", ".join(f"{g} {p}" for g, p in sorted(shared_peaks.items())))
    if ours["waits"]:
        recorder.figure("queue wait (created to started), median", statistics.median(ours["waits"]), "s",
                        note=f"max {max(ours['waits']):.0f} s: audits of one address take turns")
    if ours["audit_s"]:
        recorder.figure("one audit, started to finished, median", statistics.median(ours["audit_s"]), "s",
                        note=f"max {max(ours['audit_s']):.1f} s, with the fleet's load on the same cores")
    if ours["handoffs"]:
        recorder.figure("an address idle between two of its audits, median", statistics.median(ours["handoffs"]), "s",
                        note=f"p90 {sorted(ours['handoffs'])[int(0.9 * len(ours['handoffs']))]:.1f} s")
    recorder.figure(f"sslyze CLI, {raw['count']} of the same targets, wall time", raw["wall"], "s")
    recorder.figure("sslyze CLI throughput", raw["count"] / raw["wall"] * 3600, "audits/h")
    recorder.figure("sslyze CLI connections per scan", raw["connections"] / raw["count"], "")
    recorder.figure("sslyze CLI peak concurrent connections per address", max(raw["peaks"].values()), "")
    recorder.ratio("ours / sslyze CLI, wall per audit", [ours["wall"] / ours["count"]], [raw["wall"] / raw["count"]])


if __name__ == "__main__":
    main()
