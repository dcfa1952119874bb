"""Every email the product sends is built here, from subject / text / html templates (as healthchecks does).

Names in an email come from people (organization, site, inviter) or from the servers we test (a
certificate subject in an alert title), and rows saved before names refused control characters
may still hold a line break. So the subject is always made one bounded line (`single_line`), and
the message is rendered to MIME once while building: a header that still cannot be encoded raises
ValueError here, before any connection to the mail server, where the caller can record why.
"""

from __future__ import annotations

import smtplib

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from tlsaudit.domain.text import single_line

SUBJECT_LIMIT = 150
# The mail server refused or did not answer: worth retrying later.
SEND_ERRORS = (smtplib.SMTPException, OSError)
# Anything a send can fail with: BadHeaderError and bad addresses are ValueErrors, retrying does not help them.
MAIL_ERRORS = (*SEND_ERRORS, ValueError)


def templated_message(template: str, to: str, context: dict, headers: dict | None = None) -> EmailMultiAlternatives:
    context = {"site_url": settings.SITE_URL, **context}
    subject = single_line(render_to_string(f"emails/{template}-subject.txt", context), SUBJECT_LIMIT)
    message = EmailMultiAlternatives(subject, render_to_string(f"emails/{template}-body.txt", context),
                                     settings.DEFAULT_FROM_EMAIL, [to], headers=headers)
    message.attach_alternative(render_to_string(f"emails/{template}-body.html", context), "text/html")
    message.message()  # encode the headers now: a failure is a build error, not a half-sent batch
    return message


def failure_reason(exc: BaseException) -> str:
    """What went wrong, for a row's error field and the log (never a password: SMTP errors carry none)."""
    return f"{type(exc).__name__}: {exc}"[:2000]
