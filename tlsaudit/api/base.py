"""What every API view shares: organization scoping, the order of the checks, rate-limit headers,
ETags, `?fields=`, CSV lists."""

from django.http import Http404
from django.utils.cache import patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics

from tlsaudit.api import conditional, context, query
from tlsaudit.api.csv import CSVRenderer, stream_csv, wants_csv
from tlsaudit.api.errors import BadQuery
from tlsaudit.api.throttling import rate_limit_headers

# What an answer depends on besides its URL (the key, the session's organization, JSON or CSV).
VARY = ("Accept", "Authorization", "X-Organization")


class OrgView(generics.GenericAPIView):
    """Querysets are filtered by the caller's organization, so other ids answer 404."""

    @property
    def org(self):
        return context.resolve(self.request)

    def initial(self, request, *args, **kwargs):
        """DRF's checks in another order: every request is counted by the throttle before anything can
        refuse it (a bad key, a read-only key, an unacceptable Accept), so every answer carries the
        RateLimit-* fields and failed requests use up the caller's (or, without a key, the IP's) rate.
        Unknown query parameters are refused last, once the caller is known to be allowed here."""
        self.format_kwarg = self.get_format_suffix(**kwargs)
        try:
            self.perform_authentication(request)
        finally:   # a bad key raised: still counted, per client IP
            self.check_throttles(request)
        request.accepted_renderer, request.accepted_media_type = self.negotiate(request)
        request.version, request.versioning_scheme = self.determine_version(request, *args, **kwargs)
        self.check_permissions(request)
        query.refuse_unknown(self, request)

    def negotiate(self, request):
        try:
            return self.perform_content_negotiation(request)
        except Http404:   # DRF's answer to an unknown ?format=: it is a bad query parameter
            formats = sorted({renderer.format for renderer in self.get_renderers()})
            raise BadQuery({"format": f"Use one of {', '.join(formats)}."}) from None

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        tally = getattr(request, "ratelimit", None)   # left by the throttle; absent when it did not count
        if tally is not None:
            rate_limit_headers(response, tally)
        patch_vary_headers(response, VARY)
        if conditional.is_taggable(request, response):
            response.add_post_render_callback(conditional.tag_when_rendered(request, self.org.pk))
        return response


class CsvListMixin:
    csv_name = "export"

    def list(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        if wants_csv(request):
            self.get_serializer()   # a bad ?fields= answers 400 now, not as a 500 halfway through the stream
            return stream_csv(lambda: self.csv_rows(queryset), f"{self.csv_name}.csv")
        page = self.paginate_queryset(queryset)
        serializer = self.get_serializer(page, many=True)
        return self.get_paginated_response(serializer.data)

    def csv_rows(self, queryset):
        ordering = self.paginator.ordering if self.paginator else ("-id",)
        ordering = (ordering,) if isinstance(ordering, str) else ordering
        for obj in queryset.order_by(*ordering).iterator(chunk_size=500):
            yield self.get_serializer(obj).data


def csv_export(list_view, operation_id: str, summary: str, tag: str):
    """The list as a CSV file at a path of its own (`sites.csv` beside `sites/`): the same filters and
    `fields`, every matching row, and only text/csv whatever Accept says. `?format=csv` on the list does the
    same, but one operation answering JSON or CSV is more than generated clients can type: this one is a
    string, the list a page."""
    filters = [p for p in query.documented_parameters(list_view(), "GET") if p.name not in ("page_size", "fields")]
    names = list(list_view.serializer_class().fields)
    fields = OpenApiParameter("fields", {"type": "array", "items": {"type": "string", "enum": names}}, style="form",
                              explode=False, description="The columns to export (default: all).")

    class Export(list_view):
        pagination_class = None
        renderer_classes = [CSVRenderer]
        http_method_names = ["get", "head", "options"]

        def perform_content_negotiation(self, request, force=False):
            return CSVRenderer(), CSVRenderer.media_type

        @extend_schema(operation_id=operation_id, summary=summary, tags=[tag], parameters=[*filters, fields],
                       responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The CSV file.")})
        def get(self, request, *args, **kwargs):
            return self.list(request)

    Export.__name__ = Export.__qualname__ = f"{list_view.__name__}Csv"
    return Export


class FieldsMixin:
    """`?fields=a,b` keeps only those top-level fields (unknown names answer 400)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        names = requested_fields(self.context.get("request"))
        if not names or self.context.get("all_fields"):
            return
        unknown = sorted(set(names) - set(self.fields))
        if unknown:
            raise BadQuery({"fields": f"Unknown field(s) {', '.join(map(query.shown_name, unknown[:20]))}; "
                                      f"choose from {', '.join(self.fields)}."})
        for name in set(self.fields) - set(names):
            self.fields.pop(name)


def requested_fields(request) -> list[str]:
    """`?fields=a,b`, or `?fields=a&fields=b` as generated clients send an array: the names asked for."""
    if request is None:
        return []
    return [name.strip() for value in request.query_params.getlist("fields") for name in value.split(",")
            if name.strip()]
