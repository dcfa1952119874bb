"""Accounts: sign-up, email verification, log in / out, password change and reset.

Personas from conftest: alice (alice@agency-a.test) already has an account; new visitors sign up.
Emails go to Django's in-memory outbox (`mailoutbox`); links in them are followed like a user would.
"""

import re
import time
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.core import signing
from django.urls import reverse

from tests.support.personas import PASSWORD
from tlsaudit.accounts.emails import VERIFY_SALT, verification_token
from tlsaudit.accounts.models import User

NEW_PASSWORD = "tangerine submarine lighthouse"
SIGNUP = {"full_name": "Dana Newcomer", "email": "dana@agency-d.test", "password": NEW_PASSWORD}


def link_path(text: str) -> str:
    """The path of the first http(s) link in an email's text."""
    return urlsplit(re.search(r"https?://\S+", text).group(0)).path


def signup(client, **changes):
    return client.post(reverse("signup"), {**SIGNUP, **changes})


def logged_in_user_id(client):
    return client.session.get("_auth_user_id")


# --- Sign-up: every field's error -----------------------------------------------------------------

@pytest.mark.parametrize("changes, field, error", [
    ({"email": ""}, "email", "This field is required."),
    ({"email": "dana-at-agency-d"}, "email", "Enter a valid email address."),
    ({"full_name": "D" * 151}, "full_name", "Ensure this value has at most 150 characters (it has 151)."),
    ({"password": ""}, "password", "This field is required."),
    ({"password": "sh0rt!pw"}, "password", "This password is too short. It must contain at least 10 characters."),
    ({"password": "qwertyuiop"}, "password", "This password is too common."),
    ({"password": "8412957360173"}, "password", "This password is entirely numeric."),
    ({"email": "margaret.hamilton@apollo.test", "password": "margaret.hamilton"}, "password",
     "The password is too similar to the email address."),
])
def test_it_shows_each_signup_field_error_and_creates_nobody(client, db, mailoutbox, changes, field, error):
    response = signup(client, **changes)

    assert response.status_code == 200
    assert error in response.context["form"].errors[field]
    assert f'data-testid="error-{field}"' in response.content.decode()
    assert not User.objects.exists()
    assert logged_in_user_id(client) is None
    assert mailoutbox == []


def test_it_refuses_an_email_already_used_whatever_its_case(client, alice, mailoutbox):
    response = signup(client, email="  Alice@AGENCY-A.test ")

    assert response.context["form"].errors["email"] == [
        "An account with this email address already exists. Log in instead."]
    assert response.content.decode().count("An account with this email address already exists.") == 1
    assert User.objects.count() == 1
    assert mailoutbox == []


def test_it_signs_up_logs_in_and_sends_a_verification_email(client, db, mailoutbox):
    response = signup(client, email="Dana@Agency-D.test")

    dana = User.objects.get()
    assert response.status_code == 302 and response.url == reverse("home")
    assert dana.email == "dana@agency-d.test" and dana.full_name == "Dana Newcomer"
    assert dana.check_password(NEW_PASSWORD) and not dana.email_verified
    assert logged_in_user_id(client) == str(dana.pk)

    [email] = mailoutbox
    assert email.to == ["dana@agency-d.test"]
    assert email.subject == "Verify your email address for TLS Audit"
    assert "Hello Dana Newcomer" in email.body
    [(html, mimetype)] = email.alternatives
    assert mimetype == "text/html"
    link = link_path(email.body)
    assert link.startswith("/accounts/verify/") and f'href="{settings.SITE_URL}{link}"' in html

    page = client.get(reverse("home"))
    assert "Please verify your email address" in page.content.decode()
    assert "Welcome! We sent a verification link to dana@agency-d.test." in page.content.decode()


def test_it_follows_next_after_signup_but_only_within_the_site(client, db):
    inside = client.post(reverse("signup") + "?next=/orgs/new/", SIGNUP)
    assert inside.url == "/orgs/new/"

    client.logout()
    outside = client.post(reverse("signup") + "?next=https://evil.example/phish",
                          {**SIGNUP, "email": "eve@agency-e.test"})
    assert outside.status_code == 302 and outside.url == reverse("home")


def test_it_sends_a_logged_in_user_from_signup_to_the_dashboard(login, alice):
    assert login(alice).get(reverse("signup")).url == reverse("home")


# --- Email verification ---------------------------------------------------------------------------

def test_it_verifies_the_address_from_the_emailed_link(client, db, mailoutbox):
    signup(client)
    client.logout()

    response = client.get(link_path(mailoutbox[0].body), follow=True)

    assert User.objects.get().email_verified is True
    assert response.redirect_chain == [(reverse("login"), 302)]
    assert "Your email address is verified." in response.content.decode()


def test_it_sends_a_logged_in_user_to_the_dashboard_after_verifying(client, db, mailoutbox):
    signup(client)
    response = client.get(link_path(mailoutbox[0].body))
    assert response.url == reverse("home")
    assert User.objects.get().email_verified is True


def test_it_rejects_a_tampered_link_with_400(client, db, mailoutbox):
    signup(client)
    token = link_path(mailoutbox[0].body).split("/")[-2]
    tampered = token[:-3] + ("aaa" if not token.endswith("aaa") else "bbb")

    response = client.get(reverse("verify_email", args=[tampered]))

    assert response.status_code == 400
    assert "This link is not valid." in response.content.decode()
    assert User.objects.get().email_verified is False


class SignedFourDaysAgo(signing.TimestampSigner):
    """A real signer whose clock reads four days ago, to mint a token that has since expired."""

    def timestamp(self):
        return signing.b62_encode(int(time.time()) - 4 * 24 * 3600)


def test_it_rejects_an_expired_link_with_400(client, db):
    dana = User.objects.create_user("dana@agency-d.test", NEW_PASSWORD)
    token = SignedFourDaysAgo(salt=VERIFY_SALT).sign_object({"id": dana.pk, "email": dana.email})

    response = client.get(reverse("verify_email", args=[token]))

    assert response.status_code == 400
    assert "This link has expired." in response.content.decode()
    dana.refresh_from_db()
    assert dana.email_verified is False


def test_it_rejects_a_link_for_an_address_the_account_no_longer_has(client, db):
    dana = User.objects.create_user("dana@agency-d.test", NEW_PASSWORD)
    token = verification_token(dana)
    dana.email = "dana@elsewhere.test"
    dana.save()

    response = client.get(reverse("verify_email", args=[token]))

    assert response.status_code == 400
    assert "This link belongs to an address that is no longer on an account." in response.content.decode()
    dana.refresh_from_db()
    assert dana.email_verified is False


def test_it_resends_the_verification_link_on_post_only(client, db, mailoutbox):
    signup(client)
    mailoutbox.clear()

    assert client.get(reverse("resend_verification")).status_code == 405
    assert mailoutbox == []

    response = client.post(reverse("resend_verification"), {"next": "/orgs/new/"}, follow=True)

    assert response.redirect_chain[0] == ("/orgs/new/", 302)
    assert "We sent a new verification link to dana@agency-d.test." in response.content.decode()
    [email] = mailoutbox
    assert client.get(link_path(email.body)).status_code == 302
    assert User.objects.get().email_verified is True


def test_it_does_not_resend_to_a_verified_address_nor_redirect_off_site(login, alice, mailoutbox):
    response = login(alice).post(reverse("resend_verification"), {"next": "//evil.example/"}, follow=True)

    assert response.redirect_chain[0] == (reverse("home"), 302)
    assert "Your email address is already verified." in response.content.decode()
    assert mailoutbox == []


def test_it_asks_an_anonymous_visitor_to_log_in_before_resending(client, db, mailoutbox):
    response = client.post(reverse("resend_verification"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    assert mailoutbox == []


# --- Log in / log out -----------------------------------------------------------------------------

def test_it_logs_alice_in_with_her_email_in_any_case(client, alice):
    response = client.post(reverse("login"), {"username": "Alice@Agency-A.test", "password": PASSWORD})
    assert response.status_code == 302 and response.url == reverse("home")
    assert logged_in_user_id(client) == str(alice.pk)


def test_it_shows_an_error_for_a_wrong_password(client, alice):
    response = client.post(reverse("login"), {"username": alice.email, "password": "not her password"})

    assert response.status_code == 200
    assert "Please enter a correct email address and password." in response.content.decode()
    assert 'data-testid="error-form"' in response.content.decode()
    assert logged_in_user_id(client) is None


@pytest.mark.parametrize("data, field, error", [
    ({"username": "", "password": PASSWORD}, "username", "This field is required."),
    ({"username": "alice", "password": PASSWORD}, "username", "Enter a valid email address."),
    ({"username": "alice@agency-a.test", "password": ""}, "password", "This field is required."),
])
def test_it_shows_each_login_field_error(client, alice, data, field, error):
    response = client.post(reverse("login"), data)
    assert error in response.context["form"].errors[field]
    assert logged_in_user_id(client) is None


def test_it_logs_out_on_post_only(login, alice):
    client = login(alice)

    assert client.get(reverse("logout")).status_code == 405
    assert logged_in_user_id(client) == str(alice.pk)

    response = client.post(reverse("logout"))
    assert response.status_code == 302 and response.url == reverse("login")
    assert logged_in_user_id(client) is None


# --- Password change ------------------------------------------------------------------------------

def change_password(client, old, new1, new2):
    return client.post(reverse("password_change"),
                       {"old_password": old, "new_password1": new1, "new_password2": new2})


def test_it_refuses_a_password_change_with_the_wrong_old_password(login, alice):
    response = change_password(login(alice), "not her password", NEW_PASSWORD, NEW_PASSWORD)

    assert response.status_code == 200
    assert "Your old password was entered incorrectly. Please enter it again." in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_it_refuses_a_password_change_when_the_new_passwords_differ(login, alice):
    response = change_password(login(alice), PASSWORD, NEW_PASSWORD, NEW_PASSWORD + "!")

    assert "The two password fields didn’t match." in response.context["form"].errors["new_password2"]
    assert 'data-testid="error-new_password2"' in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_it_applies_the_password_rules_to_a_password_change(login, alice):
    response = change_password(login(alice), PASSWORD, "12345678901", "12345678901")
    assert "This password is too common." in response.context["form"].errors["new_password2"]


def test_it_changes_the_password_and_keeps_alice_logged_in(login, alice):
    client = login(alice)
    response = change_password(client, PASSWORD, NEW_PASSWORD, NEW_PASSWORD)

    assert response.url == reverse("password_change_done")
    assert logged_in_user_id(client) == str(alice.pk)
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)


def test_it_asks_an_anonymous_visitor_to_log_in_before_changing_a_password(client, db):
    response = client.get(reverse("password_change"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


# --- Password reset, end to end -------------------------------------------------------------------

def test_it_resets_a_forgotten_password_by_email(client, alice, mailoutbox):
    # Given alice forgot her password and asks for a reset link
    response = client.post(reverse("password_reset"), {"email": "ALICE@agency-a.test"}, follow=True)
    assert "Check your email" in response.content.decode()
    [email] = mailoutbox
    assert email.to == [alice.email] and email.subject == "Reset your TLS Audit password"
    [(html, _)] = email.alternatives
    link = link_path(email.body)
    assert link in html

    # When she follows the link and chooses a new password
    form_page = client.get(link, follow=True)
    assert "Choose a new password" in form_page.content.decode()
    set_url = form_page.redirect_chain[-1][0]
    done = client.post(set_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.url == reverse("password_reset_complete")

    # Then the new password logs her in, the old one no longer does, and the link is spent
    assert client.post(reverse("login"), {"username": alice.email, "password": PASSWORD}).status_code == 200
    logged_in = client.post(reverse("login"), {"username": alice.email, "password": NEW_PASSWORD})
    assert logged_in.url == reverse("home") and logged_in_user_id(client) == str(alice.pk)
    client.logout()
    assert "This link no longer works" in client.get(link, follow=True).content.decode()


def test_it_shows_the_same_page_for_an_unknown_address_and_sends_nothing(client, alice, mailoutbox):
    response = client.post(reverse("password_reset"), {"email": "nobody@agency-z.test"}, follow=True)

    assert response.redirect_chain == [(reverse("password_reset_done"), 302)]
    assert "If an account uses that address, a reset link is on its way." in response.content.decode()
    assert mailoutbox == []


def test_it_shows_the_reset_form_error_for_an_invalid_address(client, db, mailoutbox):
    response = client.post(reverse("password_reset"), {"email": "not an address"})
    assert "Enter a valid email address." in response.context["form"].errors["email"]
    assert mailoutbox == []
