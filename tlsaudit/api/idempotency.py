"""`Idempotency-Key` on POSTs that start work: a retried request gets the first response back
instead of starting a second audit (IETF draft-ietf-httpapi-idempotency-key-header)."""

import functools
import hashlib
import json
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.response import Response

from tlsaudit.api.errors import BadQuery, Conflict, Unprocessable
from tlsaudit.api.models import IdempotencyRecord

HEADER = "Idempotency-Key"
LIFETIME = timedelta(hours=24)
PENDING = 0


def idempotent(method):
    @functools.wraps(method)
    def wrapper(view, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if key is None:
            return method(view, request, *args, **kwargs)
        key = checked(key)
        fingerprint = fingerprint_of(request)
        record = reserve(view.org, key, fingerprint)
        if record.status_code != PENDING:
            return replay(record)
        try:
            response = method(view, request, *args, **kwargs)
        except Exception:
            record.delete()   # a failed attempt may be retried with the same key
            raise
        remember(record, response)
        return response

    return wrapper


def checked(key: str) -> str:
    key = key.strip()
    if not 1 <= len(key) <= 120 or not key.isprintable():
        raise BadQuery({HEADER: "Use 1 to 120 printable characters, e.g. a UUID."})
    return key


def fingerprint_of(request) -> str:
    body = json.dumps(request.data, sort_keys=True, default=str) if request.data else ""
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def reserve(org, key: str, fingerprint: str) -> IdempotencyRecord:
    IdempotencyRecord.objects.filter(organization=org, key=key,
                                     created_at__lt=timezone.now() - LIFETIME).delete()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(organization=org, key=key, fingerprint=fingerprint,
                                                    status_code=PENDING)
    except IntegrityError:
        record = IdempotencyRecord.objects.get(organization=org, key=key)
    if record.fingerprint != fingerprint:
        raise Unprocessable(f"This {HEADER} was already used for a different request; use a new key.",
                            code="idempotency_key_reused")
    if record.status_code == PENDING:
        raise Conflict(f"A request with this {HEADER} is still being processed; retry in a moment.",
                       code="idempotency_key_in_flight")
    return record


def remember(record: IdempotencyRecord, response) -> None:
    if response.status_code >= 500:
        record.delete()
        return
    record.status_code = response.status_code
    record.body = getattr(response, "data", None)
    record.location = response.get("Location", "")
    record.save(update_fields=["status_code", "body", "location"])


def replay(record: IdempotencyRecord) -> Response:
    headers = {"Idempotent-Replayed": "true"}
    if record.location:
        headers["Location"] = record.location
    return Response(record.body, status=record.status_code, headers=headers)
