from django.urls import path

from tlsaudit.loadtests import views

app_name = "loadtests"
urlpatterns = [
    path("", views.perf_overview, name="overview"),
    path("verification/", views.verification_page, name="verification"),
    path("verification/check/", views.verification_check, name="verification_check"),
    path("runs/", views.run_start, name="start"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/stop/", views.run_stop, name="stop"),
    path("runs/<int:run_id>/<slug:table>.csv", views.run_csv, name="csv"),
]
