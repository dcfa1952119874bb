from django.contrib import admin

from tlsaudit.core.models import AuditLogEntry, WorkerHeartbeat


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["name", "seen_at", "count"]
    readonly_fields = ["name", "seen_at", "count"]


@admin.register(AuditLogEntry)
class AuditLogEntryAdmin(admin.ModelAdmin):
    """Read-only: a trail that staff could edit in the admin would prove nothing."""

    list_display = ["created_at", "action", "actor_email", "target", "organization", "ip"]
    list_filter = ["action"]
    search_fields = ["actor_email", "target", "organization__name", "ip"]
    list_select_related = ["organization"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
