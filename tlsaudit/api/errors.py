"""Every API error has one shape: {"error": {"code", "message", "fields"}}.

Status codes: 400 malformed request (bad JSON, bad query parameter, bad cursor), 401 no or bad
key, 403 read-only key or role, 404 unknown or another organization's object, 409 conflicts
with the current state (duplicate site, a run already in progress, reused Idempotency-Key),
422 a well-formed body whose fields are not valid, 429 throttled or over a quota (Retry-After),
503 the task queue did not take the work just created (`queued: false`, the row in `created`).
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from tlsaudit.api.links import api_url
from tlsaudit.core.queue import RETRY_AFTER_SECONDS, QueueUnavailable


class BadQuery(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "A query parameter is not valid."
    default_code = "invalid_query"

    def __init__(self, fields: dict[str, str]):
        self.fields = {name: [message] for name, message in fields.items()}
        super().__init__("; ".join(f"{name}: {message}" for name, message in fields.items()))


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "This conflicts with the current state."
    default_code = "conflict"

    def __init__(self, detail=None, code=None):
        super().__init__(detail, code)


class NotApplicable(exceptions.APIException):
    """Work that means nothing for the site's service (a load test of an SMTP server): 400, since no
    retry or change of state could make it work; only a different site could."""
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "This does not apply to the site's service."
    default_code = "not_applicable"


class Unprocessable(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "The request is well formed but cannot be carried out."
    default_code = "unprocessable"


class QuotaExceeded(exceptions.Throttled):
    default_code = "quota_exceeded"


CODES = {
    exceptions.ParseError: "malformed_request",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    exceptions.ValidationError: "validation_error",
    exceptions.PermissionDenied: "forbidden",
}


def handle(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) if str(exc) else None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) if str(exc) else None)
    elif isinstance(exc, QueueUnavailable):
        as_json(context.get("request"))
        return not_queued(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    as_json(context.get("request"))
    if isinstance(exc, exceptions.ValidationError):
        response.status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    response.data = {"error": body_of(exc)}
    return response


def not_queued(refusal: QueueUnavailable) -> Response:
    """503 + Retry-After: the work was created (its id, URL and status in `created`, its URL also in
    `Location`) but its message is not in the queue; the message says what happens to it."""
    body = {"error": {"code": "queue_unavailable", "message": refusal.message, "fields": {}}, "queued": False}
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if refusal.row is not None:
        url = api_url(refusal.row)
        body["created"] = {"id": refusal.row.pk, "url": url, "status": refusal.row.status}
        headers["Location"] = url
    return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=headers)


def as_json(request) -> None:
    """Errors are JSON even when the client asked for CSV (or a PDF): the shape is the contract."""
    if request is not None:
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"


def body_of(exc: exceptions.APIException) -> dict:
    fields = getattr(exc, "fields", None) or {}
    if isinstance(exc, exceptions.ValidationError):
        fields, message = fields_of(exc.detail)
    else:
        message = str(exc.detail)
    return {"code": code_of(exc), "message": message, "fields": fields}


def code_of(exc) -> str:
    """DRF's own exceptions get our names; ours carry the code they were raised with."""
    if type(exc) in CODES:
        return CODES[type(exc)]
    return getattr(exc.detail, "code", None) or getattr(exc, "default_code", "") or "error"


def fields_of(detail) -> tuple[dict, str]:
    """Field errors as {"field": ["message", ...]}, plus one message for people."""
    if isinstance(detail, dict):
        fields = {name: flatten(value) for name, value in detail.items()}
        general = fields.pop("non_field_errors", None)
        message = general[0] if general else "Some fields are not valid: " + ", ".join(sorted(fields)) + "."
        if general:
            fields["__all__"] = general
        return fields, message
    messages = flatten(detail)
    return {"__all__": messages} if messages else {}, messages[0] if messages else "The request is not valid."


def flatten(value) -> list[str]:
    if isinstance(value, dict):
        return [f"{key}: {message}" for key, inner in value.items() for message in flatten(inner)]
    if isinstance(value, list):
        return [message for item in value for message in flatten(item)]
    return [str(value)]


def error_json(status_code: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": {}}}, status=status_code)


def is_api(request) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request, exception):
    if is_api(request):
        return error_json(404, "not_found", "There is nothing at this address. The API lives under /api/v1/.")
    return defaults.page_not_found(request, exception)


def server_error(request):
    if is_api(request):
        return error_json(500, "server_error", "Something went wrong on our side; it has been logged.")
    return defaults.server_error(request)
