from django.urls import path

from tlsaudit.probes import views

app_name = "probes"
urlpatterns = [
    path("", views.browser_overview, name="overview"),
    path("probes/", views.probe_start, name="start"),
    path("probes/<int:probe_id>/", views.probe_detail, name="detail"),
    path("probes/<int:probe_id>/<slug:table>.csv", views.probe_csv, name="csv"),
]
