"""The pure alert rules: what changed between two audit summaries, each with its dedupe key."""

from datetime import datetime, timedelta, timezone

import pytest

from tlsaudit.domain import alerts

NOW = datetime(2026, 3, 2, 6, 0, tzinfo=timezone.utc)
CAP = {"cap.tls10_11": "TLS 1.0 or TLS 1.1 is supported"}
HEARTBLEED = {"vuln.heartbleed": {"severity": "critical", "title": "Heartbleed"}}
ROBOT = {"vuln.robot": {"severity": "high", "title": "ROBOT"}}
HSTS_SHORT = {"hsts.short": {"severity": "medium", "title": "HSTS max-age is short"}}


def cert(fingerprint="aa11", days=200):
    return {"fingerprint": fingerprint, "not_after": NOW + timedelta(days=days), "subject": "CN=shop.example.com"}


def summary(audit_id=2, status="done", grade="A", caps=None, findings=None, cert_=None, failures=0, since=None,
            error=""):
    return {"audit_id": audit_id, "site_id": 9, "status": status, "grade": grade, "score": 90, "error": error,
            "caps": caps or {}, "findings": findings or {}, "cert": cert() if cert_ is None else cert_,
            "consecutive_failures": failures, "failing_since": since}


CASES = [
    # (story, previous, current, [(kind, dedupe key)])
    ("nothing changed", summary(1), summary(2), []),
    ("first audit of a site: nothing to compare", None, summary(2, findings=HEARTBLEED), []),
    ("grade dropped because of a cap", summary(1, grade="A"), summary(2, grade="B", caps=CAP),
     [("grade_dropped", "site:9:grade_dropped:audit:2")]),
    ("grade recovered", summary(1, grade="B", caps=CAP), summary(2, grade="A"),
     [("grade_recovered", "site:9:grade_recovered:audit:2")]),
    ("F to T is no drop: both fail the site", summary(1, grade="F"), summary(2, grade="T"), []),
    ("A to T is a drop", summary(1, grade="A"), summary(2, grade="T"),
     [("grade_dropped", "site:9:grade_dropped:audit:2")]),
    ("a new critical finding", summary(1), summary(2, findings=HEARTBLEED),
     [("new_finding", "site:9:new_finding:vuln.heartbleed:audit:2")]),
    ("a new high finding, a new medium one is ignored", summary(1), summary(2, findings={**ROBOT, **HSTS_SHORT}),
     [("new_finding", "site:9:new_finding:vuln.robot:audit:2")]),
    ("a finding still failing is not new", summary(1, findings=HEARTBLEED), summary(2, findings=HEARTBLEED), []),
    ("certificate replaced", summary(1, cert_=cert("aa11")), summary(2, cert_=cert("bb22")),
     [("certificate_changed", "site:9:certificate_changed:bb22")]),
    ("no certificate before: no change to report", summary(1, cert_=False), summary(2), []),
    ("31 days left: nothing yet", summary(1), summary(2, cert_=cert(days=31)), []),
    ("30 days left", summary(1), summary(2, cert_=cert(days=30)),
     [("certificate_expiring", "site:9:certificate_expiring:aa11:30")]),
    ("14 days left", summary(1), summary(2, cert_=cert(days=13.5)),
     [("certificate_expiring", "site:9:certificate_expiring:aa11:14")]),
    ("from 100 days straight to 5: only the 7-day alert", summary(1), summary(2, cert_=cert(days=5)),
     [("certificate_expiring", "site:9:certificate_expiring:aa11:7")]),
    ("expired: the 1-day alert", summary(1), summary(2, cert_=cert(days=-2)),
     [("certificate_expiring", "site:9:certificate_expiring:aa11:1")]),
    ("one failed audit is not an alert yet", summary(1), summary(2, status="failed", failures=1, since=2), []),
    ("two failures in a row", summary(1), summary(3, status="failed", failures=2, since=2, error="refused"),
     [("audit_failing", "site:9:audit_failing:since:2")]),
    ("a third failure has the same occurrence", summary(1), summary(4, status="failed", failures=3, since=2),
     [("audit_failing", "site:9:audit_failing:since:2")]),
    ("grade drop, new finding and new cert at once",
     summary(1, grade="A", cert_=cert("aa11")), summary(2, grade="F", findings=HEARTBLEED, cert_=cert("cc33")),
     [("grade_dropped", "site:9:grade_dropped:audit:2"),
      ("new_finding", "site:9:new_finding:vuln.heartbleed:audit:2"),
      ("certificate_changed", "site:9:certificate_changed:cc33")]),
]


@pytest.mark.parametrize("story,previous,current,expected", CASES, ids=[c[0] for c in CASES])
def test_it_detects(story, previous, current, expected):
    events = alerts.detect(previous, current, NOW)
    assert [(e.kind, e.key) for e in events] == expected


def test_it_names_the_cap_that_dropped_the_grade():
    [event] = alerts.detect(summary(1, grade="A"), summary(2, grade="B", caps=CAP), NOW)
    assert event.title == "Grade dropped from A to B: TLS 1.0 or TLS 1.1 is supported"
    assert event.data == {"from": "A", "to": "B", "caps": CAP}


def test_the_failure_streak_event_says_why():
    [event] = alerts.detect(None, summary(3, status="failed", failures=2, since=2, error="Port 443 refused"), NOW)
    assert event.title == "Audit failed 2 times in a row: Port 443 refused"
    assert event.data["failing_since"] == 2


def test_expiry_events_say_days_left_and_the_date():
    [event] = alerts.expiry_events(summary(cert_=cert(days=6.5)), NOW)
    assert event.title == "Certificate expires in 6 days (2026-03-08)"
    assert (event.data["threshold_days"], event.data["fingerprint"]) == (7, "aa11")


def test_grade_rank_orders_grades_best_first():
    assert [alerts.grade_rank(g) for g in ("A+", "A", "B", "F", "T", "M")] == [0, 1, 3, 7, 7, 7]
