"""CSV for every list (`?format=csv` or `Accept: text/csv`): all matching rows, streamed.

A CSV export is for spreadsheets, so it is not paginated; nested objects become dotted columns
and lists are joined with "; ". API_CSV_MAX_ROWS bounds one export.
"""

import csv
import io

from django.conf import settings
from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer


class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        # Lists stream through `stream_csv`; this renders single objects.
        rows = data if isinstance(data, list) else [data]
        flat = [flatten(row) for row in rows]
        columns = list(dict.fromkeys(name for row in flat for name in row))
        out = io.StringIO()
        writer = csv.DictWriter(out, columns)
        writer.writeheader()
        writer.writerows(flat)
        return out.getvalue().encode()


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
    text = str(value)
    # Spreadsheets run cells starting with these as formulas (CSV injection).
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not is_number(text) else text


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class Echo:
    def write(self, value):
        return value


def stream_csv(serialize_rows, filename: str) -> StreamingHttpResponse:
    """`serialize_rows` yields dicts; columns come from the first row."""

    def lines():
        writer, columns = None, None
        for count, row in enumerate(serialize_rows()):
            if count >= settings.API_CSV_MAX_ROWS:
                break
            flat = flatten(row)
            if writer is None:
                columns = list(flat)
                writer = csv.DictWriter(Echo(), columns, extrasaction="ignore")
                yield writer.writeheader()
            yield writer.writerow(flat)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
