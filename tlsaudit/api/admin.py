from django.contrib import admin

from tlsaudit.api.models import ApiKey, IdempotencyRecord


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "scope", "display_prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["scope"]
    search_fields = ["name", "lookup", "organization__name"]
    # The digest is useless to a reader and the plaintext was never stored.
    exclude = ["digest"]
    readonly_fields = ["lookup", "created_at", "last_used_at"]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(admin.ModelAdmin):
    list_display = ["key", "organization", "status_code", "created_at"]
