"""PDF reports: list, ask for one (a site's or the portfolio), its status, the PDF once printed."""

from django.http import FileResponse, Http404, HttpResponseNotModified
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from tlsaudit.api import conditional
from tlsaudit.api.base import CsvListMixin, OrgView
from tlsaudit.api.errors import Conflict
from tlsaudit.api.idempotency import idempotent
from tlsaudit.api.serializers.common import ErrorSerializer
from tlsaudit.api.serializers.reports import ReportRequestSerializer, ReportSerializer
from tlsaudit.api.views.common import (
    FIELDS_PARAM,
    ID_SCHEMA,
    IDEMPOTENCY_PARAM,
    NOT_QUEUED,
    PAGE_SIZE_PARAM,
    accepted,
    acting_user,
    choice,
    over_quota,
    whole_number,
)
from tlsaudit.core.ratelimits import RateLimited
from tlsaudit.reports import services
from tlsaudit.reports.models import Report

# As the dashboard's "Download PDF" buttons: every role, viewers (sessions) included; a read-only key writes nothing.
REQUEST_ACTION = "request_reports"
BYTES = ("application/pdf", "application/octet-stream")


def reports_of(org):
    return Report.objects.filter(organization=org).select_related("site", "organization")


class ReportList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = ReportSerializer
    csv_name = "reports"
    write_action = REQUEST_ACTION

    def get_queryset(self):
        params = self.request.query_params
        reports = reports_of(self.org)
        status = choice(params, "status", Report.Status.values)
        if status:
            reports = reports.filter(status=status)
        kind = choice(params, "kind", Report.Kind.values)
        if kind:
            reports = reports.filter(kind=kind)
        site = whole_number(params, "site")
        return reports.filter(site_id=site) if site is not None else reports

    @extend_schema(summary="List the organization's PDF reports, newest first",
                   parameters=[OpenApiParameter("status", str, enum=list(Report.Status.values)),
                               OpenApiParameter("kind", str, enum=list(Report.Kind.values)),
                               OpenApiParameter("site", ID_SCHEMA, description="Only reports of this site (its id)."),
                               PAGE_SIZE_PARAM, FIELDS_PARAM])
    def get(self, request):
        return self.list(request)

    @extend_schema(summary="Ask for a PDF report of a site, or of the whole organization",
                   description="Send `{\"site\": <id>}` for a site's report or `{}` for the portfolio report. "
                               "Answers 202 with the queued report and its URL in `Location`; once its status is "
                               "done, `download_url` gives the PDF. If the same report is already being made, "
                               "that one is returned (still 202) with `Already-Active: true`.",
                   request=ReportRequestSerializer, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: OpenApiResponse(ReportSerializer, description="The queued report."),
                              (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request):
        body = ReportRequestSerializer(data=request.data, org=self.org)
        body.is_valid(raise_exception=True)
        try:
            report, created = services.queue_report(self.org, site=body.validated_data.get("site"),
                                                    user=acting_user(request))
        except RateLimited as limited:
            raise over_quota(limited.code, limited.message, limited.retry_after) from None
        data = ReportSerializer(reports_of(self.org).get(pk=report.pk),
                                context={"request": request, "all_fields": True}).data
        return accepted(data, data["url"], existing=not created)


class ReportDetail(OrgView):
    serializer_class = ReportSerializer

    def get_queryset(self):
        return reports_of(self.org)

    @extend_schema(summary="A PDF report: its status, and its download URL once printed", parameters=[FIELDS_PARAM])
    def get(self, request, pk):
        return Response(self.get_serializer(self.get_object()).data)


class PDFRenderer(BaseRenderer):
    media_type = "application/pdf"
    format = "pdf"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data


class BytesRenderer(PDFRenderer):
    """The same PDF for a client that asks for application/octet-stream (generated clients read that as bytes)."""

    media_type = "application/octet-stream"
    format = "bin"


class ReportPdf(OrgView):
    serializer_class = ReportSerializer
    renderer_classes = [PDFRenderer, BytesRenderer, JSONRenderer]

    @extend_schema(summary="Download a report's PDF",
                   description="application/pdf once the report is done; 409 `report_not_ready` while it is queued "
                               "or being printed, 409 `report_failed` if printing failed (ask for a new one).",
                   responses={(200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY, description="The PDF."),
                              (200, "application/octet-stream"): OpenApiResponse(
                                  OpenApiTypes.BINARY, description="The PDF, for a client that asks for bytes."),
                              (409, "application/json"): OpenApiResponse(ErrorSerializer,
                                                                         description="Not printed (yet).")})
    def get(self, request, pk):
        report = get_object_or_404(reports_of(self.org), pk=pk)
        if report.status == Report.Status.FAILED:
            raise Conflict(f"This report could not be printed: {report.error} Ask for a new one.",
                           code="report_failed")
        if report.status != Report.Status.DONE:
            raise Conflict(f"This report is {report.status}: poll {reverse('api:report-detail', args=[report.pk])} "
                           "until its status is done.",
                           code="report_not_ready")
        media_type = request.accepted_media_type if request.accepted_media_type in BYTES else "application/pdf"
        # A printed report never changes: its tag comes from what identifies the file, not from reading it.
        etag = conditional.etag_for(self.org.pk, media_type, f"{report.pk}:{report.finished_at}:{report.size}".encode())
        if conditional.matches(request, etag):
            return tagged(HttpResponseNotModified(), etag)
        try:
            handle = report.file.open("rb")
        except (FileNotFoundError, ValueError):
            raise Http404("The PDF file is gone: ask for a new report.") from None
        return tagged(FileResponse(handle, as_attachment=True, filename=report.filename, content_type=media_type),
                      etag)

    def finalize_response(self, request, response, *args, **kwargs):
        # Errors are JSON whatever the client accepted: a PDF renderer cannot draw them.
        if isinstance(response, Response):
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


def tagged(response, etag: str):
    response["ETag"] = etag
    return response
