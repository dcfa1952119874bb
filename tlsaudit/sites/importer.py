"""Bulk import: each row goes through SiteForm, so a line gets exactly the error a form would."""

import csv
import io
from dataclasses import dataclass

from django.db import transaction

from tlsaudit.sites.forms import MAX_IMPORT_LINES, SiteForm

CSV_COLUMNS = ["hostname", "https_port", "http_port", "pinned_ip", "name", "tags"]


@dataclass
class ImportRow:
    line: int
    text: str
    added: bool
    message: str
    site: object = None


def rows_from_lines(text: str) -> list[tuple[int, str, dict]]:
    rows = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            rows.append((number, line, {"address": line}))
    return rows


def rows_from_csv(text: str) -> list[tuple[int, str, dict]]:
    reader = csv.reader(io.StringIO(text))
    rows = []
    for number, cells in enumerate(reader, start=1):
        cells = [c.strip() for c in cells]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if number == 1 and cells[0].lower() in ("hostname", "host", "address"):
            continue  # header row
        values = dict(zip(CSV_COLUMNS, cells + [""] * len(CSV_COLUMNS)))
        rows.append((number, ",".join(cells), {
            "address": values["hostname"], "https_port": values["https_port"], "http_port": values["http_port"],
            "pinned_ip": values["pinned_ip"], "name": values["name"], "tags_text": values["tags"].replace(";", ","),
        }))
    return rows


def import_sites(org, user, rows, extra_tags=()) -> list[ImportRow]:
    if len(rows) > MAX_IMPORT_LINES:
        return [ImportRow(0, "", False, f"{len(rows)} lines is more than the {MAX_IMPORT_LINES} a single import "
                                        "takes: split the list.")]
    return [_import_row(org, user, number, text, data, extra_tags) for number, text, data in rows]


def _import_row(org, user, number, text, data, extra_tags) -> ImportRow:
    tags = ", ".join(filter(None, [data.get("tags_text", ""), *extra_tags]))
    form = SiteForm({**data, "tags_text": tags}, org=org, check_dns=False)
    if not form.is_valid():
        return ImportRow(number, text, False, _first_errors(form))
    with transaction.atomic():
        site = form.save(commit=False)
        site.created_by = user
        site.save()
        form.save_tags(site)
    return ImportRow(number, text, True, f"Added {site.origin}.", site)


def _first_errors(form) -> str:
    parts = []
    for field, errors in form.errors.items():
        label = "" if field in ("address", "__all__") else f"{form.fields[field].label}: "
        parts.append(label + " ".join(errors))
    return " ".join(parts)
