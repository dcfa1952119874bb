"""Write the demo data drawn by stories.py, fast: bulk inserts in batches, one transaction.

1. Organizations, users (one password hash shared by all, hashing is slow on purpose),
   memberships, tags, sites, schedules with their beat entries.
2. Every distinct (configuration, certificate, expiry phase) is graded once by the real pure
   domain (`build_report`); its facts and report are kept as JSON text with placeholders.
3. Per site the placeholders become the site's host name, IP and certificate ids; per audit, the
   scan time, the duration and the "in N days" of the expiry check. The JSON text goes to the
   database as is (bulk.py: COPY on PostgreSQL), so 40 KB per audit is never parsed and
   re-serialised in Python.
4. Findings, suites and certificates rows (the queryable copies of what the JSON says) are
   written for each site's latest audit and the audits of the last RECENT_DETAIL_DAYS days:
   the pages read the JSON, so older audits render the same without them (docs/decisions.md).
5. Scheduled-run claims, alert events (from the real detection rules, walked over each site's
   year), performance runs, probes and the sites' summary columns follow.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.utils import timezone

from tlsaudit.accounts.models import User
from tlsaudit.alerts.models import AlertEvent, AlertSettings, WebhookDelivery
from tlsaudit.audits.models import Audit, AuditCertificate, AuditFinding, AuditSuite
from tlsaudit.audits.services import suite_row
from tlsaudit.demo import configs, perfdata, stories
from tlsaudit.demo.bulk import JsonText, insert_rows, reserve_ids
from tlsaudit.domain import alerts as alert_rules
from tlsaudit.domain import roles
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.renewals import renewal_due
from tlsaudit.loadtests.models import PerfRun, SiteVerification
from tlsaudit.monitoring.models import OrgSchedulePolicy, ScheduledRun, SiteSchedule
from tlsaudit.monitoring.schedules import RUN_TASK, task_name
from tlsaudit.orgs.models import Membership, Organization
from tlsaudit.probes.models import Probe
from tlsaudit.sites.models import Site, Tag

RECENT_DETAIL_DAYS = 7
BATCH = 500
SLUG_PREFIX = "seed-"
EMAIL_DOMAIN = "seed.tlsaudit.test"
PERSONAS = ((roles.OWNER, "owner"), (roles.ADMIN, "admin"), (roles.MEMBER, "member"), (roles.VIEWER, "viewer"))
PROGRESS = [{"name": name, "status": "done", "t": t} for name, t in (
    ("resolve", 0.01), ("connectivity", 0.35), ("sslyze", 0.36), ("certificate_info", 1.9),
    ("tls_1_3_cipher_suites", 2.4), ("tls_1_2_cipher_suites", 3.1), ("heartbleed", 3.2), ("robot", 4.6),
    ("preferences", 5.0), ("alpn", 5.1), ("hsts", 5.3), ("mozilla", 5.4))]
TIMINGS = {"resolve": 0.01, "connectivity": 0.34, "sslyze": 4.6, "probes": 0.7}


@dataclass
class Graded:
    """One configuration graded with one certificate at one expiry phase."""
    facts_text: str
    report_text: str
    report: object                   # the AuditReport
    facts: object                    # the ScanFacts
    days_text: tuple[str, int] | None    # ("expires on 2026-05-01, in ", days at grading) or None
    caps: dict
    failing: dict
    protocols_text: str              # the supported protocols, as the JSON the column holds
    suite_rows: list[dict]           # AuditSuite columns, without the audit


@dataclass
class AuditRow:
    """One audit to insert: its column values, and what the rows written after it need to know."""
    values: dict
    run: stories.Run
    graded: Graded | None

    @property
    def pk(self) -> int:
        return self.values["id"]

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class Stats:
    organizations: int = 0
    users: int = 0
    sites: int = 0
    audits: int = 0
    failed_audits: int = 0
    detail_audits: int = 0
    findings: int = 0
    suites: int = 0
    certificates: int = 0
    scheduled_runs: int = 0
    alert_events: int = 0
    perf_runs: int = 0
    probes: int = 0
    graded_configurations: int = 0
    logins: list[tuple[str, str, str]] = field(default_factory=list)   # (organization, email, role)


def existing_seed_orgs():
    return Organization.objects.filter(slug__startswith=SLUG_PREFIX)


def reset() -> int:
    """Delete every seeded organization and the seeded users; returns how many organizations."""
    org_ids = list(existing_seed_orgs().values_list("pk", flat=True))
    with transaction.atomic():
        if org_ids:
            delete_history(org_ids)
            existing_seed_orgs().delete()  # sites, schedules (and their beat entries), runs: a few thousand rows
        seeded_users().delete()
    return len(org_ids)


def seeded_users():
    return User.objects.filter(email__endswith=f".{EMAIL_DOMAIN}")


def delete_history(org_ids: list[int]) -> None:
    """The big tables in bulk, children first: the ORM's cascade would load every audit (and its
    JSON) into memory to delete it."""
    from django.db import connection


    # bandit B608 (nosec below): only table names from model _meta go into these strings; ids are bound params.
    marks = ", ".join(["%s"] * len(org_ids))
    audits = f"SELECT id FROM {Audit._meta.db_table} WHERE organization_id IN ({marks})"  # nosec B608
    sites = f"SELECT id FROM {Site._meta.db_table} WHERE organization_id IN ({marks})"  # nosec B608
    events = f"SELECT id FROM {AlertEvent._meta.db_table} WHERE organization_id IN ({marks})"  # nosec B608
    statements = [
        *(f"DELETE FROM {m._meta.db_table} WHERE audit_id IN ({audits})"  # nosec B608
          for m in (AuditFinding, AuditSuite, AuditCertificate)),
        f"DELETE FROM {WebhookDelivery._meta.db_table} WHERE event_id IN ({events})",  # nosec B608
        f"DELETE FROM {AlertEvent._meta.db_table} WHERE organization_id IN ({marks})",  # nosec B608
        f"DELETE FROM {ScheduledRun._meta.db_table} WHERE site_id IN ({sites})",  # nosec B608
        f"UPDATE {Site._meta.db_table} SET last_audit_id = NULL WHERE organization_id IN ({marks})",  # nosec B608
        f"DELETE FROM {Audit._meta.db_table} WHERE organization_id IN ({marks})",  # nosec B608
    ]
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql, org_ids)


@contextmanager
def explicit_timestamps(*models):
    """bulk_create calls pre_save, which would stamp `auto_now_add` fields with the current time;
    the history needs its own dates, so the flag is off while seeding."""
    switched = [f for m in models for f in m._meta.concrete_fields if getattr(f, "auto_now_add", False)]
    for f in switched:
        f.auto_now_add = False
    try:
        yield
    finally:
        for f in switched:
            f.auto_now_add = True


def seed(*, orgs: int, sites: int, days: int, seed_value: int, password: str, now: datetime | None = None,
         progress=None) -> Stats:
    """Create the demo data in one transaction; returns what was written."""
    rng = random.Random(seed_value)
    now = now or timezone.now()
    plans = stories.plan_orgs(rng, orgs, sites, days, now, capacity=settings.NIGHTLY_MAX_STARTS_PER_MINUTE)
    writer = Writer(rng, now, password, progress or (lambda message: None))
    with transaction.atomic(), explicit_timestamps(Organization, Membership, Site, SiteSchedule, Audit,
                                                   ScheduledRun, AlertEvent, PerfRun, Probe):
        writer.write(plans)
    analyze()
    return writer.stats


def analyze() -> None:
    """Fresh statistics for the planner: tables that grew from nothing to a year of rows would
    otherwise be planned as empty until autovacuum comes by."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


class Writer:
    def __init__(self, rng: random.Random, now: datetime, password: str, progress):
        self.rng, self.now, self.progress = rng, now, progress
        self.password_hash = make_password(password)
        self.graded: dict[tuple, Graded] = {}
        self.stats = Stats()
        self.recent_since = now - timedelta(days=RECENT_DETAIL_DAYS)
        self.texts: dict[tuple, tuple[str, str]] = {}
        self.perf_pool: dict[str, list[dict]] = {}

    def write(self, plans: list[stories.OrgPlan]) -> None:
        started = time.monotonic()
        orgs = self.write_orgs(plans)
        for org, plan in zip(orgs, plans):
            site_rows = self.write_sites(org, plan)
            self.write_schedules(plan, site_rows)
            for chunk in chunks(list(zip(plan.sites, site_rows)), 25):
                self.write_history(org, chunk)
            self.progress(f"{org.name}: {len(site_rows)} sites, {self.stats.audits} audits so far "
                          f"({time.monotonic() - started:.0f} s)")
        self.stats.graded_configurations = len(self.graded)

    # --- organizations, people, sites -----------------------------------------------------------

    def write_orgs(self, plans):
        created = self.now - timedelta(days=400)
        orgs = Organization.objects.bulk_create(
            [Organization(name=p.name, slug=p.slug, created_at=created) for p in plans], batch_size=BATCH)
        users, memberships = [], []
        for org in orgs:
            for role, label in PERSONAS:
                email = f"{label}@{org.slug.removeprefix(SLUG_PREFIX)}.{EMAIL_DOMAIN}"
                users.append(User(email=email, full_name=f"{label.title()} of {org.name}", email_verified=True,
                                  password=self.password_hash, last_org=org))
                self.stats.logins.append((org.name, email, role))
        User.objects.bulk_create(users, batch_size=BATCH)
        for i, user in enumerate(users):
            memberships.append(Membership(organization=orgs[i // len(PERSONAS)], user=user,
                                          role=PERSONAS[i % len(PERSONAS)][0], created_at=created))
        Membership.objects.bulk_create(memberships, batch_size=BATCH)
        OrgSchedulePolicy.objects.bulk_create([OrgSchedulePolicy(organization=o) for o in orgs])
        AlertSettings.objects.bulk_create([AlertSettings(organization=o, recipients=[users[i * len(PERSONAS)].email])
                                           for i, o in enumerate(orgs)])
        for org, i in zip(orgs, range(0, len(users), len(PERSONAS))):
            org.owner = users[i]
        self.stats.organizations, self.stats.users = len(orgs), len(users)
        return orgs

    def write_sites(self, org, plan):
        names = sorted({t for s in plan.sites for t in s.tags})
        tags = {t.name: t for t in Tag.objects.bulk_create([Tag(organization=org, name=n) for n in names])}
        rows = Site.objects.bulk_create(
            [Site(organization=org, hostname=s.hostname, name=s.name, created_at=s.created_at, created_by=org.owner)
             for s in plan.sites], batch_size=BATCH)
        through = Site.tags.through
        through.objects.bulk_create([through(site_id=row.pk, tag_id=tags[t].pk) for s, row in zip(plan.sites, rows)
                                     for t in s.tags], batch_size=BATCH)
        self.stats.sites += len(rows)
        return rows

    def write_schedules(self, plan, site_rows) -> None:
        """A SiteSchedule and its beat entry per site, as monitoring.schedules.sync_periodic_task makes them."""
        from zoneinfo import ZoneInfo

        from django_celery_beat.models import CrontabSchedule, PeriodicTask, PeriodicTasks


        crons = CrontabSchedule.objects.bulk_create([
            CrontabSchedule(minute=str(s.minute), hour=str(s.hour), day_of_month="*", month_of_year="*",
                            day_of_week=str(s.weekday) if s.frequency == "weekly" else "*", timezone=ZoneInfo("UTC"))
            for s in plan.sites], batch_size=BATCH)
        tasks = PeriodicTask.objects.bulk_create([
            PeriodicTask(name=task_name(row.pk), task=RUN_TASK, crontab=cron, args=json.dumps([row.pk]))
            for row, cron in zip(site_rows, crons)], batch_size=BATCH)
        SiteSchedule.objects.bulk_create([
            SiteSchedule(site=row, frequency=s.frequency, hour=s.hour, minute=s.minute, weekday=s.weekday,
                         periodic_task=task, created_at=s.created_at, updated_at=s.created_at)
            for s, row, task in zip(plan.sites, site_rows, tasks)], batch_size=BATCH)
        PeriodicTasks.update_changed()

    # --- audits and what hangs off them --------------------------------------------------------------

    def write_history(self, org, chunk) -> None:
        per_site, self.texts = [], {}
        for plan, site in chunk:
            per_site.append((plan, site, [self.audit_row(org, plan, site, run) for run in plan.runs]))
        audits = [a for _, _, rows in per_site for a in rows]
        for audit, pk in zip(audits, reserve_ids(Audit, len(audits))):
            audit.values["id"] = pk
        insert_rows(Audit, [a.values for a in audits])
        self.stats.audits += len(audits)
        self.stats.failed_audits += sum(1 for a in audits if a.status == "failed")
        self.write_details(per_site)
        self.write_scheduled_runs(per_site)
        self.write_alerts(org, per_site)
        self.write_perf(org, per_site)
        self.write_site_summaries(per_site)

    def audit_row(self, org, plan, site, run) -> AuditRow:
        finished = run.at + timedelta(seconds=run.duration_s)
        values = dict(site_id=site.pk, organization_id=org.pk, trigger=run.trigger, attempts=1, host=plan.hostname,
                      port=443, ip=plan.ip, duration_s=run.duration_s, created_at=run.at - timedelta(seconds=1),
                      queued_at=run.at - timedelta(seconds=1), started_at=run.at, finished_at=finished,
                      requested_by_id=org.owner.pk if run.trigger == "manual" else None)
        if run.error:
            values.update(status="failed", error_code=run.error[0], error_message=run.error[1],
                          progress=FAILED_PROGRESS_TEXT)
            return AuditRow(values, run, None)
        graded = self.grade(plan, run)
        facts_text, report_text = self.personalised(plan, run, graded)
        values.update(status="done", progress=PROGRESS_TEXT, timings=TIMINGS_TEXT, facts=stamp_facts(facts_text, run),
                      report=stamp_report(report_text, graded, run), rules_version=graded.report.rules_version,
                      grade=graded.report.grade.grade, grade_ignoring_trust=graded.report.grade.grade_ignoring_trust,
                      score=graded.report.grade.score, protocols=graded.protocols_text,
                      best_profile=graded.report.best_profile or "")
        return AuditRow(values, run, graded)

    def grade(self, plan, run) -> Graded:
        cert = plan.certs[run.cert]
        phase = expiry_phase(cert.not_after - run.at)
        key = (run.config, cert, phase)
        if key not in self.graded:
            self.graded[key] = grade_configuration(configs.CONFIGS[run.config], cert, run.at)
        return self.graded[key]

    def personalised(self, plan, run, graded: Graded) -> tuple[str, str]:
        """The graded texts with this site's names and ids, made once per site and graded configuration."""
        key = (plan.hostname, id(graded))
        if key not in self.texts:
            ids = certificate_ids(plan.hostname, plan.certs[run.cert], run.config)
            self.texts[key] = (personalise(graded.facts_text, plan, ids), personalise(graded.report_text, plan, ids))
        return self.texts[key]

    def write_details(self, per_site) -> None:
        """Findings, suites and certificate rows of each site's latest done audit and the recent ones."""
        findings, suites, certs = [], [], []
        for plan, site, rows in per_site:
            done = [a for a in rows if a.status == "done"]
            for audit in done:
                if audit is done[-1] or audit.finished_at >= self.recent_since:
                    self.stats.detail_audits += 1
                    f, s, c = detail_rows(audit, plan)
                    findings += f
                    suites += s
                    certs += c
        self.stats.findings += insert_rows(AuditFinding, findings)
        self.stats.suites += insert_rows(AuditSuite, suites)
        self.stats.certificates += insert_rows(AuditCertificate, certs)

    def write_scheduled_runs(self, per_site) -> None:
        claims = [{"site_id": site.pk, "run_date": a.started_at.date(), "audit_id": a.pk, "caught_up": a.run.caught_up,
                   "created_at": a.created_at}
                  for _, site, rows in per_site for a in rows if a.trigger == "schedule"]
        self.stats.scheduled_runs += insert_rows(ScheduledRun, claims)

    def write_alerts(self, org, per_site) -> None:
        """Walk each site's audits through the real detection rules, one event per occurrence."""
        events = []
        for plan, site, rows in per_site:
            seen, previous, streak = set(), None, []
            for audit in rows:
                streak = streak + [audit] if audit.status == "failed" else []
                current = alert_summary(audit, plan, streak)
                for event in alert_rules.detect(previous, current, audit.finished_at):
                    if event.key not in seen:
                        seen.add(event.key)
                        events.append(AlertEvent(organization=org, site=site, audit_id=audit.pk, kind=event.kind,
                                                 dedupe_key=event.key, title=event.title[:300],
                                                 payload=json_safe(event.data), created_at=audit.finished_at,
                                                 emailed_at=audit.finished_at + timedelta(seconds=20)))
                if audit.status == "done":
                    previous = current
        AlertEvent.objects.bulk_create(events, batch_size=BATCH)
        self.stats.alert_events += len(events)

    def write_perf(self, org, per_site) -> None:
        runs, probes, proofs = [], [], []
        for plan, site, _ in per_site:
            if not (plan.perf_runs or plan.probes):
                continue
            verified = min([at for _, at in plan.perf_runs] + plan.probes) - timedelta(days=2)
            proof = SiteVerification(site=site)
            proof.record_pass("http", verified)
            proofs.append(proof)
            for kind, at in plan.perf_runs:
                runs.append(PerfRun(site=site, organization=org, requested_by=org.owner,
                                    **self.perf_run(kind, plan, at)))
            for at in plan.probes:
                probes.append(Probe(site=site, organization=org, requested_by=org.owner,
                                    **perfdata.probe_fields(self.rng, plan.hostname, plan.ip, at)))
        SiteVerification.objects.bulk_create(proofs)
        PerfRun.objects.bulk_create(runs, batch_size=50)
        Probe.objects.bulk_create(probes, batch_size=50)
        self.stats.perf_runs += len(runs)
        self.stats.probes += len(probes)

    def perf_run(self, kind: str, plan, at: datetime) -> dict:
        """A finished run's columns. Merging and reporting HdrHistograms in pure Python takes seconds
        per sweep, so PERF_VARIANTS runs of each kind are measured once and copied to each site."""
        pool = self.perf_pool.setdefault(kind, [])
        if len(pool) < PERF_VARIANTS:
            fields = perfdata.perf_run_fields(self.rng, kind, configs.HOST, {"http": 80, "https": 443}, configs.IP,
                                              configs.STARTED_AT)
            pool.append({key: json.dumps(fields[key]) for key in PERF_JSON} | {
                key: fields[key] for key in fields if key not in PERF_JSON})
        chosen = self.rng.choice(pool)
        shift = at - configs.STARTED_AT
        ids = {"fingerprint": configs.FINGERPRINT, "serial": configs.SERIAL}
        return {**{key: JsonText(personalise(chosen[key], plan, ids)) for key in PERF_JSON},
                **{key: value + shift if isinstance(value, datetime) else value for key, value in chosen.items()
                   if key not in PERF_JSON},
                "host": plan.hostname, "ip": plan.ip}

    def write_site_summaries(self, per_site) -> None:
        for plan, site, rows in per_site:
            apply_summary(site, rows)
        Site.objects.bulk_update([site for _, site, _ in per_site], SUMMARY_FIELDS, batch_size=BATCH)


PERF_JSON = ("params", "progress", "results", "summary")
PERF_VARIANTS = 1
SUMMARY_FIELDS = ["last_audit", "last_audit_at", "last_audit_status", "last_grade", "latest_score",
                  "previous_score", "cert_expires_at", "cert_renew_at"]
PROGRESS_TEXT = json.dumps(PROGRESS)
FAILED_PROGRESS_TEXT = json.dumps(PROGRESS[:2])
TIMINGS_TEXT = json.dumps(TIMINGS)


def apply_summary(site, rows) -> None:
    """The denormalised columns tlsaudit.audits.services.update_site_summary keeps up to date."""
    if not rows:
        return
    last = max(rows, key=lambda a: (a.finished_at, a.pk))
    done = sorted((a for a in rows if a.status == "done"), key=lambda a: (a.finished_at, a.pk))
    site.last_audit_id, site.last_audit_at, site.last_audit_status = last.pk, last.finished_at, last.status
    site.last_grade = last.grade if last.status == "done" else ""
    site.latest_score = done[-1].score if done else None
    site.previous_score = done[-2].score if len(done) > 1 else None
    leaf = done[-1].graded.facts.certificates[0].leaf if done else None
    site.cert_expires_at = leaf.not_after if leaf else None
    site.cert_renew_at = renewal_due(leaf.not_before, leaf.not_after) if leaf else None


# --- grading and placeholders -----------------------------------------------------------------------

def expiry_phase(left: timedelta) -> str:
    """The expiry check's outcome class; within one, only the day count in its text changes."""
    if left.total_seconds() < 0:
        return "expired"
    return "high" if left.days < 7 else "medium" if left.days < 14 else "low" if left.days < 30 else "ok"


def grade_configuration(config, cert, at: datetime) -> Graded:
    """Grade `config` serving `cert` as scanned at `at` (the rules read the time from the facts, like
    a re-derivation does); the stored text gets the scan-time placeholder back for stamp_facts."""
    facts = dataclasses.replace(configs.scan_facts(config, cert), started_at=at)
    report = build_report(facts, None)
    report_dict = report.to_dict()
    left = cert.not_after - at
    days_text = None
    if left.total_seconds() >= 0:
        days_text = (f"expires on {cert.not_after:%Y-%m-%d}, in ", left.days)
    facts_text = json.dumps(facts.to_dict()).replace(json.dumps(at.isoformat()), json.dumps(STARTED_TEXT))
    graded = Graded(facts_text=facts_text, report_text=json.dumps(report_dict), report=report,
                    facts=facts, days_text=days_text,
                    caps={c["rule_id"]: c["reason"] for c in report_dict["grade"].get("caps", [])},
                    failing={f.id: {"severity": f.severity, "title": f.title} for f in report.findings
                             if f.status == "fail"},
                    protocols_text=json.dumps([p for p in facts.protocols if facts.supports(p)]),
                    suite_rows=suite_rows(facts))
    return graded


def certificate_ids(host: str, cert, config: str) -> dict:
    """The leaf's fingerprint and serial: one certificate per site and period (another one when a
    bad deploy served a self-signed or someone else's certificate)."""
    kind = config if config in ("self_signed", "wrong_name") else "issued"
    digest = hashlib.sha256(f"{host}|{cert.not_before.isoformat()}|{kind}".encode()).hexdigest()
    return {"fingerprint": digest, "serial": digest[:32]}


def personalise(text: str, plan, ids: dict) -> str:
    return (text.replace(configs.HOST, plan.hostname).replace(configs.IP, plan.ip)
            .replace(configs.FINGERPRINT, ids["fingerprint"]).replace(configs.SERIAL, ids["serial"]))


STARTED_TEXT = configs.STARTED_AT.isoformat()
DURATION_TEXT = json.dumps(configs.DURATION_S)


def stamp_facts(text: str, run) -> str:
    return text.replace(STARTED_TEXT, run.at.isoformat()).replace(DURATION_TEXT, json.dumps(run.duration_s))


def stamp_report(text: str, graded: Graded, run) -> str:
    """The expiry check says "in N days" as of the scan: the one part of a report that changes daily."""
    if graded.days_text is None:
        return text
    prefix, graded_days = graded.days_text
    cert_after = graded.facts.certificates[0].leaf.not_after
    days = (cert_after - run.at).days
    return text if days == graded_days else text.replace(f"{prefix}{graded_days} days", f"{prefix}{days} days")


def detail_rows(audit: AuditRow, plan) -> tuple[list, list, list]:
    """The audit's findings, suites and certificates rows, as services.replace_normalised_rows writes them."""
    graded, run = audit.graded, audit.run
    ids = certificate_ids(plan.hostname, plan.certs[run.cert], run.config)
    text = lambda value: stamp_report(personalise(value, plan, ids), graded, run)  # noqa: E731
    findings = [{"audit_id": audit.pk, "finding_id": f.id, "severity": f.severity, "status": f.status,
                 "title": f.title[:200], "explanation": f.explanation, "evidence": text(f.evidence),
                 "reason": text(f.reason)} for f in graded.report.findings]
    suites = [{**row, "audit_id": audit.pk} for row in graded.suite_rows]
    certs = [{"audit_id": audit.pk, "deployment": d, "position": p, "subject": text(c.subject),
              "issuer": text(c.issuer), "not_before": c.not_before, "not_after": c.not_after, "key_type": c.key_type,
              "key_bits": c.key_bits, "signature_hash": c.signature_hash or "",
              "fingerprint_sha256": text(c.fingerprint_sha256), "san_dns": json.dumps([text(n) for n in c.san_dns])}
             for d, dep in enumerate(graded.facts.certificates) for p, c in enumerate(dep.chain)]
    return findings, suites, certs


def suite_rows(facts) -> list[dict]:
    """AuditSuite columns of each accepted suite (services.suite_row), computed once per graded configuration."""
    rows = []
    for suite in facts.suites:
        row = suite_row(None, facts, suite)
        rows.append({f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields
                     if f.attname not in ("id", "audit_id")})
    return rows


def alert_summary(audit, plan, streak: list) -> dict:
    """What tlsaudit.alerts.services.summarize reads from a stored audit."""
    if audit.status != "done":
        return {"audit_id": audit.pk, "site_id": audit.site_id, "status": audit.status, "grade": "", "score": None,
                "error": audit.error_message, "caps": {}, "findings": {}, "cert": None,
                "consecutive_failures": len(streak), "failing_since": streak[0].pk if streak else None,
                "failing_for_s": (audit.created_at - streak[0].created_at).total_seconds() if streak else 0}
    graded, run = audit.graded, audit.run
    leaf = graded.facts.certificates[0].leaf
    ids = certificate_ids(plan.hostname, plan.certs[run.cert], run.config)
    return {"audit_id": audit.pk, "site_id": audit.site_id, "status": "done", "grade": audit.grade,
            "score": audit.score, "error": "", "caps": graded.caps, "findings": graded.failing,
            "cert": {"fingerprint": ids["fingerprint"], "not_before": leaf.not_before, "not_after": leaf.not_after,
                     "subject": leaf.subject.replace(configs.HOST, plan.hostname),
                     "issuer": leaf.issuer.replace(configs.HOST, plan.hostname),
                     "names": sorted(n.replace(configs.HOST, plan.hostname) for n in leaf.san_dns),
                     "ari_end": None},
            "consecutive_failures": 0, "failing_since": None, "failing_for_s": 0}


def json_safe(data: dict) -> dict:
    return json.loads(json.dumps(data, default=str))


def chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]
