from django.contrib import admin

from tlsaudit.reports.models import DigestDelivery, Report, ReportBranding, ReportSchedule


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["id", "organization", "site", "kind", "status", "size", "pages", "created_at"]
    list_filter = ["kind", "status", "organization"]
    search_fields = ["site__hostname", "organization__name", "error"]
    raw_id_fields = ["organization", "site", "requested_by"]
    readonly_fields = ["created_at", "finished_at"]


@admin.register(ReportBranding)
class ReportBrandingAdmin(admin.ModelAdmin):
    list_display = ["organization", "accent_color"]
    search_fields = ["organization__name"]
    raw_id_fields = ["organization"]




@admin.register(ReportSchedule)
class ReportScheduleAdmin(admin.ModelAdmin):
    list_display = ["organization", "frequency", "last_sent_period"]
    list_filter = ["frequency"]
    search_fields = ["organization__name"]
    raw_id_fields = ["organization"]


@admin.register(DigestDelivery)
class DigestDeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "organization", "period", "recipient", "status", "attempts", "updated_at"]
    list_filter = ["status", "period"]
    search_fields = ["recipient", "organization__name", "error"]
    raw_id_fields = ["organization", "schedule", "report"]
    readonly_fields = ["created_at", "updated_at"]
