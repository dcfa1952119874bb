from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from tlsaudit.accounts.emails import read_verification_token, send_verification
from tlsaudit.accounts.forms import SignupForm
from tlsaudit.accounts.models import User


def signup(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        send_verification(user)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.info(request, f"Welcome! We sent a verification link to {user.email}.")
        return redirect(safe_next(request, request.GET.get("next")))
    return render(request, "accounts/signup.html", {"form": form})


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
    else:
        send_verification(request.user)
        messages.info(request, f"We sent a new verification link to {request.user.email}.")
    return redirect(safe_next(request, request.POST.get("next")))


def safe_next(request, url: str | None) -> str:
    """`url` if it stays on this site, else the dashboard: `next` must not send users elsewhere."""
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure()):
        return url
    return "home"
