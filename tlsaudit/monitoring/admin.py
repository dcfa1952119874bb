from django.contrib import admin

from tlsaudit.monitoring.models import OrgSchedulePolicy, ScheduledRun, SiteSchedule


@admin.register(OrgSchedulePolicy)
class OrgSchedulePolicyAdmin(admin.ModelAdmin):
    list_display = ["organization", "window_start_hour", "window_end_hour"]
    search_fields = ["organization__name", "organization__slug"]
    raw_id_fields = ["organization"]


@admin.register(SiteSchedule)
class SiteScheduleAdmin(admin.ModelAdmin):
    list_display = ["site", "frequency", "hour", "minute", "weekday", "periodic_task"]
    list_filter = ["frequency"]
    search_fields = ["site__hostname", "site__name"]
    raw_id_fields = ["site", "periodic_task"]


@admin.register(ScheduledRun)
class ScheduledRunAdmin(admin.ModelAdmin):
    list_display = ["site", "run_date", "audit", "caught_up", "created_at"]
    list_filter = ["caught_up", "run_date"]
    search_fields = ["site__hostname"]
    raw_id_fields = ["site", "audit"]
