from django.urls import path

from tlsaudit.api import dashboard

app_name = "api_keys"

urlpatterns = [
    path("", dashboard.key_list, name="list"),
    path("new/", dashboard.key_create, name="create"),
    path("<int:pk>/revoke/", dashboard.key_revoke, name="revoke"),
]
