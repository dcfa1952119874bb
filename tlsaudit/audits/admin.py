from django.contrib import admin
from django.core.paginator import Paginator
from django.utils.functional import cached_property

from tlsaudit.audits.models import Audit, AuditCertificate, AuditFinding, AuditSuite, RenewalInfo, WaitingAudit
from tlsaudit.domain.diff import GRADE_ORDER


class FindingInline(admin.TabularInline):
    model = AuditFinding
    extra = 0
    fields = ["finding_id", "severity", "status", "title", "evidence"]
    readonly_fields = fields
    can_delete = False


# The changelist pages at most this many of the newest matching audits; older ones are reached by the
# filters and the search (an OFFSET into a year of history is a scan of everything before it).
ADMIN_PAGEABLE_AUDITS = 10_000


class GradeFilter(admin.SimpleListFilter):
    """The grades that exist in the rules, not `SELECT DISTINCT grade` over every audit (73 ms at 941 k)."""
    title, parameter_name = "grade", "grade"

    def lookups(self, request, model_admin):
        return [(grade, grade) for grade in GRADE_ORDER] + [("none", "no grade (failed or running)")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(grade="")
        return queryset.filter(grade=value) if value in GRADE_ORDER else queryset


class NewestPaginator(Paginator):
    """Counts no further than ADMIN_PAGEABLE_AUDITS: the paginator's COUNT(*) over the whole table took 57 ms
    at 941 k audits and grows with every night; the last page's OFFSET took 3 s."""

    @cached_property
    def count(self):
        return self.object_list[:ADMIN_PAGEABLE_AUDITS].count()


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ["id", "site", "organization", "status", "grade", "score", "trigger", "created_at", "duration_s"]
    list_filter = ["status", GradeFilter, "trigger", "organization"]
    # Newest first by the primary key (a backward index scan that stops at the page), not by created_at over
    # the whole table with every column (a parallel scan and top-N sort: 776 ms at 941 k audits).
    ordering = ["-id"]
    paginator = NewestPaginator
    show_full_result_count = False   # no second COUNT(*) of the unfiltered table next to a filtered one
    list_select_related = ["site", "organization"]

    def get_queryset(self, request):
        # The stored JSON (facts, sslyze's raw output, the report) is tens of KB an audit: not for a list.
        queryset = super().get_queryset(request)
        return queryset.defer("raw", "facts", "report", "mozilla_raw") if request.resolver_match.url_name == \
            "audits_audit_changelist" else queryset
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


@admin.register(WaitingAudit)
class WaitingAuditAdmin(admin.ModelAdmin):
    list_display = ["site", "organization", "trigger", "requested_by", "requested_at"]
    list_filter = ["trigger"]
    search_fields = ["site__hostname", "organization__name"]
    raw_id_fields = ["site", "organization", "requested_by"]
    ordering = ["requested_at", "id"]
