"""OpenAPI details drf-spectacular cannot infer, so the schema says exactly what the server sends:

- the Bearer key scheme and the session;
- the error responses every operation can give, all with the Error schema;
- response headers: RateLimit-* on every answer, Retry-After, ETag (and 304) on GETs, Location on 201/202,
  Idempotency-Replayed where an Idempotency-Key is taken, Already-Active where work may already run;
- bodies that are not JSON as strings: CSV as text, the PDF as binary;
- `?fields=` as the array of field names it is (the names the 200 answer can carry), so a typo is
  schema-invalid as it is a 400.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERROR_REF = {"$ref": "#/components/schemas/Error"}
COMMON_ERRORS = {
    "400": "Malformed request: bad JSON, query parameter (unknown ones included) or cursor.",
    "401": "No key, or a key that is not valid or was revoked.",
    "403": "A read-only key, or a role that cannot do this.",
    "404": "No such object in your organization.",
    "405": "Method not allowed.",
    "406": "Ask for application/json or text/csv.",
    "415": "Send application/json.",
    "429": "Too many requests: wait for Retry-After seconds.",
    "503": "The database is down for a moment: retry after Retry-After seconds.",
}
WRITE_ERRORS = {
    "409": "Conflicts with the current state (duplicate, already running, Idempotency-Key in use).",
    "422": "Fields not valid: see error.fields.",
}
WRITES = ("post", "put", "patch", "delete")
RATE_LIMIT = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")
TEXT = {"type": "string", "description": "CSV (UTF-8), one row per object, nested fields as dotted columns."}
BINARY = {"type": "string", "format": "binary"}


def header(description: str, schema: dict, deprecated: bool = False) -> dict:
    return {"description": description, "schema": schema, **({"deprecated": True} if deprecated else {})}


HEADERS = {
    "RateLimit-Limit": header("Requests allowed per window (draft-ietf-httpapi-ratelimit-headers). Sent on every "
                              "answer while the rate limiter's store is up.", {"type": "integer", "minimum": 1}),
    "RateLimit-Remaining": header("Requests left in the current window.", {"type": "integer", "minimum": 0}),
    "RateLimit-Reset": header("Seconds until the oldest counted request leaves the window (a slot comes back).",
                              {"type": "integer", "minimum": 0}),
    "RateLimit-Policy": header("The limit and its window in seconds, e.g. `600;w=60`.",
                               {"type": "string", "pattern": r"^\d+;w=\d+$"}),
    "Retry-After": header("Seconds to wait before retrying.", {"type": "integer", "minimum": 1}),
    "ETag": header("A strong tag of this representation for this organization: send it as If-None-Match to get "
                   "304 while it has not changed.", {"type": "string", "pattern": '^"[0-9a-f]+"$'}),
    "Location": header("The path of the created (or started) object: poll it.", {"type": "string"}),
    "Idempotency-Replayed": header("`true` when this is the stored answer to an earlier request with the same "
                                   "Idempotency-Key.", {"type": "string", "enum": ["true"]}),
    "Idempotent-Replayed": header("The former name of Idempotency-Replayed, still sent beside it.",
                                  {"type": "string", "enum": ["true"]}, deprecated=True),
    "Already-Active": header("`true` when the same work was already queued or running: that one is returned and "
                             "nothing new started.", {"type": "string", "enum": ["true"]}),
    "Content-Disposition": header("`attachment` with the file's name.", {"type": "string"}),
}


class BearerKeyScheme(OpenApiAuthenticationExtension):
    target_class = "tlsaudit.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "An organization API key: `tlaw_…` read-write or `tlar_…` read-only."}


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "tlsaudit.api.auth.CsrfSessionAuthentication"
    name = "Session"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid",
                "description": "The dashboard's own session (writes also need the X-CSRFToken header)."}


def add_error_responses(result, generator, request, public):
    """Postprocessing hook: everything above, on every operation of the organization API."""
    components = result.setdefault("components", {})
    components.setdefault("schemas", {})["Error"] = error_schema()
    components["headers"] = HEADERS
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            describe_operation(path, method, operation, components["schemas"])
    return result


def describe_operation(path: str, method: str, operation: dict, schemas: dict) -> None:
    responses = operation.setdefault("responses", {})
    if path.startswith("/api/v1/schema") or path.startswith("/api/v1/docs"):
        return   # public, not the organization API
    for code, description in {**COMMON_ERRORS, **(WRITE_ERRORS if method in WRITES else {})}.items():
        responses.setdefault(code, {"description": description, "content": {"application/json": {"schema": ERROR_REF}}})
    ok = responses.get("200", {}).get("content", {})
    export_only = bool(ok) and set(ok) == {"text/csv"}   # a streamed file, never tagged
    if method == "get" and not export_only:
        responses.setdefault("304", {"description": "Not modified: If-None-Match named the current ETag."})
    type_bodies(responses)
    fields_as_array(operation, responses, schemas)
    idempotent = any(p.get("name") == "Idempotency-Key" and p.get("in") == "header"
                     for p in operation.get("parameters", []))
    # A list asked for CSV streams an export without a tag; its JSON pages have one.
    may_export = "text/csv" in ok and is_page(responses["200"], schemas)
    files = export_only or may_export or "application/pdf" in ok
    for code, response in responses.items():
        add_headers(response, headers_of(method, code, idempotent, export_only, may_export, files))


def headers_of(method: str, code: str, idempotent: bool, export_only: bool, may_export: bool,
               files: bool) -> dict[str, bool]:
    """Header name → required, for one response."""
    named = {name: False for name in RATE_LIMIT}
    if code in ("429", "503"):
        named["Retry-After"] = True
    if code == "409" and idempotent:
        named["Retry-After"] = False   # Idempotency-Key in flight
    if method == "get" and code in ("200", "304") and not export_only:
        named["ETag"] = not may_export or code == "304"
    if code in ("201", "202"):
        named["Location"] = True
    if code == "202":
        named["Already-Active"] = False
    if idempotent and code != "503":
        named["Idempotency-Replayed"] = named["Idempotent-Replayed"] = False
    if method == "get" and code == "200" and files:
        named["Content-Disposition"] = False   # CSV exports and the PDF are attachments
    return named


def add_headers(response: dict, named: dict[str, bool]) -> None:
    headers = response.setdefault("headers", {})
    for name, required in named.items():
        headers[name] = {"$ref": f"#/components/headers/{name}"} if not required else {
            **HEADERS[name], "required": True}


def type_bodies(responses: dict) -> None:
    """CSV is text and a PDF is bytes, whatever serializer the view names. The PDF is also offered as
    application/octet-stream (the server sends that when asked for it), which generators map to bytes."""
    for response in responses.values():
        content = response.get("content", {})
        if "text/csv" in content:
            content["text/csv"] = {"schema": TEXT}
        if "application/pdf" in content:
            content["application/pdf"] = {"schema": BINARY}
            content["application/octet-stream"] = {"schema": BINARY}


def fields_as_array(operation: dict, responses: dict, schemas: dict) -> None:
    """`fields` takes names of the 200 answer's fields, comma-separated (or repeated, as clients send arrays)."""
    for parameter in operation.get("parameters", []):
        if parameter.get("name") != "fields" or parameter.get("in") != "query":
            continue
        names = field_names(responses.get("200", {}), schemas) or parameter.get("schema", {}).get("items", {}).get(
            "enum")
        if names:
            parameter.update({"schema": {"type": "array", "items": {"type": "string", "enum": names}},
                              "style": "form", "explode": False})


def is_page(response: dict, schemas: dict) -> bool:
    schema = resolve(response.get("content", {}).get("application/json", {}).get("schema", {}), schemas)
    return {"next", "previous", "results"} <= set(schema.get("properties", {}))


def field_names(response: dict, schemas: dict) -> list[str]:
    schema = resolve(response.get("content", {}).get("application/json", {}).get("schema", {}), schemas)
    if is_page(response, schemas):   # the names of its items
        schema = resolve(schema["properties"]["results"].get("items", {}), schemas)
    return list(schema.get("properties", {}))


def resolve(schema: dict, schemas: dict) -> dict:
    ref = schema.get("$ref", "")
    return schemas.get(ref.removeprefix("#/components/schemas/"), {}) if ref else schema


def error_schema() -> dict:
    return {
        "type": "object", "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string", "description": "Stable, machine-readable."},
                "message": {"type": "string", "description": "For people."},
                "fields": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
            }}},
    }
