"""Alert events: what changed between a site's previous audit and its latest one. Pure.

A summary is a plain dict built from an audit (see tlsaudit/alerts/services.summarize):

    {"audit_id": 7, "site_id": 3, "status": "done", "grade": "B", "score": 81,
     "caps": {"cap.tls10_11": "TLS 1.0 or TLS 1.1 is supported"},
     "findings": {"vuln.heartbleed": {"severity": "critical", "title": "Heartbleed"}},   # failing only
     "cert": {"fingerprint": "ab12…", "not_before": datetime, "not_after": datetime, "subject": "CN=…",
              "issuer": "CN=R11,O=Let's Encrypt,C=US", "names": ["shop.example.com"],
              "ari_end": datetime or None} or None,
     "consecutive_failures": 0, "failing_since": None, "failing_for_s": 0}

Every event carries a dedupe key naming its occurrence (the site, the kind, and what makes
this one distinct: the audit that introduced it, the certificate and threshold, ...). The
store keeps keys unique per organization, so an event fires once, never every night.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

GRADE_DROPPED = "grade_dropped"
GRADE_RECOVERED = "grade_recovered"
NEW_FINDING = "new_finding"
CERT_CHANGED = "certificate_changed"
CERT_EXPIRING = "certificate_expiring"
AUDIT_FAILING = "audit_failing"
RENEWAL_MOVED = "renewal_window_moved"

KIND_CHOICES = [
    (GRADE_DROPPED, "Grade dropped"),
    (GRADE_RECOVERED, "Grade recovered"),
    (NEW_FINDING, "New critical or high finding"),
    (CERT_CHANGED, "Certificate changed"),
    (CERT_EXPIRING, "Certificate not renewed in time, or expired"),
    (AUDIT_FAILING, "Audit failing two runs in a row"),
    (RENEWAL_MOVED, "The CA moved the renewal window earlier (ARI)"),
]
KINDS = tuple(kind for kind, _ in KIND_CHOICES)

# Expiry by lifetime, not by fixed days (a 6-day certificate is always "7 days from expiry"). Each trigger
# fires once per certificate; an organization sets the share and the backstop (AlertSettings).
RENEWAL_SHARE_PCT = 67          # of the lifetime used: two thirds, where certbot and most ACME clients renew
RENEWAL_SHARE = RENEWAL_SHARE_PCT / 100
BACKSTOP_DAYS = 7                # days left, whatever the lifetime ...
BACKSTOP_MIN_LIFETIME_DAYS = 30  # ... for certificates longer than this (a 6-day one lives inside any backstop)
# A client renewing exactly at the share point, on a 12-hourly timer, is still healthy when a nightly audit
# sees the old certificate just past it: the share trigger waits this much longer (a day, 1/12 of short lives).
MAX_RENEWAL_GRACE = timedelta(days=1)
RENEWAL_GRACE_SHARE = 1 / 12
ALERT_SEVERITIES = ("critical", "high")
FAILURES_BEFORE_ALERT = 2
# ... spanning at least this long from the first failure's start to the latest's: two manual audits a
# minute apart against a server being restarted are one outage seen twice, not a failing site.
FAILING_MIN_SPAN = timedelta(hours=1)
# Best first. T (untrusted) and M (name mismatch) fail the site as F does.
GRADE_ORDER = ("A+", "A", "A-", "B", "C", "D", "E", "F")
FAILING_GRADES = ("F", "T", "M")


@dataclass(frozen=True)
class Event:
    kind: str
    key: str                # unique per organization: the occurrence
    title: str              # one line, used as the email subject
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExpiryPolicy:
    """When a served certificate is overdue for renewal (an organization's AlertSettings)."""
    renewal_share: float = RENEWAL_SHARE
    backstop_days: int = BACKSTOP_DAYS     # 0: no backstop

    def renewal_due(self, not_before: datetime, not_after: datetime) -> datetime:
        lifetime = not_after - not_before
        return not_before + lifetime * self.renewal_share + min(MAX_RENEWAL_GRACE, lifetime * RENEWAL_GRACE_SHARE)


def detect(previous: dict | None, current: dict, now: datetime, policy: ExpiryPolicy = ExpiryPolicy()) -> list[Event]:
    """Events for `current`, compared with the site's previous successful audit (or None)."""
    if current["status"] != "done":
        return failing_events(current)
    events = expiry_events(current, now, policy)
    if previous is None or previous["status"] != "done":
        return events
    return [*grade_events(previous, current), *finding_events(previous, current),
            *certificate_events(previous, current), *events]


def grade_rank(grade: str) -> int:
    return len(GRADE_ORDER) - 1 if grade in FAILING_GRADES else GRADE_ORDER.index(grade)


def grade_events(previous: dict, current: dict) -> list[Event]:
    before, after = previous["grade"], current["grade"]
    if not before or not after or grade_rank(before) == grade_rank(after):
        return []
    site, audit = current["site_id"], current["audit_id"]
    if grade_rank(after) > grade_rank(before):
        new_caps = {k: v for k, v in current["caps"].items() if k not in previous["caps"]}
        cause = f": {next(iter(new_caps.values()))}" if new_caps else ""
        return [Event(GRADE_DROPPED, f"site:{site}:{GRADE_DROPPED}:audit:{audit}",
                      f"Grade dropped from {before} to {after}{cause}",
                      {"from": before, "to": after, "caps": new_caps})]
    return [Event(GRADE_RECOVERED, f"site:{site}:{GRADE_RECOVERED}:audit:{audit}",
                  f"Grade recovered from {before} to {after}", {"from": before, "to": after})]


def finding_events(previous: dict, current: dict) -> list[Event]:
    site, audit = current["site_id"], current["audit_id"]
    return [Event(NEW_FINDING, f"site:{site}:{NEW_FINDING}:{fid}:audit:{audit}",
                  f"New {f['severity']} finding: {f['title']}",
                  {"finding_id": fid, "severity": f["severity"], "title": f["title"]})
            for fid, f in sorted(current["findings"].items())
            if f["severity"] in ALERT_SEVERITIES and fid not in previous["findings"]]


def certificate_events(previous: dict, current: dict) -> list[Event]:
    """A certificate that changed other than by a routine renewal: a renewal every few days (6-day
    certificates) is the automation working, so only a new CA, other names or an older certificate alert."""
    old, new = previous.get("cert"), current.get("cert")
    if not old or not new or old["fingerprint"] == new["fingerprint"]:
        return []
    changes = change_reasons(old, new)
    if not changes:
        return []
    return [Event(CERT_CHANGED, f"site:{current['site_id']}:{CERT_CHANGED}:{new['fingerprint']}",
                  f"Certificate changed: {'; '.join(changes)} (now valid until {new['not_after']:%Y-%m-%d})",
                  {"old": _cert_data(old), "new": _cert_data(new), "changes": changes})]


def change_reasons(old: dict, new: dict) -> list[str]:
    """Why a replaced certificate is not a routine renewal; [] when it is one. The issuer is compared by
    organization: Let's Encrypt picks one of several intermediates (R10-R14, E5-E9) per issuance."""
    reasons = []
    if issuer_org(old) != issuer_org(new):
        reasons.append(f"issued by {issuer_org(new) or 'another CA'} instead of {issuer_org(old) or 'the previous CA'}")
    if "names" in old and "names" in new and set(old["names"]) != set(new["names"]):
        reasons.append("it covers other names")
    if old.get("not_before") and new.get("not_before") and new["not_before"] < old["not_before"]:
        reasons.append("the new certificate is older than the one it replaced")
    return reasons


def issuer_org(cert: dict) -> str:
    return organization_of(cert.get("issuer", ""))


def organization_of(issuer: str) -> str:
    """The O= of an RFC 4514 name, else the whole name."""
    for part in re.split(r"(?<!\\),", issuer):   # RFC 4514: a comma inside a value is escaped
        key, _, value = part.strip().partition("=")
        if key.strip().upper() in ("O", "ORGANIZATIONNAME"):
            return re.sub(r"\\(.)", r"\1", value.strip())
    return issuer


def expiry_events(current: dict, now: datetime, policy: ExpiryPolicy = ExpiryPolicy()) -> list[Event]:
    """The most urgent trigger reached by the served certificate, once per certificate and trigger:
    expired; the backstop (few days left of a long certificate); past its CA's ARI window; most of its
    lifetime used. A certificate renewed in time is replaced before any of them, so raises nothing."""
    cert = current.get("cert")
    if not cert:
        return []
    trigger = expiry_trigger(cert, now, policy)
    if trigger is None:
        return []
    days_left = (cert["not_after"] - now).total_seconds() / 86400
    lifetime_days = lifetime_of(cert).total_seconds() / 86400
    used = 1 - days_left / lifetime_days if lifetime_days > 0 else 1.0
    return [Event(CERT_EXPIRING, f"site:{current['site_id']}:{CERT_EXPIRING}:{cert['fingerprint']}:{trigger}",
                  expiry_title(trigger, cert, days_left, used),
                  {"trigger": trigger, "days_left": int(days_left), "lifetime_days": round(lifetime_days, 1),
                   "used_pct": round(100 * min(used, 1.0)), **_cert_data(cert)})]


def lifetime_of(cert: dict) -> timedelta:
    return cert["not_after"] - (cert.get("not_before") or cert["not_after"])


def expiry_trigger(cert: dict, now: datetime, policy: ExpiryPolicy) -> str | None:
    """"expired", "backstop", "ari" or "lifetime": the most urgent one reached, or None."""
    not_after, not_before = cert["not_after"], cert.get("not_before")
    if now >= not_after:
        return "expired"
    lifetime = lifetime_of(cert)
    long_lived = lifetime > timedelta(days=BACKSTOP_MIN_LIFETIME_DAYS)
    # A backstop as long as the renewal window itself would fire at every healthy renewal: it must end sooner.
    backstop = min(timedelta(days=policy.backstop_days), lifetime * (1 - policy.renewal_share) / 2)
    if policy.backstop_days and long_lived and not_after - now <= backstop:
        return "backstop"
    if cert.get("ari_end") and now > cert["ari_end"]:
        return "ari"
    if not_before and now >= policy.renewal_due(not_before, not_after):
        return "lifetime"
    return None


def expiry_title(trigger: str, cert: dict, days_left: float, used: float) -> str:
    until = f"{cert['not_after']:%Y-%m-%d}"
    if trigger == "expired":
        return f"Certificate has expired ({until})"
    left = "expires today" if days_left < 1 else f"expires in {int(days_left)} day{'s' if int(days_left) != 1 else ''}"
    if trigger == "ari":
        return f"Certificate not renewed within its CA's renewal window: it {left} ({until})"
    if trigger == "lifetime":
        return f"Certificate not renewed: {round(100 * used)}% of its lifetime used, it {left} ({until})"
    return f"Certificate {left} ({until})"


def renewal_moved_events(site_id: int, fingerprint: str, ca_name: str, before, after) -> list[Event]:
    """The CA now wants the certificate renewed sooner (RFC 9773): usually ahead of a revocation. `before`
    and `after` are tlsaudit.domain.ari.Window; one event per certificate and new window end."""
    explained = f" ({after.explanation_url})" if after.explanation_url else ""
    return [Event(RENEWAL_MOVED, f"site:{site_id}:{RENEWAL_MOVED}:{fingerprint}:{after.end:%Y%m%dT%H%M%SZ}",
                  f"{ca_name} asks for this certificate to be renewed by {after.end:%Y-%m-%d %H:%M} UTC, earlier "
                  f"than before: usually ahead of a revocation{explained}",
                  {"fingerprint": fingerprint, "ca": ca_name, "explanation_url": after.explanation_url,
                   "before": {"start": before.start.isoformat(), "end": before.end.isoformat()},
                   "after": {"start": after.start.isoformat(), "end": after.end.isoformat()}})]


def failing_events(current: dict) -> list[Event]:
    if current.get("consecutive_failures", 0) < FAILURES_BEFORE_ALERT:
        return []
    if current.get("failing_for_s", 0) < FAILING_MIN_SPAN.total_seconds():
        return []
    since, error = current["failing_since"], current.get("error", "")
    return [Event(AUDIT_FAILING, f"site:{current['site_id']}:{AUDIT_FAILING}:since:{since}",
                  f"Audit failed {current['consecutive_failures']} times in a row" + (f": {error}" if error else ""),
                  {"failures": current["consecutive_failures"], "failing_since": since,
                   "error": error})]


def _cert_data(cert: dict) -> dict:
    return {"fingerprint": cert["fingerprint"], "not_after": cert["not_after"].isoformat(),
            "subject": cert.get("subject", ""), "issuer": cert.get("issuer", "")}
