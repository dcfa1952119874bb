from django.contrib import admin

from tlsaudit.sites.models import Site, Tag
from tlsaudit.sites.services import site_added


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["hostname", "service", "https_port", "http_port", "pinned_ip", "name", "organization", "created_at"]
    list_filter = ["organization", "service", "tags"]
    search_fields = ["hostname", "name", "organization__name"]
    raw_id_fields = ["organization", "created_by"]
    filter_horizontal = ["tags"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:
            site_added(obj)


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["name", "organization"]
    search_fields = ["name"]
    list_filter = ["organization"]
