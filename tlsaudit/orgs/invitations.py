"""Sending an invitation: each one mails an address someone else chose, so it is limited.

1. The inviter's own address must be verified: an attacker needs a real mailbox per account.
2. Limits the inviter may see (RateLimited, nothing saved, nothing sent): invitations per
   organization and per inviter (all their organizations together) per window.
3. The limit per recipient inbox counts every organization's invitations to it (see
   domain/mailbox.py for which spellings are one inbox). Refusing would tell the inviter that
   *someone* invited that address recently, so instead the invitation is saved and shown as
   usual and only the email is held back (logged). The answer is the same either way.
4. Inviting an address that already has a pending invitation in this organization sends that
   one again (new role, fresh 14 days): a re-send is limited exactly like a first send.
5. The row and the email succeed together: if the mail server refuses, nothing is saved and the
   caller gets MailNotSent with the reason.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from tlsaudit.accounts.emails import send_templated
from tlsaudit.core import ratelimits
from tlsaudit.core.emails import MAIL_ERRORS, failure_reason
from tlsaudit.domain.mailbox import mailbox_key
from tlsaudit.domain.ratelimit import in_words
from tlsaudit.orgs.models import Invitation

logger = logging.getLogger(__name__)


class UnverifiedInviter(Exception):
    """The inviter has not proven their own address yet."""


class MailNotSent(Exception):
    """The mail server refused the invitation or did not answer; nothing was saved."""


def inbox_key(address: str) -> str:
    # Hashed: cache keys are visible to whoever can read Redis.
    return hashlib.sha256(mailbox_key(address).encode()).hexdigest()[:32]


def window_s() -> int:
    return settings.INVITATION_LIMIT_WINDOW_MINUTES * 60


def limit_sender(org, inviter) -> None:
    """Per organization, then per inviter; RateLimited says which."""
    span = in_words(window_s()).removeprefix("1 ")  # "the last 24 hours", "the last hour"
    ratelimits.hit(f"invite-org:{org.pk}", limit=settings.INVITATION_LIMIT_PER_ORG, window_s=window_s(),
                   code="invitations_per_org", what=f"this organization already sent "
                   f"{settings.INVITATION_LIMIT_PER_ORG} invitations in the last {span}")
    ratelimits.hit(f"invite-by:{inviter.pk}", limit=settings.INVITATION_LIMIT_PER_INVITER, window_s=window_s(),
                   code="invitations_per_inviter", what=f"you already sent "
                   f"{settings.INVITATION_LIMIT_PER_INVITER} invitations in the last {span}")


def recipient_allowed(address: str) -> bool:
    """Counts one invitation mail to the inbox; False once the inbox had its share (all organizations)."""
    try:
        ratelimits.hit(f"invite-to:{inbox_key(address)}", limit=settings.INVITATION_LIMIT_PER_RECIPIENT,
                       window_s=window_s(), code="invitations_per_recipient", what="too many invitations")
    except ratelimits.RateLimited:
        return False
    return True


def invite(org, inviter, email: str, role: str) -> Invitation:
    """Save (or renew) the invitation and email it; raises UnverifiedInviter, RateLimited or MailNotSent."""
    if not inviter.email_verified:
        raise UnverifiedInviter("Verify your own email address before inviting anyone: use the link we sent you.")
    limit_sender(org, inviter)
    mail_it = recipient_allowed(email)
    try:
        with transaction.atomic():
            invitation = save_invitation(org, inviter, email, role)
            if mail_it:
                send_invitation(invitation, inviter)
    except MAIL_ERRORS as exc:
        logger.error("invitation to %s in org %s not sent: %s", email, org.pk, failure_reason(exc))
        raise MailNotSent(failure_reason(exc)) from exc
    if not mail_it:
        logger.warning("invitation %s saved but not emailed: the recipient limit is reached", invitation.pk)
    return invitation


def save_invitation(org, inviter, email: str, role: str) -> Invitation:
    pending = (Invitation.objects.select_for_update().filter(organization=org, email=email, accepted_at=None)
               .order_by("-created_at").first())
    if pending is None:
        return Invitation.objects.create(organization=org, email=email, role=role, invited_by=inviter)
    pending.role, pending.invited_by, pending.created_at = role, inviter, timezone.now()
    pending.save(update_fields=["role", "invited_by", "created_at"])
    return pending


def send_invitation(invitation: Invitation, inviter) -> None:
    link = settings.SITE_URL + reverse("orgs:accept", args=[invitation.token])
    send_templated("invitation", invitation.email, {"invitation": invitation, "org": invitation.organization,
                                                     "link": link, "inviter": inviter})
