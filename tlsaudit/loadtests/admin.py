from django.contrib import admin

from tlsaudit.loadtests.models import LoadLimits, PerfRun, SiteVerification


@admin.register(SiteVerification)
class SiteVerificationAdmin(admin.ModelAdmin):
    list_display = ["site", "method", "verified_at", "last_checked_at"]
    list_filter = ["method"]
    search_fields = ["site__hostname", "public_id", "last_error"]
    raw_id_fields = ["site"]
    readonly_fields = ["public_id", "secret", "proved_for", "created_at"]


@admin.register(LoadLimits)
class LoadLimitsAdmin(admin.ModelAdmin):
    list_display = ["organization", "max_concurrency", "max_requests_per_run", "max_duration_s", "runs_per_day"]
    search_fields = ["organization__name", "organization__slug"]
    raw_id_fields = ["organization"]


@admin.register(PerfRun)
class PerfRunAdmin(admin.ModelAdmin):
    list_display = ["id", "site", "organization", "kind", "status", "created_at", "finished_at"]
    list_filter = ["kind", "status", "organization"]
    search_fields = ["site__hostname", "host", "ip", "error_message"]
    raw_id_fields = ["site", "organization", "requested_by"]
    readonly_fields = ["created_at", "started_at", "finished_at", "progress", "results", "summary"]
