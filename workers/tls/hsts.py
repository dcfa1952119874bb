"""Parse a Strict-Transport-Security header ourselves (RFC 6797 section 6.1).

sslyze's parser raises on a quoted max-age (`max-age="31536000"`, which the RFC allows)
and then reports the whole http_headers command as a bug, so we read the header ourselves.
"""

from __future__ import annotations

import re

from tlsaudit.domain.scanfacts import Hsts

_DIRECTIVE = re.compile(r'^\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^\s;"]*)\s*)?$')


def parse_hsts(header: str | None) -> Hsts | None:
    """None when there is no header; `valid=False` when max-age is missing, repeated or not a number."""
    if header is None:
        return None
    directives = _split_directives(header)
    if directives is None:
        return Hsts(header=header, max_age=None, valid=False)
    max_age = _max_age(directives.get("max-age"))
    return Hsts(
        header=header,
        max_age=max_age,
        include_subdomains="includesubdomains" in directives,
        preload="preload" in directives,
        valid=max_age is not None,
    )


def _split_directives(header: str) -> dict[str, str | None] | None:
    """Directive name (lower-case) -> unquoted value; None when the header breaks the grammar.

    The RFC says a header with a repeated directive must be ignored entirely.
    """
    directives: dict[str, str | None] = {}
    for part in header.split(";"):
        if not part.strip():
            continue
        match = _DIRECTIVE.match(part)
        if match is None:
            return None
        name, value = match.group(1).lower(), match.group(2)
        if name in directives:
            return None
        directives[name] = _unquote(value)
    return directives


def _unquote(value: str | None) -> str | None:
    if value is not None and len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _max_age(value: str | None) -> int | None:
    if value is None or not value.isdigit():
        return None
    return int(value)
