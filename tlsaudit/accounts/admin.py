from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from tlsaudit.accounts.models import User


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "full_name", "email_verified", "is_staff", "is_active", "date_joined", "last_login"]
    list_filter = ["email_verified", "is_staff", "is_superuser", "is_active"]
    search_fields = ["email", "full_name"]
    fieldsets = [
        (None, {"fields": ["email", "password"]}),
        ("Profile", {"fields": ["full_name", "email_verified", "last_org"]}),
        ("Permissions", {"fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]
    raw_id_fields = ["last_org"]
