from django.contrib import admin
from django.db import models

from tlsaudit.alerts.models import AlertEvent, AlertSettings, Webhook, WebhookDelivery


@admin.register(AlertSettings)
class AlertSettingsAdmin(admin.ModelAdmin):
    list_display = ["organization", "recipients", "kinds"]
    search_fields = ["organization__name"]
    raw_id_fields = ["organization"]


@admin.register(AlertEvent)
class AlertEventAdmin(admin.ModelAdmin):
    list_display = ["title", "kind", "site", "organization", "created_at", "emailed_at", "email_error"]
    list_filter = ["kind", "organization"]
    search_fields = ["title", "dedupe_key", "site__hostname"]
    raw_id_fields = ["organization", "site", "audit"]
    readonly_fields = ["created_at"]


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ["url", "organization", "active", "created_at"]
    list_filter = ["active"]
    search_fields = ["url", "organization__name"]
    raw_id_fields = ["organization"]
    exclude = ["secret"]  # never displayed again after creation
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["webhook", "event", "attempt", "status", "response_code", "duration_ms", "created_at"]
    list_filter = ["status"]
    search_fields = ["webhook__url", "error"]
    raw_id_fields = ["webhook", "event", "first"]
