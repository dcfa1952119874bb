"""Each demo site's year, drawn from one seeded random generator: which configuration it ran each
night, when its certificates were renewed (or not), which nights the audit failed, the odd manual
audit, performance runs and browser probes. Pure data, no database: seed.py writes it.

Certificate dates sit on a weekly grid anchored three days from today, so a thousand sites share
a few hundred distinct certificate periods and each (configuration, period) is graded once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone

from tlsaudit.demo.configs import BASELINE_WEIGHTS, ISSUERS, REGRESSIONS, UPGRADES, CertPeriod
from tlsaudit.domain import nightly

BRANDS = ("Northwind Digital", "Bluebird Agency", "Contoso Web", "Fabrikam Studio", "Tailspin Hosting",
          "Wingtip Interactive", "Litware Labs", "Adatum Partners", "Proseware Media", "Woodgrove Online",
          "Fourth Coffee Group", "Lamna Systems", "Alpine Ski House", "Coho Creative", "Trey Research")
CLIENTS = ("acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne", "wonka", "soylent",
           "tyrell", "cyberdyne", "oscorp", "gringotts", "monarch", "nakatomi", "pied-piper", "dunder", "kramerica",
           "bluth", "sterling", "prestige", "zorg", "octan", "duff", "krusty", "vehement", "massive", "aperture",
           "blackmesa")
SUBDOMAINS = ("www", "shop", "api", "blog", "status", "docs", "portal", "app", "auth", "pay", "support", "careers",
              "static", "beta", "partners", "m", "admin", "news", "events", "investors")
KIND_TAGS = {"shop": "ecommerce", "pay": "ecommerce", "api": "api", "auth": "api", "app": "api", "blog": "marketing",
             "www": "marketing", "news": "marketing", "events": "marketing", "admin": "internal",
             "portal": "internal", "status": "internal"}
REGIONS = ("eu", "us", "apac")
FAILURES = (
    ("timeout", "No answer from {host}:443 within 3 s: the port is filtered or the server is down."),
    ("refused", "Port 443 on {ip} refused the connection: nothing is listening there."),
    ("dns", "The DNS lookup for {host} did not answer within 3 s."),
    ("tls_handshake_failed", "The server on {host}:443 accepted the connection but no TLS handshake succeeded: "
                             "it supports none of the protocol versions and cipher suites we tried, or it requires "
                             "something we cannot offer."),
)
ISSUER_WEIGHTS = {"letsencrypt": 60, "sectigo": 25, "digicert": 15}
WINDOW_HOURS = (1, 2, 3, 4)     # the default audit window, 01:00-05:00 UTC
CERT_HOUR = time(12, 0, tzinfo=timezone.utc)


@dataclass
class Run:
    at: datetime
    trigger: str                        # "schedule" or "manual"
    config: str                         # what the server ran that night
    cert: int                           # index into SitePlan.certs
    error: tuple[str, str] | None = None
    caught_up: bool = False
    duration_s: float = 0.0


@dataclass
class SitePlan:
    org: int
    hostname: str
    name: str
    tags: list[str]
    ip: str
    created_at: datetime
    frequency: str
    hour: int
    minute: int
    weekday: int
    certs: list[CertPeriod]
    runs: list[Run] = field(default_factory=list)
    perf_runs: list[tuple[str, datetime]] = field(default_factory=list)
    probes: list[datetime] = field(default_factory=list)


@dataclass
class OrgPlan:
    name: str
    slug: str
    domain: str
    sites: list[SitePlan] = field(default_factory=list)


def plan_orgs(rng: random.Random, orgs: int, sites: int, days: int, now: datetime,
              capacity: int = 32) -> list[OrgPlan]:
    """`sites` sites spread unevenly over `orgs` organizations, each with `days` nights of history, their
    nightly times placed as the app places them (at most `capacity` starts a minute)."""
    plans = []
    for index, count in enumerate(spread(rng, sites, orgs)):
        brand = BRANDS[index % len(BRANDS)] + (f" {index // len(BRANDS) + 1}" if index >= len(BRANDS) else "")
        slug = "seed-" + brand.lower().replace(" ", "-")
        org = OrgPlan(name=brand, slug=slug, domain=f"{slug.removeprefix('seed-')}.example")
        hosts = site_names(rng, count)
        slots = nightly_slots(count, capacity)
        org.sites = [plan_site(rng, index, host, label, days, now, n, slots[n]) for n, (host, label) in enumerate(hosts)]
        plans.append(org)
    return plans


def spread(rng: random.Random, total: int, parts: int) -> list[int]:
    """`total` split into `parts` uneven positive counts (agencies differ in size)."""
    weights = [rng.uniform(0.4, 1.6) for _ in range(parts)]
    counts = [1 + int((total - parts) * w / sum(weights)) for w in weights]
    for i in range(total - sum(counts)):
        counts[i % parts] += 1
    return counts


def site_names(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """Distinct (host name, display name) pairs: client sites of an agency."""
    names, seen = [], set()
    clients = list(CLIENTS)
    rng.shuffle(clients)
    i = 0
    while len(names) < count:
        client = clients[i % len(clients)]
        round_ = i // len(clients)
        sub = SUBDOMAINS[(i * 7 + round_) % len(SUBDOMAINS)]
        suffix = f"-{round_ // len(SUBDOMAINS) + 1}" if round_ >= len(SUBDOMAINS) else ""
        host = f"{sub}.{client}{suffix}.example"
        if host not in seen:
            seen.add(host)
            names.append((host, f"{client.replace('-', ' ').title()}{suffix} {sub}"))
        i += 1
    return names


def nightly_slots(count: int, capacity: int) -> list[tuple[int, int]]:
    """The (hour, minute) of an organization's sites in the default window, by the app's slot rule
    (domain/nightly.py), the site's place in the organization standing for its id (not known yet)."""
    hours = list(WINDOW_HOURS)
    placed = nightly.plan(range(count), nightly.window_minutes(hours), capacity)
    return [nightly.clock(hours, placed[n]) for n in range(count)]


def plan_site(rng: random.Random, org: int, host: str, label: str, days: int, now: datetime, n: int,
              slot: tuple[int, int]) -> SitePlan:
    first_day = 0 if rng.random() < 0.85 else rng.randrange(max(1, days // 2))
    start = now.date() - timedelta(days=days - 1 - first_day)
    rng.choice(WINDOW_HOURS), rng.randrange(60)  # the old random time, still drawn: the seed's other data stays
    hour, minute = slot
    sub = host.split(".")[0]
    tags = ["staging" if sub == "beta" or rng.random() < 0.1 else "production", rng.choice(REGIONS)]
    if sub in KIND_TAGS:
        tags.append(KIND_TAGS[sub])
    plan = SitePlan(
        org=org, hostname=host, name=label if rng.random() < 0.8 else "", tags=tags,
        ip=f"{rng.choice(('192.0.2', '198.51.100', '203.0.113'))}.{1 + n % 250}",
        created_at=datetime.combine(start, time(0), tzinfo=timezone.utc) - timedelta(hours=rng.randint(2, 20)),
        frequency="weekly" if rng.random() < 0.05 else "nightly", hour=hour, minute=minute,
        weekday=rng.randrange(7), certs=[])
    plan.certs = plan_certs(rng, start, now)
    plan.runs = plan_runs(rng, plan, start, now)
    plan.perf_runs, plan.probes = plan_perf(rng, plan, now, always=n == 0)
    return plan


# --- certificates -------------------------------------------------------------------------------

def plan_certs(rng: random.Random, start: date, now: datetime) -> list[CertPeriod]:
    """The site's certificates, oldest first, the last one current: renewed ahead of expiry, except
    for a few sites whose renewal is now late (expiring within a month) or missed (expired)."""
    issuer = ISSUERS[weighted(rng, ISSUER_WEIGHTS)]
    anchor = datetime.combine(now.date() + timedelta(days=3), CERT_HOUR)
    roll = rng.random()
    if roll < 0.01:
        weeks = -1                                        # expired four days ago
    elif roll < 0.07:
        weeks = rng.randrange(4)                          # expires in 3, 10, 17 or 24 days
    else:
        weeks = rng.randrange(5 + issuer.renew_before_days // 7, 1 + issuer.lifetime_days // 7)
    not_after = anchor + timedelta(weeks=weeks)
    certs = [CertPeriod(issuer.key, not_after - timedelta(days=issuer.lifetime_days), not_after)]
    first_scan = datetime.combine(start, time(0), tzinfo=timezone.utc)
    while certs[0].not_before > first_scan:
        previous_end = certs[0].not_before + timedelta(days=issuer.renew_before_days)
        certs.insert(0, CertPeriod(issuer.key, previous_end - timedelta(days=issuer.lifetime_days), previous_end))
    return certs


def cert_index(certs: list[CertPeriod], at: datetime) -> int:
    """The certificate served at `at`: the newest one already issued."""
    return max(i for i, c in enumerate(certs) if c.not_before <= at or i == 0)


# --- nightly runs ---------------------------------------------------------------------------------

def plan_runs(rng: random.Random, plan: SitePlan, start: date, now: datetime) -> list[Run]:
    nights = [d for d in dates_from(start, now.date())
              if plan.frequency == "nightly" or cron_weekday(d) == plan.weekday]
    configs = config_timeline(rng, len(nights))
    failing = failure_nights(rng, len(nights))
    runs = []
    for i, night in enumerate(nights):
        at = datetime.combine(night, time(plan.hour, plan.minute, rng.randrange(60)), tzinfo=timezone.utc)
        if at > now:
            continue
        runs.append(make_run(rng, plan, at, "schedule", configs[i], i in failing, caught_up=rng.random() < 0.01))
        if rng.random() < 0.015:  # someone pressed "Audit now" during the day
            manual = at + timedelta(hours=rng.randint(6, 14), minutes=rng.randrange(60))
            if manual <= now:
                runs.append(make_run(rng, plan, manual, "manual", configs[i], False))
    return runs


def make_run(rng: random.Random, plan: SitePlan, at: datetime, trigger: str, config: str, failed: bool,
             caught_up: bool = False) -> Run:
    error = None
    if failed:
        code, message = rng.choice(FAILURES)
        error = (code, message.format(host=plan.hostname, ip=plan.ip))
    duration = round(rng.uniform(3.5, 9.0) if error is None else rng.uniform(0.1, 3.5), 2)
    return Run(at=at, trigger=trigger, config=config, cert=cert_index(plan.certs, at), error=error,
               caught_up=caught_up, duration_s=duration)


def config_timeline(rng: random.Random, nights: int) -> list[str]:
    """A baseline, maybe an upgrade, a few short regressions (a bad deploy, the wrong certificate)."""
    baseline = weighted(rng, BASELINE_WEIGHTS)
    timeline = [baseline] * nights
    if baseline in UPGRADES and rng.random() < 0.3 and nights > 10:
        upgrade_at = rng.randrange(nights // 10, nights - nights // 10)
        timeline[upgrade_at:] = [UPGRADES[baseline]] * (nights - upgrade_at)
    episodes = 0 if rng.random() < 0.65 else 1 if rng.random() < 0.8 else 2
    for _ in range(episodes if nights > 7 else 0):
        length, begin = rng.randint(1, 6), rng.randrange(nights)
        bad = rng.choice([c for c in REGRESSIONS if c != timeline[begin]])
        timeline[begin:begin + length] = [bad] * len(timeline[begin:begin + length])
    if rng.random() < 0.03 and nights > 5:  # a problem that is still there today
        length = rng.randint(1, 5)
        timeline[-length:] = [rng.choice(REGRESSIONS[:2])] * length
    return timeline


def failure_nights(rng: random.Random, nights: int) -> set[int]:
    """Nights the audit failed: the odd one, sometimes a streak of 2-3, rarely still failing now."""
    failed = {i for i in range(nights) if rng.random() < 0.006}
    if rng.random() < 0.1 and nights > 3:
        begin = rng.randrange(nights - 3)
        failed |= set(range(begin, begin + rng.randint(2, 3)))
    if rng.random() < 0.01 and nights > 2:
        failed |= {nights - 1, nights - 2}
    return failed


def plan_perf(rng: random.Random, plan: SitePlan, now: datetime, always: bool = False) -> tuple[list, list]:
    """A verified site in eight gets a few performance runs and browser probes in the last two months.

    Each organization's first site always does (`always`), so every seeded organization shows the
    Performance and Probes pages filled whatever the date and the draw. Times are clamped to just
    before `now` rather than dropped: dropping made the result depend on the hour the seeder ran."""
    if rng.random() >= 0.125 and not always:
        return [], []
    recent = [r.at for r in plan.runs if r.at > now - timedelta(days=60)] or [now - timedelta(days=1)]
    kinds = ["sweep", "handshakes", "load"]
    latest = now - timedelta(minutes=5)

    def after_an_audit() -> datetime:
        return min(rng.choice(recent) + timedelta(hours=rng.randint(7, 12)), latest)

    runs = [(kinds[i % 3], after_an_audit()) for i in range(rng.randint(1, 3))]
    probes = [after_an_audit() for _ in range(rng.randint(1, 3))]
    return runs, probes


# --- helpers ----------------------------------------------------------------------------------------

def weighted(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def dates_from(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def cron_weekday(day: date) -> int:
    return (day.weekday() + 1) % 7
