"""Renewal history and forecast. Pure.

A site's history is the leaves its audits saw, in order: each change is a renewal, with how many days before
the old certificate's expiry it was replaced (its margin). A margin that shrinks renewal after renewal is an
automation that is failing; short lifetimes from an ACME CA, rotated at a steady interval, are an automation
that works. A certificate renewed by hand meets the CA/Browser Forum's shrinking maximum lifetimes
(ballot SC-081v3): its next renewal is flagged with the date and the cap it will get. A portfolio's
forecast counts the renewals due next week and the overdue ones: due at the start of the CA's ARI window
when it published one, else at the share of the lifetime where ACME clients renew.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from tlsaudit.domain.alerts import RENEWAL_SHARE, ExpiryPolicy

# SC-081v3: the longest a publicly trusted certificate issued from each date may live.
LIFETIME_CAPS = ((date(2026, 3, 15), 200), (date(2027, 3, 15), 100), (date(2029, 3, 15), 47))
ACME_ORGS = ("Let's Encrypt", "Google Trust Services", "Google Trust Services LLC", "ZeroSSL", "Buypass AS-983163327",
             "SSL Corporation")
SHORT_LIFETIME_DAYS = 100
STEADY_TOLERANCE = 0.2       # renewal intervals within 20 % of their median: a timer, not a person


@dataclass(frozen=True)
class Seen:
    """One audit's leaf."""
    at: datetime
    fingerprint: str
    not_before: datetime
    not_after: datetime
    issuer_org: str


@dataclass(frozen=True)
class Change:
    fingerprint: str
    issuer_org: str
    not_before: datetime
    not_after: datetime
    first_seen: datetime
    replaced_at: datetime | None = None      # when an audit first saw its successor

    @property
    def lifetime_days(self) -> float:
        return round((self.not_after - self.not_before).total_seconds() / 86400, 1)

    @property
    def margin_days(self) -> float | None:
        """Days left on it when it was replaced (negative: it had expired)."""
        if self.replaced_at is None:
            return None
        return round((self.not_after - self.replaced_at).total_seconds() / 86400, 1)


@dataclass(frozen=True)
class History:
    changes: list[Change]
    automated: bool
    evidence: list[str] = field(default_factory=list)    # why we think a client renews it (or not)
    flags: list[str] = field(default_factory=list)       # what needs the owner's attention


def changes_of(seen: list[Seen]) -> list[Change]:
    """The distinct leaves in the order audits first saw them; a leaf seen again later (a rollback) is a change too."""
    changes: list[Change] = []
    for s in sorted(seen, key=lambda s: s.at):
        if changes and changes[-1].fingerprint == s.fingerprint:
            continue
        if changes:
            changes[-1] = Change(**{**changes[-1].__dict__, "replaced_at": s.at})
        changes.append(Change(s.fingerprint, s.issuer_org, s.not_before, s.not_after, s.at))
    return changes


def automation_evidence(changes: list[Change]) -> tuple[bool, list[str]]:
    if not changes:
        return False, []
    current = changes[-1]
    evidence = []
    if current.issuer_org in ACME_ORGS:
        evidence.append(f"issued by {current.issuer_org}, an ACME CA")
    if current.lifetime_days <= SHORT_LIFETIME_DAYS:
        evidence.append(f"a {current.lifetime_days:g}-day lifetime")
    intervals = [(b.not_before - a.not_before).total_seconds() / 86400 for a, b in zip(changes, changes[1:])]
    if len(intervals) >= 2:
        middle = statistics.median(intervals)
        if middle > 0 and all(abs(i - middle) <= STEADY_TOLERANCE * middle for i in intervals):
            evidence.append(f"renewed every {middle:.0f} days, {len(intervals)} times in a row")
    steady = any(e.startswith("renewed every") for e in evidence)
    return (steady or len(evidence) >= 2), evidence


def shrinking_margin(changes: list[Change]) -> str:
    """'' unless the last three renewals each left clearly less time than the one before (a day, or 5 % of the
    lifetime, less each time), the last under a quarter of the lifetime: renewal slipping later each time,
    the shape of a failing automation. certbot's own third, seen up to a day late by a nightly audit, is not."""
    margins = [(c.margin_days, c.lifetime_days) for c in changes if c.margin_days is not None]
    if len(margins) < 3:
        return ""
    last3 = margins[-3:]
    drops = all(a[0] - b[0] > max(1.0, 0.05 * b[1]) for a, b in zip(last3, last3[1:]))
    if drops and last3[-1][0] < last3[-1][1] / 4:
        return (f"renewal margin shrinking: {', '.join(f'{m:g}' for m, _ in last3)} days before expiry at the last "
                "three renewals (a failing automation)")
    return ""


def cap_for(issued: date) -> int | None:
    caps = [days for since, days in LIFETIME_CAPS if issued >= since]
    return caps[-1] if caps else None


def cap_flags(current: Change, automated: bool, share: float = RENEWAL_SHARE) -> list[str]:
    """For a certificate not shown to renew automatically: the cap its next one will get when that is shorter
    than its lifetime, and the next date a cap falls below it."""
    if automated:
        return []
    due = renewal_due(current.not_before, current.not_after, share=share).date()
    cap = cap_for(due)
    words = []
    if cap is not None and current.lifetime_days > cap:
        words.append(f"not shown to renew automatically: the next certificate, due {due:%Y-%m-%d}, can live at most "
                     f"{cap} days, not {current.lifetime_days:g}")
    later = [(since, days) for since, days in LIFETIME_CAPS if since > due and days < min(current.lifetime_days,
                                                                                          cap or current.lifetime_days)]
    if later:
        since, days = later[0]
        words.append(f"not shown to renew automatically: certificates issued from {since:%Y-%m-%d} live at most "
                     f"{days} days; automate renewal (an ACME client) before then")
    return words


def history(seen: list[Seen], share: float = RENEWAL_SHARE) -> History:
    changes = changes_of(seen)
    automated, evidence = automation_evidence(changes)
    flags = [f for f in [shrinking_margin(changes)] if f]
    if changes:
        flags += cap_flags(changes[-1], automated, share)
    return History(changes, automated, evidence, flags)


def renewal_due(not_before: datetime, not_after: datetime, ari_end: datetime | None = None,
                share: float = RENEWAL_SHARE) -> datetime:
    """When the served certificate is overdue for renewal, as the expiry alerts judge it: its CA's ARI window
    end, else the share of its lifetime plus the grace (tlsaudit/domain/alerts.py)."""
    if ari_end is not None:
        return ari_end
    return ExpiryPolicy(renewal_share=share).renewal_due(not_before, not_after)


@dataclass(frozen=True)
class Forecast:
    overdue: int
    next_week: int
    next_month: int

    def sentence(self) -> str:
        def renewals(n: int) -> str:
            return f"{n} renewal{'s' if n != 1 else ''}"
        return f"{renewals(self.next_week)} due next week, {self.overdue} overdue"


def forecast_bounds(now: datetime) -> tuple[datetime, datetime]:
    return now + timedelta(days=7), now + timedelta(days=30)
