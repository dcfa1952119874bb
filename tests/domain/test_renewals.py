"""Renewal history and forecast rules (#29 item 3): margins, automation evidence, the lifetime caps of SC-081v3."""

from datetime import datetime, timedelta, timezone

from tlsaudit.domain.renewals import Forecast, Seen, cap_for, changes_of, history, renewal_due

UTC = timezone.utc
START = datetime(2026, 1, 1, 3, tzinfo=UTC)
LE = "Let's Encrypt"


def nightly(certs: list[tuple[float, float, str]], nights: int, issuer: str = LE) -> list[Seen]:
    """Audits at 03:00 each night; `certs` are (issued day, lifetime days, fingerprint), served from issuance."""
    seen = []
    for night in range(nights):
        at = START + timedelta(days=night)
        live = [c for c in certs if START + timedelta(days=c[0]) <= at]
        issued, lifetime, fingerprint = live[-1]
        nb = START + timedelta(days=issued)
        seen.append(Seen(at, fingerprint, nb, nb + timedelta(days=lifetime), issuer))
    return seen


def test_each_change_says_how_long_before_expiry_it_was_replaced():
    seen = nightly([(-10, 90, "a"), (50, 90, "b"), (110, 90, "c")], 130)
    changes = changes_of(seen)
    assert [c.fingerprint for c in changes] == ["a", "b", "c"]
    assert [c.margin_days for c in changes] == [30.0, 30.0, None]    # certbot: a third of 90 days left
    found = history(seen)
    assert found.automated and found.flags == []
    assert "issued by Let's Encrypt, an ACME CA" in found.evidence
    assert "renewed every 60 days, 2 times in a row" in found.evidence


def test_a_margin_that_shrinks_at_each_renewal_is_a_failing_automation():
    # Replaced with 30, then 20, then 8 days left: later every time
    seen = nightly([(-10, 90, "a"), (50, 90, "b"), (120, 90, "c"), (202, 90, "d")], 215)
    assert [c.margin_days for c in changes_of(seen)][:3] == [30.0, 20.0, 8.0]
    [flag] = history(seen).flags
    assert flag.startswith("renewal margin shrinking: 30, 20, 8 days before expiry")


def test_a_certificate_renewed_by_hand_meets_the_caps_with_their_dates():
    """A 398-day certificate from a commercial CA, issued 2025-12-01: its renewal (two thirds of its life and a day, 2026-08-25)
    can live 200 days; and from 2027-03-15 certificates live 100 days."""
    seen = [Seen(START, "x", datetime(2025, 12, 1, tzinfo=UTC), datetime(2027, 1, 3, tzinfo=UTC), "DigiCert Inc")]
    found = history(seen)
    assert not found.automated
    assert found.flags == [
        "not shown to renew automatically: the next certificate, due 2026-08-25, can live at most 200 days, not 398",
        "not shown to renew automatically: certificates issued from 2027-03-15 live at most 100 days; automate "
        "renewal (an ACME client) before then"]
    assert (cap_for(datetime(2027, 3, 14).date()), cap_for(datetime(2029, 3, 15).date())) == (200, 47)


def test_a_90_day_certificate_not_shown_automated_hears_of_the_47_day_cap_only():
    seen = [Seen(START, "y", START - timedelta(days=5), START + timedelta(days=85), "TLS Audit test lab")]
    assert history(seen).flags == ["not shown to renew automatically: certificates issued from 2029-03-15 live at "
                                   "most 47 days; automate renewal (an ACME client) before then"]


def test_a_six_day_certificate_rotated_every_three_days_is_automated():
    certs = [(d, 6, f"s{d}") for d in range(-3, 30, 3)]
    found = history(nightly(certs, 30))
    assert found.automated and found.flags == []
    assert "a 6-day lifetime" in found.evidence


def test_due_is_the_ari_window_end_else_the_share_and_grace_and_the_forecast_reads_as_a_sentence():
    """Due means what the expiry alerts call overdue, so the portfolio and the alerts agree."""
    nb = datetime(2026, 12, 1, tzinfo=UTC)
    assert renewal_due(nb, nb + timedelta(days=90)) == nb + timedelta(days=90 * 0.67 + 1)
    assert renewal_due(nb, nb + timedelta(days=6)) == nb + timedelta(days=6 * 0.67 + 0.5)
    assert renewal_due(nb, nb + timedelta(days=90), ari_end=nb + timedelta(days=40)) == nb + timedelta(days=40)
    assert Forecast(overdue=2, next_week=12, next_month=30).sentence() == "12 renewals due next week, 2 overdue"
    assert Forecast(overdue=0, next_week=1, next_month=1).sentence() == "1 renewal due next week, 0 overdue"
