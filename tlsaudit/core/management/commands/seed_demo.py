"""Create realistic demo data: organizations, people, sites with tags, a year of nightly audits
(graded by the real rules), findings, certificates, alerts, performance runs and browser probes.

    manage.py seed_demo --orgs 10 --sites 1000 --days 365 [--seed 1] [--reset]
"""

import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from tlsaudit.demo import seed as demo

LIMITS = {"orgs": (1, 1000), "sites": (1, 100_000), "days": (1, 3650)}
DEFAULT_PASSWORD = "demo-password"


def bounded(name: str):
    low, high = LIMITS[name]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise CommandError(f"--{name} must be a whole number, not {text!r}.") from None
        if not low <= value <= high:
            raise CommandError(f"--{name} must be between {low} and {high:,} (got {value}).")
        return value
    return parse


def seed_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"--seed must be a whole number, not {text!r}.") from None


class Command(BaseCommand):
    help = ("Create demo data for benchmarks and demos: ORGS organizations sharing SITES sites, each audited "
            "nightly for DAYS days. Refuses when seeded organizations (slug seed-…) exist, unless --reset.")

    def add_arguments(self, parser):
        parser.add_argument("--orgs", type=bounded("orgs"), default=10, help="organizations (default 10)")
        parser.add_argument("--sites", type=bounded("sites"), default=1000, help="sites in all (default 1000)")
        parser.add_argument("--days", type=bounded("days"), default=365, help="days of history (default 365)")
        parser.add_argument("--seed", type=seed_number, default=1, help="random seed: same seed, same data (default 1)")
        parser.add_argument("--password", default=DEFAULT_PASSWORD,
                            help=f"password of every seeded login (default {DEFAULT_PASSWORD!r})")
        parser.add_argument("--reset", action="store_true", help="delete the previously seeded data first")

    def handle(self, *args, orgs, sites, days, seed: int, password: str, reset: bool, **options):
        if sites < orgs:
            raise CommandError(f"--sites ({sites}) must be at least --orgs ({orgs}): every organization gets a site.")
        if len(password) < 8:
            raise CommandError("--password must be at least 8 characters.")
        self.refuse_or_reset(reset)
        started = time.monotonic()
        stats = demo.seed(orgs=orgs, sites=sites, days=days, seed_value=seed, password=password,
                          progress=lambda line: self.stdout.write(f"  {line}"))
        self.report(stats, time.monotonic() - started, password)

    def refuse_or_reset(self, reset: bool) -> None:
        found = demo.existing_seed_orgs().count()
        if (found or demo.seeded_users().exists()) and not reset:
            raise CommandError(f"Seeded data already exists ({found} organization(s) with a slug seed-…, users "
                               f"@….{demo.EMAIL_DOMAIN}): run with --reset to delete it first.")
        if reset:
            started = time.monotonic()
            deleted = demo.reset()
            self.stdout.write(f"Deleted {deleted} seeded organization(s) in {time.monotonic() - started:.1f} s.")

    def report(self, stats: demo.Stats, seconds: float, password: str) -> None:
        self.stdout.write(self.style.SUCCESS(
            f"Seeded in {seconds:.1f} s: {stats.organizations} organizations, {stats.users} users, {stats.sites} sites, "
            f"{stats.audits:,} audits ({stats.failed_audits:,} failed; {stats.graded_configurations} graded "
            f"configurations), {stats.findings:,} findings, {stats.suites:,} suites and {stats.certificates:,} "
            f"certificates rows for {stats.detail_audits:,} audits, {stats.scheduled_runs:,} scheduled runs, "
            f"{stats.alert_events:,} alert events, {stats.perf_runs} performance runs, {stats.probes} probes."))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
                self.stdout.write(f"Database size: {cursor.fetchone()[0]}.")
        self.stdout.write(f"Log in (password {password!r}) as the owner or the viewer of an organization:")
        for org, email, role in stats.logins:
            if role in ("owner", "viewer"):
                self.stdout.write(f"  {org:<28} {role:<7} {email}")
