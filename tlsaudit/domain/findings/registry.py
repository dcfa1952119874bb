"""The registry: what a finding is, how a rule registers, and how outcomes become sorted findings.

A rule is a small pure function of a `Context` that returns an `Outcome` (or None when the check
does not apply to this server, e.g. the RSA exponent rule on an ECDSA-only site). `@rule(...)`
files it in `RULES` under its id with the texts a site owner reads; `derive_findings` runs them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from functools import wraps

from tlsaudit.domain.ciphers import SuiteInfo, classify
from tlsaudit.domain.scanfacts import PROTOCOLS, ScanFacts

SEVERITIES = ("critical", "high", "medium", "low", "info")
STATUSES = ("fail", "not_tested", "info", "pass")


@dataclass(frozen=True)
class Finding:
    id: str              # stable, e.g. "vuln.heartbleed"
    severity: str        # how much it matters when it fails: critical / high / medium / low / info
    status: str          # fail / not_tested / info / pass
    title: str
    explanation: str     # what it is and why it matters, for a site owner
    evidence: str = ""   # the concrete data behind the verdict
    reason: str = ""     # why it was not tested

    @property
    def category(self) -> str:
        return self.id.split(".", 1)[0]

    def to_dict(self) -> dict:
        return {**asdict(self), "category": self.category}


@dataclass(frozen=True)
class Outcome:
    status: str
    evidence: str = ""
    reason: str = ""
    severity: str | None = None   # overrides the rule's severity (e.g. ROBOT weak vs strong oracle)
    title: str | None = None      # overrides the rule's title for this outcome


def fail(evidence: str, severity: str | None = None, title: str | None = None) -> Outcome:
    return Outcome("fail", evidence=evidence, severity=severity, title=title)


def ok(evidence: str = "") -> Outcome:
    return Outcome("pass", evidence=evidence)


def info(evidence: str, severity: str | None = None, title: str | None = None) -> Outcome:
    return Outcome("info", evidence=evidence, severity=severity, title=title)


def untested(reason: str) -> Outcome:
    return Outcome("not_tested", reason=reason or "not tested")


@dataclass(frozen=True)
class Context:
    facts: ScanFacts
    now: datetime
    suite_infos: tuple[SuiteInfo, ...]   # every accepted suite, classified once

    def infos(self, protocols: Iterable[str] = PROTOCOLS) -> list[SuiteInfo]:
        wanted = set(protocols)
        return [i for i in self.suite_infos if i.protocol in wanted]


# How a rule reaches the part of the facts its check judges: over(ctx, check) -> the rule's outcome.
Over = Callable[[Context, Callable], Outcome | None]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str          # shown when it fails / is informative
    ok_title: str       # shown when it passes
    explanation: str
    check: Callable[[Context], Outcome | None]


RULES: dict[str, Rule] = {}


def rule(id: str, severity: str, title: str, ok_title: str, explanation: str, over: Over | None = None):
    """Register the decorated check under `id`. A check of `ctx` as a whole needs no `over`; one of a
    part of the facts names how to reach that part: `over(ctx, check)` runs the check on it (e.g. once
    per certificate deployment) and answers for the rule."""
    def register(fn):
        if id in RULES:
            raise ValueError(f"duplicate rule id {id}")
        RULES[id] = Rule(id, severity, title, ok_title, explanation, fn if over is None else _checked_over(over, fn))
        return fn
    return register


def _checked_over(over: Over, fn: Callable) -> Callable[[Context], Outcome | None]:
    @wraps(fn)
    def check(ctx: Context) -> Outcome | None:
        return over(ctx, fn)
    return check


def derive_findings(facts: ScanFacts, now: datetime | None = None) -> list[Finding]:
    """Every applicable check as a Finding: failures first (by severity), then not tested, info, passes.

    `now` decides expiry; like the grader it defaults to the scan's start, so re-deriving the
    findings of a stored audit gives the same answer. The sort key ends with the unique id, so
    the order in which the category modules registered their rules never shows.
    """
    ctx = Context(facts, aware(now or facts.started_at), tuple(classify(s) for s in facts.suites))
    findings = [f for r in RULES.values() if (f := run_rule(r, ctx)) is not None]
    return sorted(findings, key=_sort_key)


def run_rule(r: Rule, ctx: Context) -> Finding | None:
    outcome = r.check(ctx)
    if outcome is None:
        return None
    if outcome.status == "not_tested":
        title = f"Not tested: {r.ok_title}"
    else:
        title = outcome.title or (r.ok_title if outcome.status == "pass" else r.title)
    return Finding(id=r.id, severity=outcome.severity or r.severity, status=outcome.status, title=title,
                   explanation=r.explanation, evidence=outcome.evidence, reason=outcome.reason)


def _sort_key(f: Finding) -> tuple:
    return (STATUSES.index(f.status), SEVERITIES.index(f.severity), f.id)


def aware(dt: datetime) -> datetime:
    """Stored scans may carry naive datetimes; they are UTC."""
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
