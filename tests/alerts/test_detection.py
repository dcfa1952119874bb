"""The pure alert rules: what changed between two audit summaries, each with its dedupe key."""

from datetime import datetime, timedelta, timezone

import pytest

from tlsaudit.domain import alerts

NOW = datetime(2026, 3, 2, 6, 0, tzinfo=timezone.utc)
CAP = {"cap.tls10_11": "TLS 1.0 or TLS 1.1 is supported"}
HEARTBLEED = {"vuln.heartbleed": {"severity": "critical", "title": "Heartbleed"}}
ROBOT = {"vuln.robot": {"severity": "high", "title": "ROBOT"}}
HSTS_SHORT = {"hsts.short": {"severity": "medium", "title": "HSTS max-age is short"}}


LE = "CN=R11,O=Let's Encrypt,C=US"


def cert(fingerprint="aa11", days=200, lifetime=365, issuer=LE, names=("shop.example.com",), ari_end=None):
    """A leaf with `days` left of `lifetime` days."""
    not_after = NOW + timedelta(days=days)
    return {"fingerprint": fingerprint, "not_before": not_after - timedelta(days=lifetime), "not_after": not_after,
            "subject": "CN=shop.example.com", "issuer": issuer, "names": list(names), "ari_end": ari_end}


def summary(audit_id=2, status="done", grade="A", caps=None, findings=None, cert_=None, failures=0, since=None,
            error="", failing_for=timedelta(days=1)):
    return {"audit_id": audit_id, "site_id": 9, "status": status, "grade": grade, "score": 90, "error": error,
            "caps": caps or {}, "findings": findings or {}, "cert": cert() if cert_ is None else cert_,
            "consecutive_failures": failures, "failing_since": since,
            "failing_for_s": failing_for.total_seconds() if failures else 0}


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
    ("certificate renewed: same CA, same names, newer", summary(1, cert_=cert("aa11", days=20, lifetime=90)),
     summary(2, cert_=cert("bb22", days=90, lifetime=90)), []),
    ("renewed through another Let's Encrypt intermediate: still a renewal",
     summary(1, cert_=cert("aa11", days=20, lifetime=90)),
     summary(2, cert_=cert("bb22", days=90, lifetime=90, issuer="CN=E7,O=Let's Encrypt,C=US")), []),
    ("replaced by another CA's certificate", summary(1, cert_=cert("aa11")),
     summary(2, cert_=cert("bb22", issuer="CN=WE1,O=Google Trust Services,C=US")),
     [("certificate_changed", "site:9:certificate_changed:bb22")]),
    ("replaced by one for other names", summary(1, cert_=cert("aa11")),
     summary(2, cert_=cert("bb22", names=("www.example.com",))),
     [("certificate_changed", "site:9:certificate_changed:bb22")]),
    ("no certificate before: no change to report", summary(1, cert_=False), summary(2), []),
    ("a year-long certificate with 200 days left: nothing", summary(1), summary(2), []),
    ("a 90-day certificate just past two thirds (certbot's point): within the day's grace",
     summary(1), summary(2, cert_=cert(days=29.5, lifetime=90)), []),
    ("a 90-day certificate not renewed a day and a half past two thirds", summary(1),
     summary(2, cert_=cert(days=28, lifetime=90)), [("certificate_expiring", "site:9:certificate_expiring:aa11:lifetime")]),
    ("a 6-day certificate half used: nothing (no 7-day threshold for it)", summary(1),
     summary(2, cert_=cert(days=3, lifetime=6)), []),
    ("a 6-day certificate with 2 days left: no backstop for short lives, 4.5 days not reached", summary(1),
     summary(2, cert_=cert(days=2, lifetime=6)), []),
    ("a 6-day certificate with a day left: not renewed", summary(1),
     summary(2, cert_=cert(days=1, lifetime=6)), [("certificate_expiring", "site:9:certificate_expiring:aa11:lifetime")]),
    ("a year-long certificate with 5 days left: the backstop, not the share", summary(1),
     summary(2, cert_=cert(days=5)), [("certificate_expiring", "site:9:certificate_expiring:aa11:backstop")]),
    ("past the CA's ARI window, early in its life", summary(1),
     summary(2, cert_=cert(days=60, lifetime=90, ari_end=NOW - timedelta(hours=1))),
     [("certificate_expiring", "site:9:certificate_expiring:aa11:ari")]),
    ("inside the ARI window: nothing yet", summary(1),
     summary(2, cert_=cert(days=60, lifetime=90, ari_end=NOW + timedelta(days=2))), []),
    ("expired", summary(1), summary(2, cert_=cert(days=-2)),
     [("certificate_expiring", "site:9:certificate_expiring:aa11:expired")]),
    ("one failed audit is not an alert yet", summary(1), summary(2, status="failed", failures=1, since=2), []),
    ("two failures in a row", summary(1), summary(3, status="failed", failures=2, since=2, error="refused"),
     [("audit_failing", "site:9:audit_failing:since:2")]),
    ("two failures a minute apart: one outage seen twice (a server restarting under manual audits)", summary(1),
     summary(3, status="failed", failures=2, since=2, failing_for=timedelta(minutes=1)), []),
    ("a third failure an hour after the first: the site is failing", summary(1),
     summary(4, status="failed", failures=3, since=2, failing_for=timedelta(hours=1)),
     [("audit_failing", "site:9:audit_failing:since:2")]),
    ("a third failure has the same occurrence", summary(1), summary(4, status="failed", failures=3, since=2),
     [("audit_failing", "site:9:audit_failing:since:2")]),
    ("grade drop, new finding and new cert at once",
     summary(1, grade="A", cert_=cert("aa11")),
     summary(2, grade="F", findings=HEARTBLEED, cert_=cert("cc33", issuer="CN=Evil CA,O=Evil,C=XX")),
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


def test_expiry_events_say_why_and_the_date():
    [event] = alerts.expiry_events(summary(cert_=cert(days=6.5)), NOW)
    assert event.title == "Certificate expires in 6 days (2026-03-08)"
    assert (event.data["trigger"], event.data["fingerprint"], event.data["lifetime_days"]) == ("backstop", "aa11", 365)
    [event] = alerts.expiry_events(summary(cert_=cert(days=25, lifetime=90)), NOW)
    assert event.title == "Certificate not renewed: 72% of its lifetime used, it expires in 25 days (2026-03-27)"
    [event] = alerts.expiry_events(summary(cert_=cert(days=0.5, lifetime=6)), NOW)
    assert event.title == "Certificate not renewed: 92% of its lifetime used, it expires today (2026-03-02)"


def test_an_organization_sets_the_share_and_the_backstop():
    half_used = summary(cert_=cert(days=40, lifetime=90))
    assert alerts.expiry_events(half_used, NOW) == []
    [event] = alerts.expiry_events(half_used, NOW, alerts.ExpiryPolicy(renewal_share=0.5))
    assert event.data["trigger"] == "lifetime"
    five_left = summary(cert_=cert(days=5))
    [event] = alerts.expiry_events(five_left, NOW, alerts.ExpiryPolicy(backstop_days=14))
    assert event.data["trigger"] == "backstop"
    [event] = alerts.expiry_events(five_left, NOW, alerts.ExpiryPolicy(backstop_days=0))
    assert event.data["trigger"] == "lifetime"      # no backstop: the share still catches it


def test_the_backstop_never_reaches_into_a_healthy_renewal_window():
    """47-day certificates (from 2029) renewed at two thirds have 15.5 days left: a 60-day backstop would
    fire at every renewal, so it is held to half the window that is left after the share (7.8 days)."""
    fresh = summary(cert_=cert(days=40, lifetime=47))
    assert alerts.expiry_events(fresh, NOW, alerts.ExpiryPolicy(backstop_days=60)) == []
    [event] = alerts.expiry_events(summary(cert_=cert(days=7.5, lifetime=47)), NOW,
                                   alerts.ExpiryPolicy(backstop_days=60))
    assert event.data["trigger"] == "backstop"


def test_a_changed_certificate_says_what_changed():
    [event] = alerts.detect(summary(1, cert_=cert("aa11")),
                            summary(2, cert_=cert("bb22", issuer="CN=WE1,O=Google Trust Services,C=US")), NOW)
    assert event.title == ("Certificate changed: issued by Google Trust Services instead of Let's Encrypt "
                           "(now valid until 2026-09-18)")
    assert event.data["changes"] == ["issued by Google Trust Services instead of Let's Encrypt"]


def test_grade_rank_orders_grades_best_first():
    assert [alerts.grade_rank(g) for g in ("A+", "A", "B", "F", "T", "M")] == [0, 1, 3, 7, 7, 7]
