"""Login throttling (django-axes): LOGIN_FAILURE_LIMIT failures of one (email, IP) pair lock that pair out
for LOGIN_LOCKOUT_MINUTES with a clear 429 page; other addresses, other accounts and a password reset
are unaffected. The defaults (5 failures, 15 minutes) come from settings; tests use them as they are."""

import re
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.urls import reverse

from tests.support.personas import PASSWORD

pytestmark = pytest.mark.django_db
ATTACKER, OFFICE = "203.0.113.66", "198.51.100.20"


def attempt(client, email, password, ip=ATTACKER):
    return client.post(reverse("login"), {"username": email, "password": password}, REMOTE_ADDR=ip)


def fail_until_locked(client, email="alice@agency-a.test", ip=ATTACKER):
    responses = [attempt(client, email, f"wrong guess {n}", ip) for n in range(settings.AXES_FAILURE_LIMIT)]
    assert [r.status_code for r in responses[:-1]] == [200] * (settings.AXES_FAILURE_LIMIT - 1)
    return responses[-1]


def test_the_fifth_failure_locks_the_pair_out_with_a_clear_page(client, alice, log_of):
    assert settings.AXES_FAILURE_LIMIT == 5  # the documented default

    locked = fail_until_locked(client)

    assert locked.status_code == 429
    assert locked["Retry-After"] == str(15 * 60)
    html = locked.content.decode()
    assert 'data-testid="locked-out"' in html
    assert "failed to log in 5 times" in html and "for <b>15 minutes</b>" in html
    assert reverse("password_reset") in html
    assert len(log_of("user.locked_out")) == 1 and log_of("user.locked_out")[0].ip == ATTACKER


def test_the_right_password_does_not_get_in_during_a_lockout(client, alice):
    fail_until_locked(client)
    response = attempt(client, "alice@agency-a.test", PASSWORD)
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_email_counts_case_insensitively(client, alice):
    for n, email in enumerate(["alice@agency-a.test", "ALICE@agency-a.test", "Alice@Agency-A.test",
                               "alice@AGENCY-A.TEST"]):
        assert attempt(client, email, f"wrong {n}").status_code == 200
    assert attempt(client, "aLiCe@agency-a.test", "wrong 5").status_code == 429


def test_the_same_account_from_another_address_still_logs_in(client, alice):
    fail_until_locked(client, ip=ATTACKER)
    response = attempt(client, "alice@agency-a.test", PASSWORD, ip=OFFICE)
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)


def test_another_account_from_the_same_address_still_logs_in(client, alice, bob):
    fail_until_locked(client, email="alice@agency-a.test")
    response = attempt(client, "bob@agency-a.test", PASSWORD)
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(bob.pk)


def test_a_success_before_the_limit_resets_the_count(client, alice):
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "alice@agency-a.test", f"wrong {n}")
    assert attempt(client, "alice@agency-a.test", PASSWORD).status_code == 302
    client.post(reverse("logout"))
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, "alice@agency-a.test", f"again wrong {n}").status_code == 200


def test_the_lockout_ends_after_the_cool_off(client, alice):
    from axes.models import AccessAttempt
    from django.utils import timezone

    fail_until_locked(client)
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME)  # 15 minutes later

    assert attempt(client, "alice@agency-a.test", PASSWORD).status_code == 302


def test_a_password_reset_lifts_the_lockout(client, alice, mailoutbox):
    fail_until_locked(client)
    client.post(reverse("password_reset"), {"email": "alice@agency-a.test"}, REMOTE_ADDR=ATTACKER)
    link = urlsplit(re.search(r"https?://\S+", mailoutbox[0].body).group(0)).path
    form_url = client.get(link, REMOTE_ADDR=ATTACKER).url
    client.post(form_url, {"new_password1": "a fresh long passphrase", "new_password2": "a fresh long passphrase"},
                REMOTE_ADDR=ATTACKER)

    assert attempt(client, "alice@agency-a.test", "a fresh long passphrase").status_code == 302


def test_a_nonexistent_account_is_locked_out_the_same_way(client, db):
    # Same answers for unknown addresses: the lockout page is no account-existence oracle.
    assert fail_until_locked(client, email="nobody@nowhere.test").status_code == 429


@pytest.mark.parametrize("name, value, error", [
    ("LOGIN_FAILURE_LIMIT", "0", "LOGIN_FAILURE_LIMIT=0 must be at least 1."),
    ("LOGIN_FAILURE_LIMIT", "five", "LOGIN_FAILURE_LIMIT='five' is not an integer."),
    ("LOGIN_LOCKOUT_MINUTES", "-3", "LOGIN_LOCKOUT_MINUTES=-3 must be at least 1."),
    ("SIGNUP_LIMIT_PER_IP", "lots", "SIGNUP_LIMIT_PER_IP='lots' is not an integer."),
    ("SIGNUP_LIMIT_WINDOW_MINUTES", "0", "SIGNUP_LIMIT_WINDOW_MINUTES=0 must be at least 1."),
    ("AUDIT_LIMIT_PER_ORG_HOUR", "0", "AUDIT_LIMIT_PER_ORG_HOUR=0 must be at least 1."),
    ("AUDIT_LIMIT_PER_TARGET", "x", "AUDIT_LIMIT_PER_TARGET='x' is not an integer."),
    ("AUDIT_LIMIT_TARGET_MINUTES", "0", "AUDIT_LIMIT_TARGET_MINUTES=0 must be at least 1."),
    ("PROBE_LIMIT_PER_ORG_HOUR", "0", "PROBE_LIMIT_PER_ORG_HOUR=0 must be at least 1."),
    ("PROBE_LIMIT_PER_TARGET", "1.5", "PROBE_LIMIT_PER_TARGET='1.5' is not an integer."),
    ("PROBE_LIMIT_TARGET_MINUTES", "0", "PROBE_LIMIT_TARGET_MINUTES=0 must be at least 1."),
])
def test_a_bad_limit_in_the_environment_stops_start_up(name, value, error):
    env = {"TLSAUDIT_DEV": "1", "PATH": "/usr/bin:/bin", name: value}
    result = subprocess.run([sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = "
                             "'tlsaudit.settings'; django.setup()"], env=env, capture_output=True, text=True,
                            cwd=settings.BASE_DIR, timeout=120)
    assert result.returncode != 0
    assert error in result.stderr
