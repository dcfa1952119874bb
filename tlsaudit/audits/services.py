"""Audit lifecycle: queue, claim, record progress, store the outcome, fail, re-derive, reap.

Called by views, the Celery task and management commands; nothing here imports sslyze.
"""

from __future__ import annotations

import logging
import operator
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from functools import reduce

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from tlsaudit.alerts.services import evaluate_on_commit as evaluate_alerts_on_commit
from tlsaudit.audits import waiting
from tlsaudit.audits.models import Audit, AuditCertificate, AuditFinding, AuditSuite
from tlsaudit.audits.renewals import renew_at
from tlsaudit.core import runners
from tlsaudit.core.queue import QueueUnavailable, enqueue, messages_lost, queue_is_empty
from tlsaudit.core.ratelimits import RateLimited, enforce, times, times_since
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.ciphers import classify, strength_label
from tlsaudit.domain.ratelimit import in_words
from tlsaudit.domain.scanfacts import BAD, OK, ScanFacts
from tlsaudit.orgs.models import Organization
from tlsaudit.sites.models import Site
from workers.net.errors import TargetError
from workers.net.target import resolve_target

AUDIT_TASK = "workers.tasks.audit.run_audit"
ACTIVE = (Audit.Status.QUEUED, Audit.Status.RUNNING)
# Phases a full scan reports (resolve, connectivity, sslyze, 18 commands, probes, mozilla):
# the denominator of the progress bar.
EXPECTED_STEPS = 28
# At most one progress write per audit per this many seconds (the audit page polls every 2 s).
PROGRESS_WRITE_INTERVAL_S = 1.0
# A run lost twice (its worker died twice) is failed rather than re-queued a third time.
MAX_ATTEMPTS = 2
# The second look at a silent heartbeat waits one heartbeat interval and this much (thread wake-up, the write).
WORKER_LOST = ("worker_lost", "The audit was interrupted twice (its worker stopped). Please retry.")
# What a stopped or restarting PostgreSQL raises (InterfaceError: a connection it already closed).
DATABASE_DOWN = (OperationalError, InterfaceError)
log = logging.getLogger(__name__)
HOUR = timedelta(hours=1)
# A manual audit resolves its name to count the per-target limit by address; a slower DNS only loses
# that count (the name's own still holds), never the click.
ADDRESS_LOOKUP_SECONDS = 2.0


class AuditRateLimited(RateLimited):
    """A manual or API audit refused by the per-organization or per-target limit (API: 429)."""


def queue_audit(site, *, user=None, trigger=Audit.Trigger.MANUAL, delay_s: int = 0,
                resolve: bool = True) -> tuple[Audit, bool]:
    """The site's active audit if there is one, else a new queued audit sent on commit (to start
    `delay_s` seconds later: scheduled audits use it to leave second 0 of their minute).

    Manual and API audits may raise AuditRateLimited; scheduled ones are never limited.
    """
    limited = trigger != Audit.Trigger.SCHEDULE
    # Before the transaction: DNS may take a while. A bulk request uses what is known (check_target_limit
    # in the worker counts the address it actually resolved).
    address = (target_address(site) if resolve else known_address(site)) if limited else site.pinned_ip
    with transaction.atomic():
        # The site's row first: two ways in at once (a click, its nightly run, the waiting line's sweep) see
        # each other's audit instead of both creating one. Locks: site, then organization, then its line.
        Site.objects.select_for_update().filter(pk=site.pk).first()
        active = Audit.objects.select_for_update().filter(site=site, status__in=ACTIVE).first()
        if active:
            return active, False
        if limited:
            enforce_audit_limits(site, address)
        now = timezone.now()
        audit = Audit.objects.create(site=site, organization_id=site.organization_id, trigger=trigger,
                                     requested_by=user if user and user.is_authenticated else None,
                                     host=site.hostname, port=site.https_port, service=site.service, queued_at=now,
                                     sent_at=now, ip=address)
        waiting.drop(site.pk)   # it was in line for a free slot: this audit is the one it waited for
        send(audit, delay_s=delay_s)
    return audit, True


@dataclass
class BulkQueued:
    """What "audit all / audit selected" did, per site, in counts and the refusals' reasons."""
    queued: int = 0
    already: int = 0
    unsent: int = 0      # saved and queued, waiting for the broker (the reaper sends them)
    waiting: int = 0     # over the organization's hourly limit: in line for a free slot (audits.waiting)
    refused: int = 0
    reasons: list[str] = field(default_factory=list)


def queue_audits(sites, *, user=None, trigger=Audit.Trigger.MANUAL) -> BulkQueued:
    """queue_audit for each site, under the same limits as one click each. Once the organization's hourly
    limit is reached, the other sites wait in line for a free slot (audits.waiting), with no query per site
    to learn the limit again; a target's own limit refuses that site only."""
    outcome = BulkQueued()
    sites = list(sites)
    for index, site in enumerate(sites):
        try:
            _, created = queue_audit(site, user=user, trigger=trigger, resolve=False)
        except AuditRateLimited as refusal:
            if refusal.code == "audits_per_org":
                outcome.waiting = waiting.wait_for_slot(sites[index:], user=user, trigger=trigger)
                outcome.already += len(sites) - index - outcome.waiting
                break
            if refusal.message not in outcome.reasons:
                outcome.reasons.append(refusal.message)
            outcome.refused += 1
            continue
        except QueueUnavailable:
            outcome.unsent += 1
            continue
        if created:
            outcome.queued += 1
        else:
            outcome.already += 1
    return outcome


def send(audit: Audit, delay_s: int = 0) -> None:
    """Send the audit's task on commit (to run `delay_s` seconds later, if given). If the broker refuses
    it, QueueUnavailable: the audit stays queued, marked unsent, and the reaper sends it as soon as the
    broker answers again."""
    options = {"countdown": delay_s} if delay_s > 0 else {}
    enqueue(AUDIT_TASK, audit.pk, unsent=lambda: keep_unsent(audit), **options)


def keep_unsent(audit: Audit) -> QueueUnavailable:
    Audit.objects.filter(pk=audit.pk, status=Audit.Status.QUEUED).update(sent_at=None)
    audit.sent_at = None
    return QueueUnavailable("The audit is saved but not queued yet: the task queue is unavailable for a moment. "
                            "It starts by itself as soon as the queue is back.", row=audit)


def target_address(site) -> str | None:
    """The IP address an audit of the site will connect to: its pinned IP, or its name resolved now
    (the worker resolves it again). None when the name does not resolve: the worker will say why."""
    if site.pinned_ip:
        return site.pinned_ip
    try:
        return resolve_target(site.hostname, site.https_port, allow_private=settings.ALLOW_PRIVATE_TARGETS,
                              timeout=ADDRESS_LOOKUP_SECONDS, resolver=settings.DNS_RESOLVER).ip
    except TargetError:
        return None


def known_address(site) -> str | None:
    """The site's address without asking DNS: its pinned IP, else the one its latest audit connected to."""
    return site.pinned_ip or (Audit.objects.filter(site=site, ip__isnull=False).order_by("-created_at")
                              .values_list("ip", flat=True).first())


def over_target_limit(audit: Audit, ip: str, port: int) -> str | None:
    """The worker's side of the per-target limit: the address the name resolved to when the audit
    runs, counted whatever names point there. A name that resolved elsewhere (or slowly) when it was
    queued escapes the web's count, not this one. None, or the refusal in words."""
    if audit.trigger == Audit.Trigger.SCHEDULE:
        return None
    window = timedelta(minutes=settings.AUDIT_LIMIT_TARGET_MINUTES)
    earlier = (Audit.objects.exclude(trigger=Audit.Trigger.SCHEDULE).exclude(pk=audit.pk)
               .exclude(error_code="audits_per_target")
               .filter(ip=ip, port=port, created_at__lt=audit.created_at, created_at__gt=audit.created_at - window))
    limit = settings.AUDIT_LIMIT_PER_TARGET
    if earlier.count() < limit:
        return None
    return (f"Rate limit: {ip}:{port}, where {audit.host} points, was already audited {times(limit)} in the "
            f"{in_words(int(window.total_seconds())).removeprefix('1 ')} before this audit was asked for (by all "
            "users of TLS Audit together, under any name). Nothing was sent to it; try again later.")


def enforce_audit_limits(site, address: str | None = None) -> None:
    """Per organization per hour, and per target (all organizations together) per window: the target
    is host:port and, when known, the address:port it resolves to, whatever names point there,
    so that eight names for one server do not make eight times the limit.

    Runs inside queue_audit's transaction with the organization's row locked, so two clicks cannot
    both take the last slot. Scheduled audits neither count nor get refused.
    """
    Organization.objects.select_for_update().filter(pk=site.organization_id).first()
    on_demand = Audit.objects.exclude(trigger=Audit.Trigger.SCHEDULE)
    per_org = settings.AUDIT_LIMIT_PER_ORG_HOUR
    enforce(times_since(on_demand.filter(organization_id=site.organization_id), HOUR),
            limit=per_org, window=HOUR, code="audits_per_org", error=AuditRateLimited,
            what=f"your organization already started {per_org} audits")
    per_target, window = settings.AUDIT_LIMIT_PER_TARGET, timedelta(minutes=settings.AUDIT_LIMIT_TARGET_MINUTES)
    target = f"{site.hostname}:{site.https_port}"
    same_target = Q(host__iexact=site.hostname, port=site.https_port)
    if address:
        same_target |= Q(ip=address, port=site.https_port)
        target = f"{target} ({address}:{site.https_port}, under any name)"
    enforce(times_since(on_demand.filter(same_target), window),
            limit=per_target, window=window, code="audits_per_target", error=AuditRateLimited,
            what=f"{target} was already audited {times(per_target)} (by all users of TLS Audit together)")


def claim(audit_id: int) -> int | None:
    """One atomic UPDATE: whoever flips queued -> running owns the audit. Returns the attempt number,
    the token every later write of this run is fenced with (a re-queued run has a higher one). The
    row records which process runs it (core.runners), so that its death can be seen at once."""
    with transaction.atomic():
        claimed = Audit.objects.filter(pk=audit_id, status=Audit.Status.QUEUED).update(
            status=Audit.Status.RUNNING, started_at=timezone.now(), heartbeat_at=timezone.now(),
            attempts=F("attempts") + 1, progress=[], runner=runners.this_process(), turn_note="")
        if claimed != 1:
            return None
        return Audit.objects.values_list("attempts", flat=True).get(pk=audit_id)


def owned(audit_id: int, attempt: int | None):
    """The row as long as the run with this attempt number still owns it (attempt None: unfenced)."""
    rows = Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING)
    return rows if attempt is None else rows.filter(attempts=attempt)


def mark_held(audit_id: int, runner: str, countdown_s: float) -> None:
    """This process holds the queued audit's message: its retry runs in `countdown_s` (it waits for a busy
    target). The row records the holder and when the retry is due (`heartbeat_at`), so the reaper sends
    it again at once when the holder is seen dead, or when the retry is a lease overdue (killed elsewhere,
    frozen, or its message dropped by a broker reconnect) (orphan_held). Before, the message waited in a
    dead worker for the broker's visibility timeout (an hour) and the row for AUDIT_RESEND_AFTER_SECONDS
    (15 min)."""
    now = timezone.now()
    Audit.objects.filter(pk=audit_id, status=Audit.Status.QUEUED).update(
        sent_at=now, runner=runner, heartbeat_at=now + timedelta(seconds=countdown_s))


def note_turn(audit: Audit, note: str, ip: str) -> None:
    """What a queued audit waits for (turn_message), or "" once it has its turn, and the address it waits
    at; written when either changes."""
    if audit.turn_note != note or audit.ip != ip:
        Audit.objects.filter(pk=audit.pk, status=Audit.Status.QUEUED).update(turn_note=note, ip=ip)
        audit.turn_note, audit.ip = note, ip


def waited_words(seconds: float) -> str:
    """'45 seconds', '1 minute', '12 minutes': time already spent, rounded down (in_words rounds up)."""
    seconds = int(seconds)
    return in_words(seconds) if seconds < 60 else in_words(seconds // 60 * 60)


def turn_message(ip: str, place) -> str:
    if place.ahead == 0:
        others = "an audit of another site on that address is running"
    elif place.ahead == 1:
        others = "1 audit of another site on that address is ahead of it"
    else:
        others = f"{place.ahead} audits of other sites on that address are ahead of it"
    at_once = ("one site per address at a time" if settings.SCAN_AUDITS_PER_IP == 1 else
               f"{settings.SCAN_AUDITS_PER_IP} sites per address at a time")
    return (f"Waiting for its turn at {ip}: TLS Audit audits {at_once}, each within "
            f"{settings.SCAN_CONNECTIONS_PER_IP} connections to the address; {others}. Waiting "
            f"{waited_words(place.waited_s)} so far; its own deadline starts with its turn.")


def address_busy_message(ip: str, place, bound_s: int) -> str:
    return (f"Not started: this audit waited {waited_words(place.waited_s)} for its turn at {ip}, longer "
            f"than the {in_words(bound_s)} allowed (AUDIT_TURN_WAIT_SECONDS), behind audits of other sites "
            f"on that address ({place.ahead} still ahead). TLS Audit's own queue was too long: nothing was sent "
            "to the server, and this says nothing about it. Spread these sites' audits over a longer window "
            "(the portfolio shows which addresses do not fit theirs), or run more scan workers.")


def orphan_held(now) -> int:
    """Queued audits whose holding process is gone (seen dead on this host), or whose retry is
    AUDIT_HELD_GRACE_SECONDS overdue: mark them unsent, so this reaper pass sends them again. A retry that runs after all finds the
    claim taken by the new message's run (the claim is one atomic UPDATE), or takes it first."""
    silent = now - timedelta(seconds=settings.AUDIT_HELD_GRACE_SECONDS)
    orphaned = 0
    for audit in Audit.objects.filter(status=Audit.Status.QUEUED).exclude(runner="").only("pk", "runner",
                                                                                        "heartbeat_at"):
        if not (runners.is_gone(audit.runner) or audit.heartbeat_at is None or audit.heartbeat_at < silent):
            continue
        orphaned += Audit.objects.filter(pk=audit.pk, status=Audit.Status.QUEUED, runner=audit.runner,
                                         heartbeat_at=audit.heartbeat_at).update(sent_at=None, runner="")
    return orphaned


def beat(audit_id: int, attempt: int) -> bool:
    """The run's sign of life; False once the run lost the row (re-queued or finished by the reaper)."""
    return owned(audit_id, attempt).update(heartbeat_at=timezone.now()) == 1


def beat_all(attempts: dict[int, int]) -> set[int]:
    """The signs of life of several runs (audit id -> attempt), one SELECT and one UPDATE for them all;
    returns the ids whose run lost its row (re-queued, or finished)."""
    rows = Audit.objects.filter(status=Audit.Status.RUNNING).filter(
        reduce(operator.or_, (Q(pk=pk, attempts=attempt) for pk, attempt in attempts.items())))
    alive = set(rows.values_list("pk", flat=True))
    rows.update(heartbeat_at=timezone.now())
    return set(attempts) - alive


class ProgressRecorder:
    """Appends each finished check to the row. sslyze calls back from its own threads, so writes are
    serialised and a thread's database connection is closed after use. An audit reports ~50 events,
    most in bursts: the row is written at most once per `min_interval_s` (the page polls every 2 s),
    the events in between go with the next write, and `flush()` writes what is left at the end."""

    def __init__(self, audit_id: int, attempt: int | None = None, min_interval_s: float = PROGRESS_WRITE_INTERVAL_S):
        self.audit_id = audit_id
        self.attempt = attempt
        self.events: list[dict] = []
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.owner = threading.current_thread()
        self.min_interval_s = min_interval_s
        self.written_at: float | None = None
        self.unwritten = 0

    def __call__(self, name: str, status: str) -> None:
        with self.lock:
            self.events.append({"name": name, "status": status, "t": round(time.monotonic() - self.started, 2)})
            self.unwritten += 1
            if self.written_at is not None and time.monotonic() - self.written_at < self.min_interval_s:
                return
            self.write()

    def flush(self) -> None:
        """Write the events not written yet (the scan is over: nothing else will)."""
        with self.lock:
            if self.unwritten:
                self.write()

    def write(self) -> None:
        self.written_at = time.monotonic()
        try:
            owned(self.audit_id, self.attempt).update(progress=list(self.events))
            self.unwritten = 0
        except DATABASE_DOWN:
            # Progress is a nicety: a database restart must not end the scan. Drop the broken
            # connection so the next write (or the final store) connects again.
            log.warning("audit %s: progress not recorded (database unavailable)", self.audit_id)
            connection.close()
        if threading.current_thread() is not self.owner:
            connection.close()  # a connection sslyze's thread opened would otherwise leak


def progress_percent(audit: Audit) -> int:
    if audit.is_finished:
        return 100
    finished = {e["name"] for e in audit.progress if e.get("status") != "started"}
    done = len(finished)
    return min(95, round(100 * done / EXPECTED_STEPS))


def store_outcome(audit_id: int, outcome, attempt: int | None = None) -> Audit:
    """Save a finished scan (engine ScanOutcome) and everything derived from it. With an attempt
    number, only while that run still owns the row: a run the reaper gave up on stores nothing."""
    if outcome.error is not None:
        return fail(Audit.objects.get(pk=audit_id), outcome.error.code, outcome.error.message,
                    outcome.error.detail, duration_s=outcome.duration_s, attempt=attempt)
    with transaction.atomic():
        rows = Audit.objects.filter(pk=audit_id) if attempt is None else owned(audit_id, attempt)
        audit = rows.select_for_update().first()
        if audit is None:
            log.warning("audit %s: attempt %s lost the row before storing; result dropped", audit_id, attempt)
            return Audit.objects.get(pk=audit_id)
        return save_outcome(audit, outcome)


def save_outcome(audit: Audit, outcome) -> Audit:
    audit.facts = outcome.facts.to_dict()
    audit.raw = outcome.raw
    audit.mozilla_raw = outcome.mozilla
    audit.ip = outcome.facts.ip
    audit.service = outcome.facts.service
    audit.duration_s = round(outcome.duration_s, 2)
    audit.timings = outcome.timings
    audit.status = Audit.Status.DONE
    audit.finished_at = timezone.now()
    with transaction.atomic():
        apply_report(audit, save_fields=["facts", "raw", "mozilla_raw", "ip", "service", "duration_s", "timings",
                                         "status", "finished_at"])
        update_site_summary(audit)
    evaluate_alerts_on_commit(audit)
    return audit


def fail(audit: Audit, code: str, message: str, detail: str = "", duration_s: float | None = None,
         attempt: int | None = None) -> Audit:
    """Mark the audit failed; with an attempt number, only while that run still owns it. The site's
    summary changes in the same transaction: nobody sees a failed audit next to a stale site."""
    rows = Audit.objects.filter(pk=audit.pk) if attempt is None else owned(audit.pk, attempt)
    with transaction.atomic():
        changed = rows.update(status=Audit.Status.FAILED, finished_at=timezone.now(), error_code=code,
                              error_message=message, error_detail=detail[:4000], duration_s=duration_s,
                              turn_note="")
        audit.refresh_from_db()
        if changed:
            update_site_summary(audit)
            evaluate_alerts_on_commit(audit)
    return audit


def apply_report(audit: Audit, save_fields: list[str] = ()) -> None:
    """Derive grade, findings and recommendations from the stored inputs and save them."""
    facts = ScanFacts.from_dict(audit.facts)
    report = build_report(facts, audit.mozilla_raw)
    audit.rules_version = report.rules_version
    audit.grade = report.grade.grade
    audit.grade_ignoring_trust = report.grade.grade_ignoring_trust
    audit.score = report.grade.score
    audit.report = report.to_dict()
    audit.protocols = [p for p in facts.protocols if facts.supports(p)]
    audit.best_profile = report.best_profile or ""
    audit.save(update_fields=[*save_fields, "rules_version", "grade", "grade_ignoring_trust", "score", "report",
                              "protocols", "best_profile"])
    replace_normalised_rows(audit, facts, report)


def replace_normalised_rows(audit: Audit, facts: ScanFacts, report) -> None:
    audit.findings.all().delete()
    audit.suites.all().delete()
    audit.certificates.all().delete()
    AuditFinding.objects.bulk_create([
        AuditFinding(audit=audit, finding_id=f.id, severity=f.severity, status=f.status, title=f.title[:200],
                     explanation=f.explanation, evidence=f.evidence, reason=f.reason) for f in report.findings])
    AuditSuite.objects.bulk_create([suite_row(audit, facts, s) for s in facts.suites])
    AuditCertificate.objects.bulk_create([
        AuditCertificate(audit=audit, deployment=d, position=p, subject=c.subject, issuer=c.issuer,
                         not_before=c.not_before, not_after=c.not_after, key_type=c.key_type, key_bits=c.key_bits,
                         signature_hash=c.signature_hash or "", fingerprint_sha256=c.fingerprint_sha256,
                         san_dns=list(c.san_dns))
        for d, dep in enumerate(facts.certificates) for p, c in enumerate(dep.chain)])


def suite_row(audit: Audit, facts: ScanFacts, suite) -> AuditSuite:
    info = classify(suite)
    preference = facts.preferences.get(suite.protocol)
    # A rank only means something when the server imposes its order.
    order = list(preference.order) if preference and preference.enforced else []
    return AuditSuite(audit=audit, protocol=suite.protocol, name=suite.name, openssl_name=suite.openssl_name,
                      key_exchange=info.kx, bits=suite.key_size, kx_bits=suite.kx_bits, kx_curve=suite.kx_curve or "",
                      forward_secret=info.is_forward_secret, aead=info.is_aead, strength=strength_label(info),
                      preference=order.index(suite.name) + 1 if suite.name in order else None)


def update_site_summary(audit: Audit) -> None:
    """Denormalised 'latest' columns on the site, for lists that must not join every audit."""
    summary = done_summary(audit.site_id) if audit.status == Audit.Status.DONE else {}
    Site.objects.filter(pk=audit.site_id).update(
        last_audit=audit, last_audit_at=audit.finished_at or timezone.now(),
        last_grade=audit.grade if audit.status == Audit.Status.DONE else "",
        last_audit_status=audit.status, **summary)


def done_summary(site_id: int) -> dict:
    """Score of the site's newest done audit and of the one before (the portfolio's trend), and the
    newest one's earliest leaf expiry. Re-read, not carried over, so `regrade` keeps them right."""
    from django.db.models import Min

    done = list(Audit.objects.filter(site_id=site_id, status=Audit.Status.DONE).order_by("-finished_at", "-pk")
                .values_list("pk", "score", "facts__post_quantum__check__status")[:2])
    if not done:
        return {"latest_score": None, "previous_score": None, "cert_expires_at": None, "pq_ready": None,
                "cert_renew_at": None}
    expiry = AuditCertificate.objects.filter(audit_id=done[0][0], position=0).aggregate(first=Min("not_after"))
    return {"latest_score": done[0][1], "previous_score": done[1][1] if len(done) > 1 else None,
            "cert_expires_at": expiry["first"], "pq_ready": {OK: True, BAD: False}.get(done[0][2]),
            "cert_renew_at": renew_at(site_id, done[0][0])}


def reap_abandoned(now=None, *, lost: bool | None = None) -> dict:
    """Recover audits whose worker or broker message was lost; beat runs this every REAPER_INTERVAL_SECONDS.

    1. queued longer than AUDIT_QUEUE_TIMEOUT_SECONDS: no worker takes scans; fail it with that reason;
    2. queued, its message held by a process that is gone or silent for a lease: mark it unsent
       (orphan_held), so that
    3. queued without a message in the broker: send it (again). See resend_unsent;
    4. running, and its run is gone (abandoned_runs): re-queue it, or fail it once it was interrupted
       MAX_ATTEMPTS times.
    `lost`: whether the broker lost every message it held since the last pass (core.queue.messages_lost,
    asked here when not given). Every change is a conditional UPDATE, so two reapers, or a run finishing
    meanwhile, never collide; a duplicate delivery is harmless: the claim is one atomic UPDATE.
    """
    now = now or timezone.now()
    counts = {"requeued": 0, "failed": 0, "not_started": fail_queued_too_long(now), "orphaned": orphan_held(now),
              "resent": resend_unsent(now, messages_lost() if lost is None else lost)}
    for audit in abandoned_runs(now):
        if audit.attempts < MAX_ATTEMPTS:
            counts["requeued"] += requeue(audit, now)
        else:
            counts["failed"] += fail_abandoned(audit, *WORKER_LOST)
    return counts


def fail_queued_too_long(now) -> int:
    timeout = settings.AUDIT_QUEUE_TIMEOUT_SECONDS
    stale = Audit.objects.filter(status=Audit.Status.QUEUED).alias(since=Coalesce("queued_at", "created_at")).filter(
        since__lt=now - timedelta(seconds=timeout))
    return sum(fail_abandoned(audit, "not_started", f"No worker started this audit within {describe_seconds(timeout)}: "
                                                    "the scan workers are down or overloaded. Please retry later.",
                              status=Audit.Status.QUEUED) for audit in stale)


def resend_unsent(now, lost: bool) -> int:
    """Send the queued audits that have no message in the broker:
    1. never handed to it: the broker refused their message (sent_at empty, see keep_unsent);
    2. `lost`: the broker lost all it held (a Redis restart without persistence, a flush): every audit
       sent before now. Marked unsent first, in one UPDATE, so a broker failing again half-way through
       leaves the rest marked for the next pass;
    3. sent more than AUDIT_RESEND_AFTER_SECONDS ago while the scan queue is empty: lost in a way
       nothing announced (a web process killed between its commit and its send). With messages in
       the queue the workers are behind, not the broker: resending would only grow the backlog.
    Stops at the first refusal: the broker is down again, and the rest stay marked.
    """
    queued = Audit.objects.filter(status=Audit.Status.QUEUED)
    if lost:
        queued.filter(sent_at__lt=now).update(sent_at=None)
    due = Q(sent_at__isnull=True)
    long_ago = Q(sent_at__lt=now - timedelta(seconds=settings.AUDIT_RESEND_AFTER_SECONDS))
    if queued.filter(long_ago).exists() and queue_is_empty(AUDIT_TASK):
        due |= long_ago
    sent = 0
    for audit in queued.filter(due).only("pk", "sent_at"):
        if Audit.objects.filter(pk=audit.pk, status=Audit.Status.QUEUED, sent_at=audit.sent_at).update(
                sent_at=now) != 1:
            continue  # claimed, or sent by another reaper, since it was read
        try:
            send(audit)
        except QueueUnavailable:
            break
        sent += 1
    return sent


def abandoned_runs(now) -> list[Audit]:
    """Running audits whose run is gone:
    1. certainly: its process died in this reaper's pid space (core.runners; e.g. another worker on this
       host), or it is past the hard time limit (Celery kills a run there);
    2. by its silence: no heartbeat for AUDIT_LEASE_SECONDS (a worker lost with its machine or
       container), confirmed by a second look (still_silent).
    """
    running = Audit.objects.filter(status=Audit.Status.RUNNING).only(
        "pk", "status", "attempts", "heartbeat_at", "started_at", "runner")
    past_limit = now - timedelta(seconds=settings.AUDIT_HARD_TIME_LIMIT + 60)
    certain = [audit for audit in running
               if (audit.started_at and audit.started_at < past_limit) or runners.is_gone(audit.runner)]
    silent = running.filter(heartbeat_at__lt=now - timedelta(seconds=settings.AUDIT_LEASE_SECONDS)).exclude(
        pk__in=[audit.pk for audit in certain])
    return certain + still_silent(list(silent))


def still_silent(audits: list[Audit]) -> list[Audit]:
    """The audits whose heartbeat did not move during one more heartbeat interval. After a database
    outage longer than the lease (a restart, a failover) every heartbeat is old, and the reaper's first
    pass comes right after the database's return; a live run beats again within a heartbeat of it. So
    silence counts only while the database demonstrably answered (read before and after the wait)."""
    if not audits:
        return []
    time.sleep(settings.AUDIT_HEARTBEAT_SECONDS + settings.AUDIT_SECOND_LOOK_SLACK_SECONDS)
    beats = dict(Audit.objects.filter(pk__in=[audit.pk for audit in audits]).values_list("pk", "heartbeat_at"))
    return [audit for audit in audits if beats.get(audit.pk, audit.heartbeat_at) == audit.heartbeat_at]


def requeue(audit: Audit, now) -> int:
    """Back to the queue and sent, unless its run came back to life (or finished) since it was read."""
    if not back_to_queue(audit, now):
        return 0
    log.warning("audit %s: attempt %s lost its worker; re-queued", audit.pk, audit.attempts)
    try:
        send(audit)
    except QueueUnavailable:
        pass  # marked unsent: the next pass sends it once the broker answers
    return 1


def back_to_queue(audit: Audit, now) -> bool:
    return Audit.objects.filter(pk=audit.pk, status=Audit.Status.RUNNING, attempts=audit.attempts,
                                heartbeat_at=audit.heartbeat_at).update(
        status=Audit.Status.QUEUED, queued_at=now, sent_at=now, progress=[], runner="") == 1


def take_over(audit: Audit) -> bool:
    """For a delivery that finds its audit running: if the run's process is certainly gone (a pool
    child SIGKILLed mid-scan, whose message Celery redelivered at once), put the audit back in the queue
    for this delivery to run (True), or fail it after MAX_ATTEMPTS. A run that may be alive is left alone
    (False): a live run's message comes back too, when kombu restores unacknowledged messages after a
    broker connection closed."""
    if audit.status != Audit.Status.RUNNING or not runners.is_gone(audit.runner):
        return False
    if audit.attempts >= MAX_ATTEMPTS:
        fail_abandoned(audit, *WORKER_LOST)
        return False
    if not back_to_queue(audit, timezone.now()):
        return False
    log.warning("audit %s: attempt %s lost its process; taken over by its redelivered message", audit.pk,
                audit.attempts)
    audit.status = Audit.Status.QUEUED
    return True


def fail_abandoned(audit: Audit, code: str, message: str, status=Audit.Status.RUNNING) -> int:
    rows = Audit.objects.filter(pk=audit.pk, status=status, attempts=audit.attempts)
    with transaction.atomic():
        if rows.update(status=Audit.Status.FAILED, finished_at=timezone.now(), error_code=code,
                       error_message=message) != 1:
            return 0
        audit.refresh_from_db()
        update_site_summary(audit)
        evaluate_alerts_on_commit(audit)
    return 1


def describe_seconds(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"
