"""Unknown query parameters answer 400 listing the accepted ones: a typo in a filter (`?grdae=F`) must
not quietly return every row.

An operation accepts exactly what the schema documents for it, read from the same declarations: the
query parameters of its `@extend_schema`, `format` where it renders more than one format, and `cursor`
and `page_size` on a paginated list. tests/api/test_contract.py checks the two agree for every operation.
"""

from __future__ import annotations

import re
from functools import lru_cache

from drf_spectacular.utils import OpenApiParameter
from rest_framework.mixins import ListModelMixin

from tlsaudit.api.errors import BadQuery

SHOWN_NAME = re.compile(r"[A-Za-z0-9_.\-\[\]]")
MAX_SHOWN = 5          # unknown names listed in one error
MAX_NAME_CHARS = 40


def refuse_unknown(view, request) -> None:
    accepted = accepted_by(type(view), request.method)
    unknown = [name for name in request.query_params if name not in accepted]
    if not unknown:
        return
    listed = ", ".join(sorted(accepted)) or "none"
    shown = [shown_name(name) for name in unknown[:MAX_SHOWN]]
    raise BadQuery({name: f"Unknown query parameter; this operation accepts: {listed}." for name in shown})


def shown_name(name: str) -> str:
    """The name as a client can recognise it, without anything a page could run: characters other than
    letters, digits and `_.-[]` are written as \\uXXXX, and long names are cut."""
    cut = name[:MAX_NAME_CHARS]
    shown = "".join(c if SHOWN_NAME.fullmatch(c) else f"\\u{ord(c):04x}" for c in cut)
    return shown + ("…" if len(name) > MAX_NAME_CHARS else "") if shown else "(empty name)"


@lru_cache(maxsize=None)
def accepted_by(view_class, method: str) -> frozenset[str]:
    view = view_class()
    names = set(documented(view, method))
    formats = {getattr(renderer, "format", None) for renderer in view.renderer_classes}
    if len(formats) > 1:
        names.add("format")
    if method in ("GET", "HEAD") and isinstance(view, ListModelMixin) and view.pagination_class:
        names |= {"cursor", "page_size"}
    return frozenset(names)


def documented(view, method: str) -> list[str]:
    return [p.name for p in documented_parameters(view, method) if p.location == OpenApiParameter.QUERY]


def documented_parameters(view, method: str) -> list[OpenApiParameter]:
    """The parameters of the handler's @extend_schema (drf-spectacular keeps the decorator's schema class
    on the handler, as `kwargs["schema"]`, for its generator; we ask it the same way)."""
    handler = getattr(view, "get" if method == "HEAD" else method.lower(), None)
    schema_class = getattr(handler, "kwargs", {}).get("schema")
    if schema_class is None:
        return []
    schema = schema_class()
    schema.view, schema.method = view, method.upper()
    view.request, view.kwargs = None, {}
    return [p for p in schema.get_override_parameters() if isinstance(p, OpenApiParameter)]
