"""A portfolio of 20 sites over 60 nights of audits, certificates rotating on their own schedules (#29).

Eight Let's Encrypt 90-day certificates renewed by certbot (a third of the lifetime left, a 12-hourly timer),
six 6-day "shortlived" ones renewed at half their life (the middle of their ARI window, an 8-hourly timer),
four 200-day commercial ones renewed by hand with 80 days left; and two automations that stop: a certbot
that renews nothing after the first night, a 6-day client that stops after day 10. Every night the
alert rules compare the audit with the previous one; an occurrence fires once (the store's unique key).
The alerts raised, day by day, must be exactly the hand-computed list below: nothing for a healthy rotation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tlsaudit.domain import alerts

START = datetime(2026, 12, 1, tzinfo=timezone.utc)
NIGHTS = 60
AUDIT_HOUR = 3
LE = "CN=R12,O=Let's Encrypt,C=US"
LE_ECDSA = "CN=E8,O=Let's Encrypt,C=US"   # Let's Encrypt picks one of its intermediates per issuance
DIGICERT = "CN=DigiCert Global G2 TLS RSA SHA256 2020 CA1,O=DigiCert Inc,C=US"


@dataclass(frozen=True)
class Automation:
    site: int
    lifetime_days: float
    renew_at: float            # the share of the lifetime used when the client renews
    tick_hours: float          # how often the client runs
    first_not_before: float    # days from START
    issuer: str
    stops_after: float = NIGHTS   # days from START: nothing is issued after this

    def not_befores(self) -> list[float]:
        issued = [self.first_not_before]
        while True:
            due = issued[-1] + self.lifetime_days * self.renew_at
            tick = self.tick_hours / 24
            renewal = math.ceil(round(due / tick, 9)) * tick      # the client's first run at or after the due time
            if renewal > self.stops_after:
                return issued
            issued.append(renewal)

    def served(self, day: float) -> dict:
        not_before = max(nb for nb in self.not_befores() if nb <= day)
        # Let's Encrypt alternates intermediates: odd renewals come from another one (still a renewal)
        issuer = LE_ECDSA if self.issuer == LE and self.not_befores().index(not_before) % 2 else self.issuer
        return {"fingerprint": f"{self.site}@{not_before:g}", "not_before": START + timedelta(days=not_before),
                "not_after": START + timedelta(days=not_before + self.lifetime_days), "subject": f"CN=site{self.site}",
                "issuer": issuer, "names": [f"site{self.site}.example"], "ari_end": None}


CERTBOT_90 = [Automation(i + 1, 90, 2 / 3, 12, nb, LE) for i, nb in enumerate((-85, -70, -59, -45, -30, -20, -10, -1))]
SHORTLIVED_6 = [Automation(i + 9, 6, 1 / 2, 8, nb, LE) for i, nb in enumerate((-5, -4.5, -3.2, -2, -1, -0.3))]
BY_HAND_200 = [Automation(i + 15, 200, 0.6, 24, nb, DIGICERT) for i, nb in enumerate((-190, -110, -90, -65))]
STOPPED_CERTBOT = Automation(19, 90, 2 / 3, 12, -40, LE, stops_after=0)
STOPPED_SHORTLIVED = Automation(20, 6, 1 / 2, 8, -2, LE, stops_after=10)
PORTFOLIO = [*CERTBOT_90, *SHORTLIVED_6, *BY_HAND_200, STOPPED_CERTBOT, STOPPED_SHORTLIVED]

# By hand. Site 19's last certificate: issued day -40, valid to day 50. Its share point is -40 + 0.67 x 90 + a
# day's grace = day 21.3, so the audit of day 22 (03:00) is the first past it; 7 days left from day 43; expired
# from day 50. Site 20's last: issued day 10 (its client ran at -2, 1, 4, 7, 10), valid to day 16: share point
# 10 + 0.67 x 6 + half a day (1/12 of its life) = day 14.52, so day 15; expired on day 16; no backstop for a
# 6-day certificate.
EXPECTED = [
    (15, 20, "certificate_expiring", "lifetime"),
    (16, 20, "certificate_expiring", "expired"),
    (22, 19, "certificate_expiring", "lifetime"),
    (43, 19, "certificate_expiring", "backstop"),
    (50, 19, "certificate_expiring", "expired"),
]


def summary(automation: Automation, night: int, audit_id: int) -> dict:
    at = night + AUDIT_HOUR / 24
    return {"audit_id": audit_id, "site_id": automation.site, "status": "done", "grade": "A", "score": 95,
            "error": "", "caps": {}, "findings": {}, "cert": automation.served(at),
            "consecutive_failures": 0, "failing_since": None}


def run_portfolio(policy: alerts.ExpiryPolicy = alerts.ExpiryPolicy()) -> list[tuple]:
    fired, seen, previous = [], set(), {}
    for night in range(NIGHTS):
        now = START + timedelta(days=night, hours=AUDIT_HOUR)
        for automation in PORTFOLIO:
            current = summary(automation, night, audit_id=night * 100 + automation.site)
            for event in alerts.detect(previous.get(automation.site), current, now, policy):
                if event.key not in seen:            # the store's unique (organization, dedupe_key)
                    seen.add(event.key)
                    fired.append((night, automation.site, event.kind, event.data.get("trigger")))
            previous[automation.site] = current
    return fired


def test_the_portfolio_raises_exactly_the_expected_alerts_day_by_day():
    assert run_portfolio() == EXPECTED


def test_the_healthy_automations_rotated_during_the_two_months():
    """The quiet is earned: every healthy site renewed at least once inside the 60 nights (the 6-day ones
    about 20 times), through alternating Let's Encrypt intermediates."""
    for automation in PORTFOLIO[:18]:
        renewals = [nb for nb in automation.not_befores() if 0 < nb < NIGHTS]
        assert renewals, f"site {automation.site} never renewed in the window"
    assert all(len([nb for nb in a.not_befores() if 0 < nb < NIGHTS]) >= 19 for a in SHORTLIVED_6)
    issuers = {a.served(day)["issuer"] for a in CERTBOT_90 for day in range(NIGHTS)}
    assert issuers == {LE, LE_ECDSA}


def test_the_old_fixed_thresholds_would_have_fired_every_renewal():
    """Why the rules changed: a 30-day threshold fires inside certbot's normal window, and a 6-day
    certificate is always within 7 days of expiry."""
    fixed = [(n, a.site) for n in range(NIGHTS) for a in PORTFOLIO[:18]
             if (a.served(n + AUDIT_HOUR / 24)["not_after"] - START).days - n <= 7]
    assert len(fixed) > NIGHTS * len(SHORTLIVED_6) - 1   # every 6-day site, every night


def test_the_share_is_the_organizations():
    """80 %: the stopped certbot is heard of on day 33 (-40 + 72 + 1), the stopped 6-day client only when its
    certificate expires (its share point, day 15.3, falls after the audit of day 15). 50 %: the 6-day clients,
    renewing at half plus at most their 8-hour timer, stay inside the half-day grace, while the 90-day and
    200-day sites alert, since their clients wait for a third (certbot) or two fifths (by hand) to be left."""
    assert run_portfolio(alerts.ExpiryPolicy(renewal_share=0.8)) == [
        (16, 20, "certificate_expiring", "expired"),
        (33, 19, "certificate_expiring", "lifetime"),
        (43, 19, "certificate_expiring", "backstop"),
        (50, 19, "certificate_expiring", "expired"),
    ]
    strict = {site for _, site, _, _ in run_portfolio(alerts.ExpiryPolicy(renewal_share=0.5))}
    assert not strict & {a.site for a in SHORTLIVED_6}
    assert strict >= {19, 20} | {a.site for a in CERTBOT_90}
