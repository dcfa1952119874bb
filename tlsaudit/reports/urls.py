from django.urls import path

from tlsaudit.reports import views

app_name = "reports"
urlpatterns = [
    path("branding/", views.branding, name="branding"),
    path("digests/", views.digest_settings, name="digests"),
    path("digests/send/", views.digest_send_now, name="digest_send_now"),
    path("portfolio/", views.request_portfolio, name="request_portfolio"),
    path("sites/<int:pk>/", views.request_site, name="request_site"),
    path("<int:report_id>/", views.report_detail, name="detail"),
    path("<int:report_id>/download/", views.download, name="download"),
]
