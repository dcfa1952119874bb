"""Server time and SQL queries of the dashboard's pages (and the API's lists) on a seeded database.

    .venv/bin/python bench/pages.py [--quick] [--database tlsaudit_bench_data] [-n 40] [--warmup 5] [--pdf 3]
        [--json OUT]

The database (PostgreSQL, on the server of DATABASE_URL; its name must contain "bench") is
created, migrated and seeded with `manage.py seed_demo` when it holds no seeded organization:
10 organizations x 1,000 sites x 365 days (about half an hour on the shared 2-core machine), or
2 x 60 x 60 with --quick. An already seeded database is reused as it is. Default name: the
DATABASE_URL's with `_pages` (`_pages_quick`) appended, so `make bench` never mixes it with the
other benchmarks' rows.

Requests go through Django's test Client in this process: the whole middleware, view, ORM and
template stack, no network and no web server (so the figures are server time, without gunicorn's
few hundred microseconds). Each page is requested `--warmup` times, then `-n` times timed; the
SQL query count comes from one extra request with the queries captured. The portfolio PDF is
measured in two parts: building its HTML (the presenters, in this process) and Chromium printing
it (a short-lived browser per render, as the worker does).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH = {"title": "Dashboard pages at scale", "order": 60, "quick_timeout_s": 180, "full_timeout_s": 5400}
GOAL_MS = 150
SIZES = {"quick": {"orgs": 2, "sites": 60, "days": 60}, "full": {"orgs": 10, "sites": 1000, "days": 365}}


def main() -> int:
    args = parse_args()
    database = use_database(args)
    from bench import stack
    from bench.contract import Recorder

    stack.ensure_database()
    recorder = Recorder(BENCH["title"], args)
    from django.db import connection

    from tlsaudit.demo.seed import existing_seed_orgs

    print(f"database: {connection.settings_dict['NAME']}; nproc {os.cpu_count()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    if not existing_seed_orgs().exists():
        seed(recorder, args)
    target = pick_target()
    recorder.note(f"Database {database}: {describe(target)}; {database_size()}. Django test Client in-process, "
                  f"{args.warmup} warm-up then {args.n} timed requests per page.")
    rows = [measure(client, name, url, args.n, args.warmup) for client, name, url in pages(target)]
    print_table(rows, args)
    for r in rows:
        recorder.figure(f"p95, {r['name']}", r["p95"], "ms", goal=f"< {GOAL_MS} ms", met=r["p95"] < GOAL_MS,
                        note=f"p50 {r['p50']:.1f} ms, CPU {r['cpu']:.1f} ms per request, {r['queries']} SQL queries, "
                             f"HTTP {r['status']}, {r['bytes'] / 1024:.0f} KB", load=r["load"])
    if args.pdf:
        print_pdf(target, args.pdf, recorder)
    slow = [r["name"] for r in rows if r["p95"] >= GOAL_MS]
    print(f"\nGoal p95 < {GOAL_MS} ms: {'met by every page' if not slow else 'missed by ' + ', '.join(slow)}.")
    recorder.write()
    failed = [r["name"] for r in rows if r["status"] != 200]
    return 1 if failed else 0


def parse_args():
    from bench.contract import add_arguments

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--database", help="the PostgreSQL database to use (default: DATABASE_URL's name + _pages)")
    parser.add_argument("-n", type=int, help="timed requests per page (default 40, 10 with --quick)")
    parser.add_argument("--warmup", type=int, help="untimed requests per page first (default 5, 2 with --quick)")
    parser.add_argument("--pdf", type=int, metavar="N",
                        help="portfolio PDF renders to time (0 = skip Chromium; default 3, 1 with --quick)")
    args = parser.parse_args()
    quick = args.quick
    args.n = args.n or (10 if quick else 40)
    args.warmup = args.warmup if args.warmup is not None else (2 if quick else 5)
    args.pdf = args.pdf if args.pdf is not None else (1 if quick else 3)
    if args.n < 2 or args.warmup < 0 or args.pdf < 0:
        parser.error("-n must be at least 2, --warmup and --pdf at least 0")
    return args


def use_database(args) -> str:
    """Point DATABASE_URL at the pages database (refusing one whose name lacks "bench")."""
    from bench import stack

    stack.configure_environment()
    url = urlsplit(os.environ["DATABASE_URL"])
    name = args.database or url.path.lstrip("/") + ("_pages_quick" if args.quick else "_pages")
    if "bench" not in name:
        sys.exit(f"refusing database {name!r}: it gets seeded, so its name must contain 'bench'")
    os.environ["DATABASE_URL"] = url._replace(path=f"/{name}").geturl()
    return name


def seed(recorder, args) -> None:
    from django.core.management import call_command

    size = SIZES["quick" if args.quick else "full"]
    print(f"seeding {size} (manage.py seed_demo)...", flush=True)
    started = time.monotonic()
    call_command("seed_demo", **size)
    seconds = time.monotonic() - started
    recorder.figure(f"seed_demo --orgs {size['orgs']} --sites {size['sites']} --days {size['days']}", seconds, "s",
                    note=database_size())


def database_size() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        return f"database size {cursor.fetchone()[0]}"


# --- what to request ---------------------------------------------------------------------------

def pick_target() -> dict:
    """The biggest seeded organization, its owner, its site with the most audits, that site's newest
    and oldest done audits, and a performance run and a probe if it has any."""
    from django.db.models import Count

    from tlsaudit.audits.models import Audit
    from tlsaudit.demo.seed import existing_seed_orgs
    from tlsaudit.loadtests.models import PerfRun
    from tlsaudit.probes.models import Probe

    org = existing_seed_orgs().annotate(n=Count("sites")).order_by("-n", "pk").first()
    owner = org.memberships.filter(role="owner").select_related("user").first().user
    site = org.sites.annotate(n=Count("audits")).order_by("-n", "pk").first()
    done = Audit.objects.filter(site=site, status="done").order_by("finished_at").only("pk")
    run = PerfRun.objects.filter(organization=org, kind="sweep").only("pk", "site_id").first()
    probe = Probe.objects.filter(organization=org).only("pk", "site_id").first()
    tag = org.tags.values_list("name", flat=True).first()
    return {"org": org, "owner": owner, "site": site, "newest": done.last(), "oldest": done.first(), "run": run,
            "probe": probe, "tag": tag, "audits": Audit.objects.filter(organization=org).count(),
            "site_audits": Audit.objects.filter(site=site).count()}


def describe(t: dict) -> str:
    return (f"organization {t['org'].slug}: {t['org'].sites.count()} sites, {t['audits']:,} audits; "
            f"site {t['site'].hostname}: {t['site_audits']} audits")


def pages(t: dict):
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(t["owner"])
    org, site = t["org"].slug, t["site"].pk
    yield client, "site list", reverse("sites:list", args=[org])
    yield client, "site list, search", reverse("sites:list", args=[org]) + "?q=shop&sort=-added"
    yield client, "site list, tag, page 2", reverse("sites:list", args=[org]) + f"?tag={t['tag']}&page=2"
    yield client, "site detail", reverse("sites:detail", args=[org, site])
    yield client, "audit report (newest)", reverse("audits:detail", args=[org, site, t["newest"].pk])
    yield client, "audit report (oldest)", reverse("audits:detail", args=[org, site, t["oldest"].pk])
    yield client, "history (chart, last diff)", reverse("monitoring:history", args=[org, site])
    yield client, "history, compare oldest/newest", (reverse("monitoring:history", args=[org, site])
                                                     + f"?a={t['oldest'].pk}&b={t['newest'].pk}")
    yield client, "portfolio", reverse("monitoring:portfolio", args=[org])
    yield client, "portfolio, grade filter", reverse("monitoring:portfolio", args=[org]) + "?grade=A%2B"
    yield client, "alerts", reverse("alerts:settings", args=[org])
    if t["run"]:
        yield client, "performance tab", reverse("loadtests:overview", args=[org, t["run"].site_id])
        yield client, "sweep run", reverse("loadtests:run", args=[org, t["run"].site_id, t["run"].pk])
    if t["probe"]:
        yield client, "browser tab", reverse("probes:overview", args=[org, t["probe"].site_id])
        yield client, "browser probe", reverse("probes:detail", args=[org, t["probe"].site_id, t["probe"].pk])
    try:
        api = [("API sites list", reverse("api:site-list")), ("API audits list", reverse("api:audit-list"))]
    except NoReverseMatch:  # the REST API (issue #7) is not in this checkout yet
        print("API: /api/v1/sites/ and /api/v1/audits/ not routed here; skipped.")
        return
    api_client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key(t['org'])}")
    for name, url in api:
        yield api_client, name, url


def api_key(org) -> str:
    """A read-only key of the organization, unthrottled for the benchmark (revoked at exit)."""
    import atexit

    from django.utils import timezone

    from tlsaudit.api import keys
    from tlsaudit.api.models import ApiKey

    new = keys.generate(keys.READ_ONLY)
    key = ApiKey.objects.create(organization=org, name="bench/pages.py", scope=keys.READ_ONLY, lookup=new.lookup,
                                digest=new.digest, rate_per_minute=1_000_000)
    atexit.register(lambda: ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now()))
    return new.plaintext


# --- measuring -----------------------------------------------------------------------------------

def measure(client, name: str, url: str, n: int, warmup: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(warmup):
        response = client.get(url)
    times = []
    cpu_started = time.process_time()
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
    cpu_ms = (time.process_time() - cpu_started) * 1000 / n  # this process only, not PostgreSQL's
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return {"name": name, "url": url, "status": response.status_code, "bytes": len(response.content),
            "p50": percentile(times, 50), "p95": percentile(times, 95), "max": max(times),
            "queries": len(queries.captured_queries), "load": round(os.getloadavg()[0], 2), "cpu": cpu_ms}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def print_table(rows: list[dict], args) -> None:
    print(f"\n{args.n} timed requests per page after {args.warmup} warm-up requests (Django test Client, "
          "in-process)\n")
    print("| page | status | p50 ms | p95 ms | max ms | CPU ms | SQL queries | KB | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['status']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['max']:.1f} | {r['cpu']:.1f} "
              f"| {r['queries']} | {r['bytes'] / 1024:.0f} | {r['load']:.1f} |")
    print("\nCPU ms: this process's CPU time per request (Django, templates, psycopg); p50/p95 are wall time, "
          "which on a shared machine includes waiting for a core.")


def print_pdf(t: dict, renders: int, recorder) -> None:
    """Portfolio PDF: the HTML build (timed like a page) and Chromium's print (a browser per render)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tlsaudit.reports import presenters, services
    from workers.reports.pdf import render

    org = t["org"]
    build = lambda: services.render_with_assets("reports/portfolio_report.html",  # noqa: E731
                                                presenters.portfolio_report(org))
    for _ in range(3):
        html = build()
    times = []
    for _ in range(20):
        started = time.perf_counter()
        html = build()
        times.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as queries:
        build()
    prints = [render(html, footer=f"{org.name} · TLS report · portfolio") for _ in range(renders)]
    seconds = [p.seconds * 1000 for p in prints]
    print(f"\nPortfolio PDF of {org.slug} ({org.sites.count()} sites)\n")
    print("| part | p50 ms | p95 ms | max ms | SQL queries | size |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| HTML build (presenters + template, 20 runs) | {percentile(times, 50):.1f} | {percentile(times, 95):.1f} "
          f"| {max(times):.1f} | {len(queries.captured_queries)} | {len(html) / 1024:.0f} KB HTML |")
    print(f"| Chromium print ({renders} renders, browser launch included) | {percentile(seconds, 50):.0f} "
          f"| {percentile(seconds, 95):.0f} | {max(seconds):.0f} | 0 | {len(prints[-1].pdf) / 1024:.0f} KB PDF |")
    recorder.figure("p95, portfolio PDF: HTML build", percentile(times, 95), "ms", goal=f"< {GOAL_MS} ms",
                    met=percentile(times, 95) < GOAL_MS,
                    note=f"p50 {percentile(times, 50):.1f} ms, {len(queries.captured_queries)} SQL queries, "
                         f"{org.sites.count()} sites, {len(html) / 1024:.0f} KB HTML")
    recorder.figure("portfolio PDF: Chromium print, median", percentile(seconds, 50), "ms",
                    note=f"{renders} render(s), each launching a browser as the worker does; "
                         f"{len(prints[-1].pdf) / 1024:.0f} KB PDF")


if __name__ == "__main__":
    raise SystemExit(main())
