from django.contrib import admin

from tlsaudit.audits.models import Audit, AuditCertificate, AuditFinding, AuditSuite, RenewalInfo


class FindingInline(admin.TabularInline):
    model = AuditFinding
    extra = 0
    fields = ["finding_id", "severity", "status", "title", "evidence"]
    readonly_fields = fields
    can_delete = False


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ["id", "site", "organization", "status", "grade", "score", "trigger", "created_at", "duration_s"]
    list_filter = ["status", "grade", "trigger", "organization"]
    search_fields = ["site__hostname", "host", "ip", "error_message"]
    raw_id_fields = ["site", "organization", "requested_by"]
    readonly_fields = ["created_at", "started_at", "finished_at", "progress", "facts", "raw", "mozilla_raw", "report"]
    inlines = [FindingInline]


@admin.register(AuditFinding)
class AuditFindingAdmin(admin.ModelAdmin):
    list_display = ["finding_id", "severity", "status", "audit"]
    list_filter = ["status", "severity"]
    search_fields = ["finding_id", "title"]
    raw_id_fields = ["audit"]


@admin.register(AuditSuite)
class AuditSuiteAdmin(admin.ModelAdmin):
    list_display = ["name", "protocol", "key_exchange", "bits", "strength", "audit"]
    list_filter = ["protocol", "strength", "forward_secret", "aead"]
    search_fields = ["name", "openssl_name"]
    raw_id_fields = ["audit"]


@admin.register(AuditCertificate)
class AuditCertificateAdmin(admin.ModelAdmin):
    list_display = ["subject", "issuer", "not_after", "key_type", "key_bits", "audit"]
    list_filter = ["key_type"]
    search_fields = ["subject", "issuer", "fingerprint_sha256"]
    raw_id_fields = ["audit"]


@admin.register(RenewalInfo)
class RenewalInfoAdmin(admin.ModelAdmin):
    list_display = ["site", "ca_name", "status", "window_start", "window_end", "earlier_from_end", "fetched_at"]
    list_filter = ["status", "ca_name"]
    search_fields = ["site__hostname", "fingerprint", "cert_id"]
    raw_id_fields = ["site"]
    readonly_fields = ["fetched_at"]
