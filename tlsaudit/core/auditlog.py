"""The security audit log: who did what to which organization, from where.

    from tlsaudit.core.auditlog import record
    record("api_key.created", org=org, actor=request.user, target=key.name, request=request, prefix=key.prefix)

Actions are dotted names (`user.login`, `member.role_changed`, `site.deleted`); core.actions lists the
ones the app writes, so the owner's filter offers them. `detail` must never carry secrets: keys
that name one (password, secret, token, key, …) are stored as "[redacted]" whatever the caller
passes, so a careless `record(..., secret=webhook.secret)` cannot leak into the table.
"""

import json
import logging
import re

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q

from tlsaudit.core.actions import ACCOUNT_ACTIONS
from tlsaudit.core.clientip import client_ip
from tlsaudit.core.models import AuditLogEntry

logger = logging.getLogger("tlsaudit.audit")

REDACTED = "[redacted]"
# Detail keys whose values are secret material; `*_prefix`, `*_id` and `*_name` stay readable.
SECRET_KEY_NAME = re.compile(r"(password|passwd|secret|token|credential|authorization|cookie|(^|_)key$)", re.I)


def record(action: str, *, org=None, actor=None, target: str = "", request=None, **detail):
    """Write one entry; the actor defaults to the request's signed-in user, the IP to the request's."""
    if actor is None and request is not None and getattr(request, "user", None) is not None:
        actor = request.user if request.user.is_authenticated else None
    entry = AuditLogEntry.objects.create(
        organization=org,
        actor=actor,
        actor_email=getattr(actor, "email", "") or "",
        action=action,
        target=str(target)[:255],
        ip=client_ip(request),
        detail=scrub(detail),
    )
    logger.info("audit %s actor=%s org=%s target=%r ip=%s", action, entry.actor_email or "-",
                getattr(org, "slug", "-"), entry.target, entry.ip or "-")
    return entry


def scrub(detail: dict) -> dict:
    """`detail` as JSON-safe data with every secret-named value replaced, at any depth."""
    return _redact(json.loads(json.dumps(detail, cls=_LenientEncoder)))


class _LenientEncoder(DjangoJSONEncoder):
    """Dates, decimals and UUIDs as Django writes them; anything else (a model, an enum) as its str()."""

    def default(self, o):
        try:
            return super().default(o)
        except TypeError:
            return str(o)


def _redact(value):
    if isinstance(value, dict):
        return {k: REDACTED if SECRET_KEY_NAME.search(str(k)) else _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def entries_for(org, action: str = ""):
    """What the owners of `org` see: the org's own entries, plus account events of its current members
    (failed sign-ins have no actor, so those match on the attempted email)."""
    members = org.memberships.values("user_id")
    emails = org.memberships.values("user__email")
    mine = Q(organization=org) | Q(organization=None, action__in=ACCOUNT_ACTIONS) & (
        Q(actor_id__in=members) | Q(target__in=emails))
    entries = AuditLogEntry.objects.filter(mine)
    if action:
        entries = entries.filter(action=action)
    return entries.order_by("-created_at", "-id")
