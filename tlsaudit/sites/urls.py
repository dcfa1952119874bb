from django.urls import path

from tlsaudit.sites import views

app_name = "sites"
urlpatterns = [
    path("", views.site_list, name="list"),
    path("add/", views.site_add, name="add"),
    path("import/", views.site_import, name="import"),
    path("audit/", views.site_audit_bulk, name="audit_bulk"),
    path("audit/waiting/cancel/", views.site_audit_cancel_waiting, name="audit_cancel_waiting"),
    path("<int:pk>/", views.site_detail, name="detail"),
    path("<int:pk>/edit/", views.site_edit, name="edit"),
    path("<int:pk>/delete/", views.site_delete, name="delete"),
]
