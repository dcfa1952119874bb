"""The one CSV writer of the product: the web's results tables (performance runs, browser probes)
and every API CSV (lists and single objects) write through `csv_lines`, so every cell passes
`domain.spreadsheet.cell_text` (no spreadsheet formula, numbers kept as numbers) and no caller
can forget it. Callers only decide the header and the rows."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from itertools import chain, islice

from django.http import Http404, HttpResponse, StreamingHttpResponse

from tlsaudit.domain.spreadsheet import cell_text

CONTENT_TYPE = "text/csv; charset=utf-8"


class _Echo:
    """A file whose write() returns the line, so csv.writer can feed a streaming response."""

    def write(self, value):
        return value


def csv_lines(header: list, rows: Iterable[Iterable]) -> Iterator[str]:
    """The header line, then one line per row; every cell, header included, neutralised."""
    writer = csv.writer(_Echo())
    yield writer.writerow([cell_text(name) for name in header])
    for row in rows:
        yield writer.writerow([cell_text(value) for value in row])


def csv_text(header: list, rows: Iterable[Iterable]) -> str:
    return "".join(csv_lines(header, rows))


def attachment(response: HttpResponse, filename: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def csv_download(tables: dict[str, tuple[list, list]], table: str, filename: str) -> HttpResponse:
    """One results table of a page as a file. `tables` maps a table name to (header, rows); an unknown name is a 404."""
    if table not in tables:
        raise Http404("No such table.")
    header, rows = tables[table]
    return attachment(HttpResponse(csv_text(header, rows), content_type=CONTENT_TYPE), filename)


def stream_records(records: Iterable[dict], filename: str, max_rows: int) -> StreamingHttpResponse:
    """Flat dicts streamed as a file, at most `max_rows` of them (no rows: an empty file). The first
    record names the columns; a later record's extra keys are dropped and its missing ones are empty."""

    def lines():
        limited = islice(records, max_rows)
        first = next(limited, None)
        if first is None:
            return
        columns = list(first)
        yield from csv_lines(columns, ([record.get(name, "") for name in columns] for record in chain([first], limited)))

    return attachment(StreamingHttpResponse(lines(), content_type=CONTENT_TYPE), filename)
