"""What every API view shares: organization scoping, `?fields=`, CSV lists."""

from rest_framework import generics

from tlsaudit.api import context
from tlsaudit.api.csv import stream_csv, wants_csv
from tlsaudit.api.errors import BadQuery
from tlsaudit.api.throttling import rate_limit_headers


class OrgView(generics.GenericAPIView):
    """Querysets are filtered by the caller's organization, so other ids answer 404."""

    @property
    def org(self):
        return context.resolve(self.request)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        tally = getattr(request, "ratelimit", None)   # left by the throttle; absent when it did not count
        if tally is not None:
            rate_limit_headers(response, tally)
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


class FieldsMixin:
    """`?fields=a,b` keeps only those top-level fields (unknown names answer 400)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        wanted = request.query_params.get("fields", "") if request is not None else ""
        if not wanted.strip() or self.context.get("all_fields"):
            return
        names = [name.strip() for name in wanted.split(",") if name.strip()]
        unknown = sorted(set(names) - set(self.fields))
        if unknown:
            raise BadQuery({"fields": f"Unknown field(s) {', '.join(unknown)}; "
                                      f"choose from {', '.join(self.fields)}."})
        for name in set(self.fields) - set(names):
            self.fields.pop(name)
