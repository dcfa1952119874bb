from django.contrib import admin

from tlsaudit.core.models import WorkerHeartbeat


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["name", "seen_at", "count"]
    readonly_fields = ["name", "seen_at", "count"]
