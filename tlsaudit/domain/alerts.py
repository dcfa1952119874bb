"""Alert events: what changed between a site's previous audit and its latest one. Pure.

A summary is a plain dict built from an audit (see tlsaudit/alerts/services.summarize):

    {"audit_id": 7, "site_id": 3, "status": "done", "grade": "B", "score": 81,
     "caps": {"cap.tls10_11": "TLS 1.0 or TLS 1.1 is supported"},
     "findings": {"vuln.heartbleed": {"severity": "critical", "title": "Heartbleed"}},   # failing only
     "cert": {"fingerprint": "ab12…", "not_after": datetime, "subject": "CN=…"} or None,
     "consecutive_failures": 0, "failing_since": None}

Every event carries a dedupe key naming its occurrence (the site, the kind, and what makes
this one distinct: the audit that introduced it, the certificate and threshold, ...). The
store keeps keys unique per organization, so an event fires once, never every night.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

GRADE_DROPPED = "grade_dropped"
GRADE_RECOVERED = "grade_recovered"
NEW_FINDING = "new_finding"
CERT_CHANGED = "certificate_changed"
CERT_EXPIRING = "certificate_expiring"
AUDIT_FAILING = "audit_failing"

KIND_CHOICES = [
    (GRADE_DROPPED, "Grade dropped"),
    (GRADE_RECOVERED, "Grade recovered"),
    (NEW_FINDING, "New critical or high finding"),
    (CERT_CHANGED, "Certificate changed"),
    (CERT_EXPIRING, "Certificate expires in 30, 14, 7 or 1 days"),
    (AUDIT_FAILING, "Audit failing two runs in a row"),
]
KINDS = tuple(kind for kind, _ in KIND_CHOICES)

EXPIRY_THRESHOLDS = (30, 14, 7, 1)      # days; each fires once per certificate
ALERT_SEVERITIES = ("critical", "high")
FAILURES_BEFORE_ALERT = 2
# Best first. T (untrusted) and M (name mismatch) fail the site as F does.
GRADE_ORDER = ("A+", "A", "A-", "B", "C", "D", "E", "F")
FAILING_GRADES = ("F", "T", "M")


@dataclass(frozen=True)
class Event:
    kind: str
    key: str                # unique per organization: the occurrence
    title: str              # one line, used as the email subject
    data: dict = field(default_factory=dict)


def detect(previous: dict | None, current: dict, now: datetime) -> list[Event]:
    """Events for `current`, compared with the site's previous successful audit (or None)."""
    if current["status"] != "done":
        return failing_events(current)
    events = expiry_events(current, now)
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
    old, new = previous.get("cert"), current.get("cert")
    if not old or not new or old["fingerprint"] == new["fingerprint"]:
        return []
    return [Event(CERT_CHANGED, f"site:{current['site_id']}:{CERT_CHANGED}:{new['fingerprint']}",
                  f"Certificate changed (now valid until {new['not_after']:%Y-%m-%d})",
                  {"old": _cert_data(old), "new": _cert_data(new)})]


def expiry_events(current: dict, now: datetime) -> list[Event]:
    """The tightest threshold reached: 100 days left then suddenly 5 alerts once, for 7."""
    cert = current.get("cert")
    if not cert:
        return []
    days_left = (cert["not_after"] - now).total_seconds() / 86400
    reached = [t for t in EXPIRY_THRESHOLDS if days_left <= t]
    if not reached:
        return []
    threshold = min(reached)
    when = "has expired" if days_left < 0 else f"expires in {max(0, int(days_left))} days"
    return [Event(CERT_EXPIRING, f"site:{current['site_id']}:{CERT_EXPIRING}:{cert['fingerprint']}:{threshold}",
                  f"Certificate {when} ({cert['not_after']:%Y-%m-%d})",
                  {"threshold_days": threshold, "days_left": int(days_left), **_cert_data(cert)})]


def failing_events(current: dict) -> list[Event]:
    if current.get("consecutive_failures", 0) < FAILURES_BEFORE_ALERT:
        return []
    since, error = current["failing_since"], current.get("error", "")
    return [Event(AUDIT_FAILING, f"site:{current['site_id']}:{AUDIT_FAILING}:since:{since}",
                  f"Audit failed {current['consecutive_failures']} times in a row" + (f": {error}" if error else ""),
                  {"failures": current["consecutive_failures"], "failing_since": since,
                   "error": error})]


def _cert_data(cert: dict) -> dict:
    return {"fingerprint": cert["fingerprint"], "not_after": cert["not_after"].isoformat(),
            "subject": cert.get("subject", "")}
