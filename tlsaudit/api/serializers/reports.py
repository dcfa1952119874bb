"""PDF reports in the API: ask for one (a site's, or the organization's portfolio), poll, download."""

from rest_framework import serializers

from tlsaudit.api.base import FieldsMixin
from tlsaudit.api.links import object_url
from tlsaudit.reports.models import Report
from tlsaudit.sites.models import Site


class ReportSerializer(FieldsMixin, serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    site_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField(help_text="The PDF, once `status` is done; else null.")
    filename = serializers.CharField(read_only=True, help_text="The PDF's file name when downloaded.")

    class Meta:
        model = Report
        fields = ["id", "url", "kind", "site", "site_url", "status", "created_at", "finished_at", "size", "pages",
                  "render_s", "error", "filename", "download_url"]
        read_only_fields = fields
        extra_kwargs = {"site": {"help_text": "The site's id; null for a portfolio report."},
                        "size": {"help_text": "Bytes of the PDF."}}

    def get_url(self, report) -> str:
        return object_url("api:report-detail", report.pk)

    def get_site_url(self, report) -> str | None:
        return object_url("api:site-detail", report.site_id) if report.site_id else None

    def get_download_url(self, report) -> str | None:
        return object_url("api:report-pdf", report.pk) if report.status == Report.Status.DONE else None



class ReportRequestSerializer(serializers.Serializer):
    site = serializers.PrimaryKeyRelatedField(queryset=Site.objects.none(), required=False, allow_null=True,
                                              help_text="A site's id for its report; leave out (or null) for the "
                                                        "organization's portfolio report.")

    def __init__(self, *args, org=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["site"].queryset = Site.objects.filter(organization=org)
