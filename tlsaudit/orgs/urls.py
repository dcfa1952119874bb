from django.urls import path
from django.views.generic import RedirectView

from tlsaudit.orgs import views

# Everything of one organization lives under /o/<slug>/; /orgs/ keeps what belongs to
# no organization yet: creating one and accepting an invitation.
app_name = "orgs"
urlpatterns = [
    path("orgs/new/", views.create_org, name="create"),
    path("orgs/invitations/<str:token>/", views.accept_invitation, name="accept"),
    path("o/<slug:org>/settings/", views.org_settings, name="settings"),
    path("o/<slug:org>/invite/", views.invite, name="invite"),
    path("o/<slug:org>/invitations/<int:pk>/revoke/", views.revoke_invitation, name="revoke_invitation"),
    path("o/<slug:org>/members/<int:pk>/role/", views.change_role, name="change_role"),
    path("o/<slug:org>/members/<int:pk>/remove/", views.remove_member, name="remove_member"),
    # The settings page's former address, bookmarked and in emails sent before the move.
    path("orgs/<slug:org>/settings/", RedirectView.as_view(pattern_name="orgs:settings", permanent=True,
                                                           query_string=True)),
]
