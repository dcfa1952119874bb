"""Account emails: the verification link. Built by tlsaudit/core/emails.py like every email."""

from django.conf import settings
from django.core import signing
from django.urls import reverse

from tlsaudit.core.emails import templated_message

VERIFY_SALT = "tlsaudit.accounts.verify-email"


def send_templated(template: str, to: str, context: dict) -> None:
    templated_message(template, to, context).send()


def verification_token(user) -> str:
    # The email is part of the payload, so a token stops working if the address changes.
    return signing.dumps({"id": user.pk, "email": user.email}, salt=VERIFY_SALT)


def read_verification_token(token: str, max_age: int) -> dict:
    return signing.loads(token, salt=VERIFY_SALT, max_age=max_age)


def send_verification(user) -> None:
    link = settings.SITE_URL + reverse("verify_email", args=[verification_token(user)])
    send_templated("verify-email", user.email, {"user": user, "link": link})
