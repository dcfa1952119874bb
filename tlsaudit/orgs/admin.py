from django.contrib import admin

from tlsaudit.orgs.models import Invitation, Membership, Organization


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "member_count", "site_count", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.memberships.count()

    @admin.display(description="sites")
    def site_count(self, obj):
        return obj.sites.count()


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "organization__name"]
    raw_id_fields = ["user", "organization"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "organization", "role", "invited_by", "created_at", "accepted_at"]
    list_filter = ["role", ("accepted_at", admin.EmptyFieldListFilter)]
    search_fields = ["email", "organization__name"]
    raw_id_fields = ["organization", "invited_by", "accepted_by"]
    readonly_fields = ["token"]
