"""Audit-log entries for API and key-management actions."""

from tlsaudit.api.auth import KeyPrincipal
from tlsaudit.core.auditlog import record


def log(request, action: str, *, org, target: str = "", **detail) -> None:
    principal = getattr(request, "user", None)
    if isinstance(principal, KeyPrincipal):
        # A key is not a user row: name it in the entry instead.
        record(action, org=org, actor=None, target=target, request=None, via=principal.email, **detail)
    else:
        record(action, org=org, target=target, request=request, **detail)
