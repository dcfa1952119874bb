import hashlib
import logging

from axes.helpers import get_cool_off
from axes.utils import reset as reset_lockouts
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from tlsaudit.accounts.emails import read_verification_token, send_verification
from tlsaudit.accounts.forms import SignupForm
from tlsaudit.accounts.models import User
from tlsaudit.core import ratelimits
from tlsaudit.core.auditlog import record
from tlsaudit.core.clientip import client_ip
from tlsaudit.core.emails import MAIL_ERRORS, failure_reason
from tlsaudit.domain.mailbox import mailbox_key
from tlsaudit.domain.ratelimit import in_words

logger = logging.getLogger(__name__)


@sensitive_post_parameters("password")
def signup(request):
    if request.user.is_authenticated:
        return redirect("home")
    # An invitation's "Sign up with <email>" fills the address in (a value shown, never trusted: the
    # invitation is accepted only by the account with its address).
    form = SignupForm(request.POST or None, initial={"email": request.GET.get("email", "")[:254]})
    if request.method == "POST":
        try:
            limit_signups(request)
        except ratelimits.RateLimited as refusal:
            return too_many_signups(request, form, refusal)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        if mail_verification(request, user):
            messages.info(request, f"Welcome! We sent a verification link to {user.email}.")
        return redirect(safe_next(request, request.GET.get("next")))
    return render(request, "accounts/signup.html", {"form": form})


def limit_signups(request) -> None:
    """Every sign-up POST counts, valid or not: the form must not be a fast account-existence oracle."""
    ratelimits.hit(f"signup:{client_ip(request) or 'unknown'}", limit=settings.SIGNUP_LIMIT_PER_IP,
                   window_s=settings.SIGNUP_LIMIT_WINDOW_MINUTES * 60, code="signups_per_ip",
                   what="too many sign-up attempts from your network")


def limit_password_resets(request) -> None:
    window_s = settings.PASSWORD_RESET_LIMIT_WINDOW_MINUTES * 60
    ratelimits.hit(f"reset-ip:{client_ip(request) or 'unknown'}", limit=settings.PASSWORD_RESET_LIMIT_PER_IP,
                   window_s=window_s, code="password_resets_per_ip",
                   what="too many password reset requests from your network")
    # The address hashed: cache keys are visible to whoever can read Redis.
    typed = request.POST.get("email", "").strip().lower()
    ratelimits.hit(f"reset-email:{hashlib.sha256(typed.encode()).hexdigest()[:32]}",
                   limit=settings.PASSWORD_RESET_LIMIT_PER_ADDRESS, window_s=window_s,
                   code="password_resets_per_address", what="too many password reset emails asked for this address")


def too_many_signups(request, form, refusal):
    # Unbound, with what was typed: validating the refused attempt would answer "exists or not" anyway.
    form = SignupForm(initial={k: request.POST.get(k, "") for k in ("full_name", "email")})
    response = render(request, "accounts/signup.html", {"form": form, "refusal": refusal}, status=429)
    response["Retry-After"] = str(refusal.retry_after)
    return response


def locked_out(request, original_response=None, credentials=None):
    """django-axes' lockout page (AXES_LOCKOUT_CALLABLE): what happened, how long, what to do instead."""
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 0
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "wait": in_words(seconds) if seconds else ""}
    response = render(request, "registration/locked_out.html", context, status=429)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response


class PasswordChangeView(auth_views.PasswordChangeView):
    def form_valid(self, form):
        response = super().form_valid(form)
        record("user.password_changed", actor=form.user, target=form.user.email, request=self.request)
        return response


class PasswordResetView(auth_views.PasswordResetView):
    """Limited per client IP and per typed address: each request sends an email, so without a limit
    the form mails anyone's inbox on demand. The limits count every POST, valid or not, known
    address or not, so a refusal says nothing about whether an account exists."""

    def post(self, request, *args, **kwargs):
        try:
            limit_password_resets(request)
        except ratelimits.RateLimited as refusal:
            return self.refused(refusal)
        return super().post(request, *args, **kwargs)

    def refused(self, refusal):
        form = self.get_form_class()(initial={"email": self.request.POST.get("email", "")})
        response = self.render_to_response(self.get_context_data(form=form, refusal=refusal), status=429)
        response["Retry-After"] = str(refusal.retry_after)
        return response

    def form_valid(self, form):
        # The typed address, whether or not it has an account: the page answers the same either way.
        record("user.password_reset_requested", target=form.cleaned_data["email"], request=self.request)
        return super().form_valid(form)


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    def form_valid(self, form):
        response = super().form_valid(form)
        record("user.password_reset", actor=form.user, target=form.user.email, request=self.request)
        # Whoever proved the mailbox may sign in again at once, even from a locked-out address.
        reset_lockouts(username=form.user.email)
        return response


def verify_email(request, token):
    try:
        data = read_verification_token(token, settings.EMAIL_VERIFICATION_MAX_AGE)
    except signing.SignatureExpired:
        return render(request, "accounts/verify_failed.html", {"reason": "This link has expired."}, status=400)
    except signing.BadSignature:
        return render(request, "accounts/verify_failed.html", {"reason": "This link is not valid."}, status=400)
    updated = User.objects.filter(pk=data["id"], email=data["email"]).update(email_verified=True)
    if not updated:
        return render(request, "accounts/verify_failed.html",
                      {"reason": "This link belongs to an address that is no longer on an account."}, status=400)
    messages.success(request, "Your email address is verified.")
    return redirect("home" if request.user.is_authenticated else "login")


@login_required
@require_POST
def resend_verification(request):
    if request.user.email_verified:
        messages.info(request, "Your email address is already verified.")
    elif mail_verification(request, request.user):
        messages.info(request, f"We sent a new verification link to {request.user.email}.")
    return redirect(safe_next(request, request.POST.get("next")))


def mail_verification(request, user) -> bool:
    """Send the verification link unless a limit says no; True if it went out. A refusal or a mail
    server failure becomes an error message (and a log line): never a 500, never silence."""
    try:
        limit_verification_mail(request, user)
    except ratelimits.RateLimited as refusal:
        messages.error(request, refusal.message)
        return False
    try:
        send_verification(user)
    except MAIL_ERRORS as exc:
        logger.error("verification email to user %s not sent: %s", user.pk, failure_reason(exc))
        messages.error(request, "The verification email could not be sent (the mail server refused it or did not "
                                "answer). Use “Send it again” in a few minutes.")
        return False
    return True


def limit_verification_mail(request, user) -> None:
    """Per account, per client IP and per inbox (Victim@x and victim+1@x are one inbox): the link goes to
    an address the account holder typed, which need not be theirs until it is verified. The sign-up
    mail counts too. The refusal only speaks of the caller's own account and address."""
    window_s = settings.VERIFICATION_LIMIT_WINDOW_MINUTES * 60
    what = "we already sent several verification links recently"
    ratelimits.hit(f"verify-user:{user.pk}", limit=settings.VERIFICATION_LIMIT_PER_USER, window_s=window_s,
                   code="verifications_per_user", what=what)
    ratelimits.hit(f"verify-ip:{client_ip(request) or 'unknown'}", limit=settings.VERIFICATION_LIMIT_PER_IP,
                   window_s=window_s, code="verifications_per_ip",
                   what="too many verification emails were asked for from your network")
    ratelimits.hit(f"verify-inbox:{hashlib.sha256(mailbox_key(user.email).encode()).hexdigest()[:32]}",
                   limit=settings.VERIFICATION_LIMIT_PER_ADDRESS, window_s=window_s,
                   code="verifications_per_address", what=what)


def safe_next(request, url: str | None) -> str:
    """`url` if it stays on this site, else the dashboard: `next` must not send users elsewhere."""
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
        return url
    return "home"
