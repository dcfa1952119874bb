from django.conf import settings
from rest_framework import exceptions
from rest_framework.pagination import CursorPagination

from tlsaudit.api.errors import BadQuery


class Cursor(CursorPagination):
    """Stable under inserts (new audits arrive every night), O(1) per page at any depth."""

    ordering = "-id"
    page_size_query_param = "page_size"

    def __init__(self):
        self.page_size = settings.API_PAGE_SIZE
        self.max_page_size = settings.API_MAX_PAGE_SIZE

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise BadQuery({"page_size": f"Use a whole number from 1 to {self.max_page_size}."})
        return int(raw)

    def decode_cursor(self, request):
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            raise BadQuery({"cursor": "This cursor is not valid: use the `next` or `previous` link as given."}) from None


class ByName(Cursor):
    ordering = ("hostname", "https_port", "id")
