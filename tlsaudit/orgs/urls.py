from django.urls import path

from tlsaudit.orgs import views

app_name = "orgs"
urlpatterns = [
    path("new/", views.create_org, name="create"),
    path("invitations/<str:token>/", views.accept_invitation, name="accept"),
    path("<slug:org>/settings/", views.org_settings, name="settings"),
    path("<slug:org>/invite/", views.invite, name="invite"),
    path("<slug:org>/invitations/<int:pk>/revoke/", views.revoke_invitation, name="revoke_invitation"),
    path("<slug:org>/members/<int:pk>/role/", views.change_role, name="change_role"),
    path("<slug:org>/members/<int:pk>/remove/", views.remove_member, name="remove_member"),
]
