from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from tlsaudit.accounts import views as account_views
from tlsaudit.accounts.forms import EmailAuthenticationForm
from tlsaudit.core import views as core_views

auth_patterns = [
    path("signup/", account_views.signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(authentication_form=EmailAuthenticationForm,
                                                redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("verify/<str:token>/", account_views.verify_email, name="verify_email"),
    path("verify-resend/", account_views.resend_verification, name="resend_verification"),
    path("password/change/", account_views.PasswordChangeView.as_view(), name="password_change"),
    path("password/change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password/reset/", account_views.PasswordResetView.as_view(
        email_template_name="registration/password_reset_email.txt",
        html_email_template_name="registration/password_reset_email.html",
        # Links come from SITE_URL, never from the request's Host header.
        extra_email_context={"site_url": settings.SITE_URL}), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("password/reset/<uidb64>/<token>/", account_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
]

urlpatterns = [
    path("", core_views.home, name="home"),
    path("healthz", core_views.healthz, name="healthz"),
    path("accounts/", include(auth_patterns)),
    path("", include("tlsaudit.orgs.urls")),
    path("o/<slug:org>/sites/", include("tlsaudit.sites.urls")),
    path("o/<slug:org>/sites/<int:pk>/audits/", include("tlsaudit.audits.urls")),
    path("o/<slug:org>/sites/<int:pk>/performance/", include("tlsaudit.loadtests.urls")),
    path("o/<slug:org>/sites/<int:pk>/browser/", include("tlsaudit.probes.urls")),
    path("o/<slug:org>/alerts/", include("tlsaudit.alerts.urls")),
    path("o/<slug:org>/reports/", include("tlsaudit.reports.urls")),
    path("o/<slug:org>/audit-log/", core_views.audit_log, name="audit_log"),
    path("o/<slug:org>/", include("tlsaudit.monitoring.urls")),
    path("o/<slug:org>/api-keys/", include("tlsaudit.api.dashboard_urls")),
    path("api/v1/", include("tlsaudit.api.urls")),
    path("admin/", admin.site.urls),
]

handler404 = "tlsaudit.api.errors.page_not_found"
handler500 = "tlsaudit.api.errors.server_error"
