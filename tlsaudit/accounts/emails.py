"""Account emails: subject / text / html templates, like healthchecks."""

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

VERIFY_SALT = "tlsaudit.accounts.verify-email"


def send_templated(template: str, to: str, context: dict) -> None:
    context = {"site_url": settings.SITE_URL, **context}
    subject = render_to_string(f"emails/{template}-subject.txt", context).strip()
    text = render_to_string(f"emails/{template}-body.txt", context)
    html = render_to_string(f"emails/{template}-body.html", context)
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [to])
    message.attach_alternative(html, "text/html")
    message.send()


def verification_token(user) -> str:
    # The email is part of the payload, so a token stops working if the address changes.
    return signing.dumps({"id": user.pk, "email": user.email}, salt=VERIFY_SALT)


def read_verification_token(token: str, max_age: int) -> dict:
    return signing.loads(token, salt=VERIFY_SALT, max_age=max_age)


def send_verification(user) -> None:
    link = settings.SITE_URL + reverse("verify_email", args=[verification_token(user)])
    send_templated("verify-email", user.email, {"user": user, "link": link})
