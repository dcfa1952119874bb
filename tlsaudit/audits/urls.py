from django.urls import path

from tlsaudit.audits import views

app_name = "audits"
urlpatterns = [
    path("", views.audit_now, name="run"),
    path("<int:audit_id>/", views.audit_detail, name="detail"),
    path("<int:audit_id>/retry/", views.audit_retry, name="retry"),
]
