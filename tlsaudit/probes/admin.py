from django.contrib import admin

from tlsaudit.probes.models import Probe


@admin.register(Probe)
class ProbeAdmin(admin.ModelAdmin):
    list_display = ["id", "site", "organization", "status", "loads_done", "loads_total", "created_at", "duration_s"]
    list_filter = ["status", "organization"]
    search_fields = ["site__hostname", "host", "ip", "error_message"]
    raw_id_fields = ["site", "organization", "requested_by"]
    readonly_fields = ["created_at", "started_at", "finished_at", "result", "summary"]
