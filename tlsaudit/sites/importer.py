"""Bulk import: each row goes through SiteForm, so a line gets exactly the error a form would."""

import csv
import io
from dataclasses import dataclass

from tlsaudit.domain.netguard import parse_ip_literal
from tlsaudit.domain.spreadsheet import looks_like_formula
from tlsaudit.sites.forms import MAX_IMPORT_LINES, SiteForm
from tlsaudit.sites.services import save_from_form

# `service` last, so files written before it read as before; the hostname column may also carry
# the service as a URL (smtp://mail.example.com).
CSV_COLUMNS = ["hostname", "https_port", "http_port", "pinned_ip", "name", "tags", "service"]
ERROR = "_error"   # a row the parser already refused, with why


@dataclass
class ImportRow:
    line: int
    text: str
    added: bool
    message: str
    site: object = None


def rows_from_lines(text: str) -> list[tuple[int, str, dict]]:
    """`host[:port] [ip]` a line (blank lines and # comments skipped)."""
    rows = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            rows.append((number, line, fields_of_line(line)))
    return rows


def fields_of_line(line: str) -> dict:
    """The form data of one pasted line; a line with more than two words carries its own error."""
    words = line.split()
    shape = "a line is host[:port], then optionally a space and the IP to scan (a host name cannot contain spaces)"
    if len(words) > 2:
        return {"address": words[0], ERROR: f"{len(words)} words: {shape}."}
    if len(words) == 2 and parse_ip_literal(words[1]) is None:
        return {"address": words[0], ERROR: f"{words[1]!r} is not an IP address: {shape}."}
    return {"address": words[0], "pinned_ip": words[1] if len(words) == 2 else ""}


def rows_from_csv(text: str) -> list[tuple[int, str, dict]]:
    """A CSV file's sites. With a header row, columns are read by name in any order (the API's own
    `sites.csv` included, its other columns ignored); without one, by position (CSV_COLUMNS). The
    delimiter (`,`, `;` as spreadsheets write in much of Europe, or tab) is the one that splits the first
    line into the most cells."""
    lines = text.splitlines()
    first = next((line for line in lines if line.strip() and not line.lstrip().startswith("#")), "")
    delimiter = max(DELIMITERS, key=lambda d: len(next(csv.reader([first], delimiter=d), [])))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows, columns = [], None
    try:
        for cells in reader:
            number = reader.line_num   # the file's line, multi-line quoted cells counted
            cells = [unescaped(c.strip()) for c in cells]
            if not any(cells):
                continue
            if columns is None and not rows and header_columns(cells):
                columns = header_columns(cells)
                if "hostname" not in columns.values():
                    return [(number, delimiter.join(cells), {"address": "", ERROR: no_hostname_column(cells)})]
                continue
            values = ({columns[i]: c for i, c in enumerate(cells) if i in columns} if columns
                      else dict(zip(CSV_COLUMNS, cells)))
            if values.get("hostname", "").startswith("#"):
                continue   # a comment line (its host name cell starts with #)
            rows.append((number, delimiter.join(cells), form_data(values)))
    except csv.Error as exc:
        rows.append((reader.line_num, "", {"address": "", ERROR: f"The file cannot be read as CSV from line "
                                           f"{reader.line_num} on ({exc}): check its quotes, or save it again as CSV."}))
    return rows


DELIMITERS = (",", ";", "\t")   # a tie (one column) reads as a comma
# Header names a column may go by (lower case), beside CSV_COLUMNS' own.
HEADER_ALIASES = {"host": "hostname", "address": "hostname", "port": "https_port", "ip": "pinned_ip"}


def header_columns(cells: list[str]) -> dict[int, str]:
    """{cell index: column} when `cells` is a header row (any cell names a column), else {}."""
    known = {name: name for name in CSV_COLUMNS} | HEADER_ALIASES
    columns = {}
    for index, cell in enumerate(cells):
        column = known.get(cell.strip().lower().replace(" ", "_"))
        if column and column not in columns.values():
            columns[index] = column
    return columns


def no_hostname_column(cells: list[str]) -> str:
    return (f"The header row names no hostname column (it has {', '.join(repr(c) for c in cells)}): name the "
            f"column of host names \"hostname\" (the others: {', '.join(CSV_COLUMNS[1:])}, in any order).")


def form_data(values: dict) -> dict:
    get = lambda column: values.get(column, "")  # noqa: E731
    return {"address": get("hostname"), "https_port": get("https_port"), "http_port": get("http_port"),
            "pinned_ip": get("pinned_ip"), "name": get("name"), "tags_text": get("tags").replace(";", ","),
            "service": get("service").lower()}


def unescaped(cell: str) -> str:
    """A cell as it was before our own CSV writer guarded it (tlsaudit/domain/spreadsheet.cell_text), so
    an exported file imports as it was: the leading apostrophe before a formula character goes, and
    `\\|` is `|` again."""
    if cell.startswith("'") and looks_like_formula(cell[1:]):
        return cell[1:].replace("\\|", "|")
    return cell


def import_sites(org, user, rows, extra_tags=()) -> list[ImportRow]:
    if len(rows) > MAX_IMPORT_LINES:
        return [ImportRow(0, "", False, f"{len(rows)} lines is more than the {MAX_IMPORT_LINES} a single import "
                                        "takes: split the list.")]
    return [_import_row(org, user, number, text, data, extra_tags) for number, text, data in rows]


def _import_row(org, user, number, text, data, extra_tags) -> ImportRow:
    if ERROR in data:
        return ImportRow(number, text, False, data[ERROR])
    tags = ", ".join(filter(None, [data.get("tags_text", ""), *extra_tags]))
    form = SiteForm({**data, "tags_text": tags}, org=org, check_dns=False)
    if not form.is_valid():
        return ImportRow(number, text, False, _first_errors(form))
    site = save_from_form(form, created_by=user)
    where = f" (scanned at {site.pinned_ip})" if site.pinned_ip else ""
    return ImportRow(number, text, True, f"Added {site.display_origin}{where}.", site)


def rejected_lines(results: list[ImportRow], pasted: list[tuple[int, str, dict]]) -> str:
    """The pasted lines that were not added, as typed: they go back into the box to be fixed."""
    if len(results) < len(pasted):  # the whole import was refused (too many lines): keep every line
        return "\n".join(text for _, text, _ in pasted)
    return "\n".join(text for (_, text, _), result in zip(pasted, results) if not result.added)


def _first_errors(form) -> str:
    parts = []
    for field, errors in form.errors.items():
        label = "" if field in ("address", "__all__") else f"{form.fields[field].label}: "
        parts.append(label + " ".join(errors))
    return " ".join(parts)
