"""Sign-up rate limit: SIGNUP_LIMIT_PER_IP attempts (valid or not) per client IP per window; the next one
gets a 429 page that says how long to wait, keeps what was typed and creates nobody."""

import pytest
from django.urls import reverse

from tlsaudit.accounts.models import User

pytestmark = pytest.mark.django_db
PASSWORD = "tangerine submarine lighthouse"


def signup(client, n, ip="203.0.113.9", **changes):
    data = {"full_name": f"Visitor {n}", "email": f"visitor{n}@example.test", "password": PASSWORD, **changes}
    return client.post(reverse("signup"), data, REMOTE_ADDR=ip)


def test_the_attempt_past_the_limit_is_refused_with_a_wait(client, settings, mailoutbox):
    settings.SIGNUP_LIMIT_PER_IP, settings.SIGNUP_LIMIT_WINDOW_MINUTES = 3, 60
    for n in range(3):
        assert signup(client, n).status_code == 302
        client.post(reverse("logout"))

    refused = signup(client, 3)

    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 3600
    html = refused.content.decode()
    assert 'data-testid="signup-refused"' in html and "too many sign-up attempts from your network" in html
    assert "Try again in" in html
    assert 'value="visitor3@example.test"' in html  # nothing typed is lost
    assert not User.objects.filter(email="visitor3@example.test").exists()
    assert len(mailoutbox) == 3


def test_invalid_attempts_count_too(client, settings):
    settings.SIGNUP_LIMIT_PER_IP = 2
    assert signup(client, 0, email="not-an-address").status_code == 200
    assert signup(client, 1, password="short").status_code == 200
    assert signup(client, 2).status_code == 429


def test_a_refused_attempt_does_not_reveal_whether_the_account_exists(client, settings, alice):
    settings.SIGNUP_LIMIT_PER_IP = 1
    signup(client, 0, email="someone@example.test", password="short")
    refused = signup(client, 1, email=alice.email)
    assert refused.status_code == 429 and "already exists" not in refused.content.decode()


def test_other_addresses_have_their_own_count(client, settings):
    settings.SIGNUP_LIMIT_PER_IP = 1
    assert signup(client, 0, ip="203.0.113.1").status_code == 302
    client.post(reverse("logout"))
    assert signup(client, 1, ip="203.0.113.1").status_code == 429
    assert signup(client, 2, ip="203.0.113.2").status_code == 302


def test_a_get_of_the_form_does_not_count(client, settings):
    settings.SIGNUP_LIMIT_PER_IP = 1
    for _ in range(3):
        assert client.get(reverse("signup"), REMOTE_ADDR="203.0.113.3").status_code == 200
    assert signup(client, 0, ip="203.0.113.3").status_code == 302


def test_a_cache_outage_lets_sign_ups_through_and_says_so(client, settings, caplog):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}  # nothing listens on port 1
    settings.SIGNUP_LIMIT_PER_IP = 1
    assert signup(client, 0).status_code == 302
    assert "rate limit signup:203.0.113.9 not checked: the cache is unavailable" in caplog.text
