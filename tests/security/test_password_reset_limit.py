"""Password-reset rate limits: PASSWORD_RESET_LIMIT_PER_IP requests per client IP and
PASSWORD_RESET_LIMIT_PER_ADDRESS per typed address per window. Each request sends an email, so
without them the form mails any inbox on demand. A refusal keeps what was typed, sends nothing and
reads the same for an address with an account as for one without."""

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def ask(client, email, ip="203.0.113.20"):
    return client.post(reverse("password_reset"), {"email": email}, REMOTE_ADDR=ip)


def test_a_fourth_reset_for_one_address_is_refused_with_a_wait_and_sends_nothing(client, settings, alice,
                                                                                 mailoutbox):
    settings.PASSWORD_RESET_LIMIT_PER_ADDRESS, settings.PASSWORD_RESET_LIMIT_PER_IP = 3, 100
    for n in range(3):
        assert ask(client, alice.email, ip=f"203.0.113.{30 + n}").status_code == 302  # from three networks
    assert len(mailoutbox) == 3

    refused = ask(client, alice.email.upper(), ip="203.0.113.40")

    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= settings.PASSWORD_RESET_LIMIT_WINDOW_MINUTES * 60
    html = refused.content.decode()
    assert 'data-testid="reset-refused"' in html and "too many password reset emails asked for this address" in html
    assert "Try again in" in html
    assert f'value="{alice.email.upper()}"' in html  # nothing typed is lost
    assert len(mailoutbox) == 3


def test_one_network_is_limited_across_addresses(client, settings):
    settings.PASSWORD_RESET_LIMIT_PER_IP, settings.PASSWORD_RESET_LIMIT_PER_ADDRESS = 2, 100
    assert ask(client, "a@example.test").status_code == 302
    assert ask(client, "b@example.test").status_code == 302
    refused = ask(client, "c@example.test")
    assert refused.status_code == 429 and "too many password reset requests from your network" in refused.content.decode()
    assert ask(client, "c@example.test", ip="198.51.100.7").status_code == 302


def test_a_refusal_reads_the_same_with_or_without_an_account(client, settings, alice):
    settings.PASSWORD_RESET_LIMIT_PER_ADDRESS = 1
    ask(client, alice.email, ip="203.0.113.50")
    ask(client, "nobody@example.test", ip="203.0.113.51")
    known = ask(client, alice.email, ip="203.0.113.52")
    unknown = ask(client, "nobody@example.test", ip="203.0.113.53")
    assert known.status_code == unknown.status_code == 429
    assert page_without_secrets(known, alice.email) == page_without_secrets(unknown, "nobody@example.test")


def page_without_secrets(response, email: str) -> str:
    """The page with the typed address, and what differs per response anyway (CSRF token, CSP nonce), masked."""
    html = response.content.decode().replace(email, "EMAIL")
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "CSRF", html)
    html = re.sub(r'"X-CSRFToken": "[^"]+"', "CSRF", html)  # htmx's header, in hx-headers
    return re.sub(r'nonce="[^"]+"', "NONCE", html)


def test_invalid_requests_count_and_get_of_the_form_does_not(client, settings):
    settings.PASSWORD_RESET_LIMIT_PER_IP = 2
    for _ in range(3):
        assert client.get(reverse("password_reset"), REMOTE_ADDR="203.0.113.60").status_code == 200
    assert ask(client, "not-an-address", ip="203.0.113.60").status_code == 200  # the form's own error
    assert ask(client, "", ip="203.0.113.60").status_code == 200
    assert ask(client, "ok@example.test", ip="203.0.113.60").status_code == 429


def test_a_cache_outage_lets_resets_through_and_says_so(client, settings, caplog, mailoutbox, alice):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}  # nothing listens on port 1
    settings.PASSWORD_RESET_LIMIT_PER_ADDRESS = 1
    assert ask(client, alice.email).status_code == 302
    assert ask(client, alice.email).status_code == 302
    assert len(mailoutbox) == 2
    assert "rate limit reset-ip:203.0.113.20 not checked: the cache is unavailable" in caplog.text
