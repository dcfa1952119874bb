"""The REST API's lists on a year of data: p50/p95 server time and SQL queries per request, at
page sizes 10, 50 and 200 (the query count must not grow with the page size).

    .venv/bin/python bench/api_lists.py [--quick] [--database NAME] [-n 40] [--warmup 5] [--json OUT]

Uses the same seeded database as bench/pages.py (10 organizations x 1,000 sites x 365 nightly
audits; 2 x 60 x 60 with --quick), seeding it when it is empty. Requests go through Django's test
Client in this process with a read-only key of the biggest organization: the whole middleware,
authentication, throttling, view, ORM and JSON rendering, without a web server.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH = {"title": "API lists at scale", "order": 61, "quick_timeout_s": 180, "full_timeout_s": 5400}
GOAL_MS = 150
PAGE_SIZES = (10, 50, 200)


def main() -> int:
    from bench import pages

    args = parse_args()
    database = pages.use_database(args)
    from bench import stack
    from bench.contract import Recorder

    stack.ensure_database()
    recorder = Recorder(BENCH["title"], args)
    from tlsaudit.demo.seed import existing_seed_orgs

    if not existing_seed_orgs().exists():
        pages.seed(recorder, args)
    target = pages.pick_target()
    recorder.note(f"Database {database}: {pages.describe(target)}. Django test Client in-process, read-only key, "
                  f"{args.warmup} warm-up then {args.n} timed requests per list and page size.")
    rows = [pages.measure(client, name, url, args.n, args.warmup) for client, name, url in requests(target)]
    print_rows(rows)
    for row in rows:
        recorder.figure(f"p95, {row['name']}", row["p95"], "ms", goal=f"< {GOAL_MS} ms", met=row["p95"] < GOAL_MS,
                        note=f"p50 {row['p50']:.1f} ms, {row['queries']} SQL queries, HTTP {row['status']}, "
                             f"{row['bytes'] / 1024:.0f} KB", load=row["load"])
    constant = record_query_growth(recorder, rows)
    recorder.write()
    return 0 if all(r["status"] == 200 for r in rows) and constant else 1


def parse_args():
    from bench.contract import add_arguments

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--database", help="the seeded PostgreSQL database (default: as bench/pages.py)")
    parser.add_argument("-n", type=int, help="timed requests per list (default 40, 10 with --quick)")
    parser.add_argument("--warmup", type=int, help="untimed requests first (default 5, 2 with --quick)")
    args = parser.parse_args()
    args.n = args.n if args.n is not None else (10 if args.quick else 40)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    if args.n < 2 or args.warmup < 0:
        parser.error("-n must be at least 2 and --warmup at least 0")
    return args


def requests(target: dict):
    from django.test import Client
    from django.urls import reverse

    from bench.pages import api_key

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {api_key(target['org'])}")
    lists = [("sites", reverse("api:site-list")), ("audits", reverse("api:audit-list")),
             ("site's audits", reverse("api:site-audits", args=[target["site"].pk]))]
    for size in PAGE_SIZES:
        for name, url in lists:
            yield client, f"{name} list, page_size={size}", f"{url}?page_size={size}"
    yield client, "sites list, grade filter", reverse("api:site-list") + "?grade=B&page_size=50"
    yield client, "sites list, expiring within 30 days", reverse("api:site-list") + "?expiring_within_days=30"
    yield client, "portfolio", reverse("api:portfolio")
    yield client, "audit, full view", reverse("api:audit-detail", args=[target["newest"].pk]) + "?view=full"


def record_query_growth(recorder, rows: list[dict]) -> bool:
    """One figure per list: its query counts at each page size, met when they are all equal."""
    constant = True
    for name in ("sites", "audits", "site's audits"):
        counts = [next(r["queries"] for r in rows if r["name"] == f"{name} list, page_size={size}")
                  for size in PAGE_SIZES]
        same = len(set(counts)) == 1
        constant &= same
        recorder.figure(f"SQL queries, {name} list", max(counts), "queries", goal="same at every page size",
                        met=same, note=" / ".join(f"{c} at {s}" for c, s in zip(counts, PAGE_SIZES)))
    return constant


def print_rows(rows: list[dict]) -> None:
    print(f"\n{'request':44} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'KB':>7} {'load':>5}")
    for r in rows:
        print(f"{r['name']:44} {r['p50']:8.1f} {r['p95']:8.1f} {r['queries']:8d} {r['bytes'] / 1024:7.0f} "
              f"{r['load']:5.1f}")


if __name__ == "__main__":
    sys.exit(main())
