"""`Idempotency-Key` on POSTs that start work: a retried request gets the first response back
instead of starting a second audit (IETF draft-ietf-httpapi-idempotency-key-header).

The key is reserved by a pending row before the work starts, leased for IDEMPOTENCY_LEASE_SECONDS:
a retry during the lease gets 409 with Retry-After; a retry after it takes the key over (the request
holding it died with its process), by one conditional UPDATE that only one of several racing
retries can win. The row's `attempt` fences the holder that lost it: it can no longer write.
"""

import functools
import hashlib
import json
import logging
import math
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.utils import timezone
from rest_framework.response import Response

from tlsaudit.api.errors import BadQuery, Conflict, Unprocessable
from tlsaudit.api.models import IdempotencyRecord

HEADER = "Idempotency-Key"
# A replayed answer says so. The first name shipped was Idempotent-Replayed (as Stripe's); clients read
# it, so it is still sent beside the name that matches the request's header.
REPLAYED = "Idempotency-Replayed"
OLD_REPLAYED = "Idempotent-Replayed"
LIFETIME = timedelta(hours=24)
PENDING = 0
logger = logging.getLogger(__name__)


class InFlight(Conflict):
    """409: another request holds the key's lease. `wait` is DRF's hook for the Retry-After header."""

    def __init__(self, seconds_left: int):
        super().__init__(f"A request with this {HEADER} is still being processed; retry in {seconds_left} s.",
                         code="idempotency_key_in_flight")
        self.wait = seconds_left


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
            release(record)   # a failed attempt may be retried with the same key
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
    """A new pending record this request holds, the completed record to replay, or 422/409."""
    IdempotencyRecord.objects.filter(organization=org, key=key,
                                     created_at__lt=timezone.now() - LIFETIME).delete()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(organization=org, key=key, fingerprint=fingerprint,
                                                    status_code=PENDING, leased_until=lease_end())
    except IntegrityError:
        record = with_lease_left().get(organization=org, key=key)
    if record.fingerprint != fingerprint:
        raise Unprocessable(f"This {HEADER} was already used for a different request; use a new key.",
                            code="idempotency_key_reused")
    if record.status_code == PENDING:
        return take_over(record)
    return record


def take_over(record: IdempotencyRecord) -> IdempotencyRecord:
    """Hold the pending record if its lease has lapsed, else 409 with the seconds it has left.

    The UPDATE matches only while the lease is lapsed and nobody else took the record since it was
    read (`attempt`): of several retries racing for it, exactly one gets a row back. The 24 h of
    replay count again from here (`created_at`), as for a new key.
    """
    if record.lease_left is not None and record.lease_left > timedelta(0):
        raise InFlight(whole_seconds(record.lease_left))
    taken = (IdempotencyRecord.objects
             .filter(pk=record.pk, status_code=PENDING, attempt=record.attempt)
             .filter(Q(leased_until__isnull=True) | Q(leased_until__lte=Now()))
             .update(attempt=record.attempt + 1, leased_until=lease_end(), created_at=Now()))
    if taken:
        record.attempt += 1
        logger.warning("%s %r: its lease lapsed, taken over (attempt %d)", HEADER, record.key, record.attempt)
        return record
    current = with_lease_left().filter(pk=record.pk).first()
    if current is None:      # its holder failed and let go of it just now: retrying is safe
        raise InFlight(1)
    if current.status_code != PENDING:
        return current
    raise InFlight(whole_seconds(current.lease_left))


def remember(record: IdempotencyRecord, response) -> None:
    if response.status_code >= 500:
        release(record)
        return
    stored = IdempotencyRecord.objects.filter(pk=record.pk, attempt=record.attempt).update(
        status_code=response.status_code, body=getattr(response, "data", None),
        location=response.get("Location", ""), leased_until=None)
    if not stored:
        # Only possible if this request outlived its lease, i.e. ran longer than any request may.
        logger.error("%s %r: answered after its lease was taken over; the retry's answer is kept",
                     HEADER, record.key)


def release(record: IdempotencyRecord) -> None:
    """Let the key go (the attempt failed), unless a retry has taken it over since."""
    IdempotencyRecord.objects.filter(pk=record.pk, attempt=record.attempt).delete()


def replay(record: IdempotencyRecord) -> Response:
    headers = {REPLAYED: "true", OLD_REPLAYED: "true"}
    if record.location:
        headers["Location"] = record.location
    return Response(record.body, status=record.status_code, headers=headers)


def lease_end():
    """The database's clock plus the lease, so web hosts' clocks never decide who holds a key."""
    return Now() + timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS)


def with_lease_left():
    return IdempotencyRecord.objects.annotate(
        lease_left=ExpressionWrapper(F("leased_until") - Now(), output_field=DurationField()))


def whole_seconds(left: timedelta) -> int:
    return max(1, math.ceil(left.total_seconds()))
