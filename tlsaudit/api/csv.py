"""CSV for every list (`?format=csv` or `Accept: text/csv`): all matching rows, streamed.

A CSV export is for spreadsheets, so it is not paginated; nested objects become dotted columns
and lists are joined with "; ". API_CSV_MAX_ROWS bounds one export. The writing itself (formula
neutralisation included) is the product's one CSV writer, tlsaudit/core/csvexport.py.
"""

from django.conf import settings
from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from tlsaudit.core.csvexport import csv_text, stream_records


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        # Lists stream through `stream_csv`; this renders single objects.
        rows = data if isinstance(data, list) else [data]
        flat = [flatten(row) for row in rows]
        columns = list(dict.fromkeys(name for row in flat for name in row))
        return csv_text(columns, ([row.get(name, "") for name in columns] for row in flat)).encode()


def wants_csv(request) -> bool:
    renderer = getattr(request, "accepted_renderer", None)
    return getattr(renderer, "format", "") == "csv"


def flatten(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        flat = {}
        for key, inner in value.items():
            flat.update(flatten(inner, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        return {prefix.rstrip("."): "; ".join(cell(item) for item in value)}
    return {prefix.rstrip("."): cell(value)}


def cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return " ".join(f"{k}={cell(v)}" for k, v in value.items())
    return str(value)


def stream_csv(serialize_rows, filename: str) -> StreamingHttpResponse:
    """`serialize_rows()` yields the serialized objects; columns come from the first one."""
    return stream_records((flatten(row) for row in serialize_rows()), filename, settings.API_CSV_MAX_ROWS)
