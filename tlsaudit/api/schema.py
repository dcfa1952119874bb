"""OpenAPI details drf-spectacular cannot infer: the Bearer key scheme and the error responses
every operation can give (so a schema-driven client, and schemathesis, know their shape)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERROR_REF = {"$ref": "#/components/schemas/Error"}
COMMON_ERRORS = {
    "400": "Malformed request: bad JSON, query parameter or cursor.",
    "401": "No key, or a key that is not valid or was revoked.",
    "403": "A read-only key, or a role that cannot do this.",
    "404": "No such object in your organization.",
    "405": "Method not allowed.",
    "406": "Ask for application/json or text/csv.",
    "415": "Send application/json.",
    "429": "Too many requests: wait for Retry-After seconds.",
}
WRITE_ERRORS = {
    "409": "Conflicts with the current state (duplicate, already running, Idempotency-Key in use).",
    "422": "Fields not valid: see error.fields.",
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
    """Postprocessing hook: the Error component and the shared error responses on every operation."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = error_schema()
    for path in result.get("paths", {}).values():
        for method, operation in path.items():
            responses = operation.setdefault("responses", {})
            errors = dict(COMMON_ERRORS, **(WRITE_ERRORS if method in ("post", "put", "patch", "delete") else {}))
            for code, description in errors.items():
                responses.setdefault(code, {"description": description,
                                            "content": {"application/json": {"schema": ERROR_REF}}})
    return result


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
