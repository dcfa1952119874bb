"""Sign-in events into the security audit log, and the login name django-axes counts failures by."""

from axes.signals import user_locked_out
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from tlsaudit.core.auditlog import record


def login_username(request, credentials=None) -> str:
    """The attempted email in lower case: `Alice@X` and `alice@x` share one failure counter."""
    data = credentials if credentials else getattr(request, "POST", {})
    return str(data.get("username") or data.get("email") or "").strip().lower()[:254]


@receiver(user_logged_in, dispatch_uid="auditlog_login")
def log_login(sender, request, user, **kwargs):
    record("user.login", actor=user, target=user.email, request=request)


@receiver(user_login_failed, dispatch_uid="auditlog_login_failed")
def log_login_failure(sender, credentials, request=None, **kwargs):
    # Django has already masked the password in `credentials`; we keep only the attempted email.
    record("user.login_failed", target=login_username(request, credentials), request=request)


@receiver(user_logged_out, dispatch_uid="auditlog_logout")
def log_logout(sender, request, user, **kwargs):
    if user is not None:
        record("user.logout", actor=user, target=user.email, request=request)


@receiver(user_locked_out, dispatch_uid="auditlog_locked_out")
def log_lockout(sender, request, username, ip_address, **kwargs):
    record("user.locked_out", target=username or "", request=request)
