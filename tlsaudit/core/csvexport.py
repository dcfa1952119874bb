"""One CSV download for every results table (performance runs, browser probes)."""

import csv

from django.http import Http404, HttpResponse


def csv_download(tables: dict[str, tuple[list, list]], table: str, filename: str) -> HttpResponse:
    """`tables` maps a table name to (header, rows); an unknown name is a 404."""
    if table not in tables:
        raise Http404("No such table.")
    header, rows = tables[table]
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows(rows)
    return response
