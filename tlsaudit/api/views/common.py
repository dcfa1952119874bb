"""Helpers the work-starting resources share: who asks, which site, query parameters, 202s, quotas."""

from __future__ import annotations

import math
from datetime import UTC, datetime, time, timedelta

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from tlsaudit.api.errors import BadQuery, QuotaExceeded
from tlsaudit.api.models import ApiKey
from tlsaudit.api.serializers.common import NotQueuedSerializer
from tlsaudit.core.ratelimits import times_since
from tlsaudit.domain.ratelimit import seconds_until_free
from tlsaudit.orgs.models import Membership
from tlsaudit.sites.models import Site

DAY = timedelta(days=1)
# A POST that found the same work already queued or running answers with it and says so here.
EXISTING_HEADER = "Already-Active"

FIELDS_PARAM = OpenApiParameter("fields", str, description="Comma-separated top-level field names to return.")
PAGE_SIZE_PARAM = OpenApiParameter(
    "page_size", {"type": "integer", "minimum": 1, "maximum": settings.API_MAX_PAGE_SIZE},
    description=f"Items per page (default {settings.API_PAGE_SIZE}, at most {settings.API_MAX_PAGE_SIZE}).")
NOT_QUEUED = OpenApiResponse(NotQueuedSerializer, description=(
    "The task queue (Redis) is unavailable: the work was created (`created`, `Location`) but not queued "
    "(`queued: false`). An audit starts by itself once the queue is back; a load test, probe, report or test "
    "delivery is marked failed: start it again after `Retry-After` seconds. Code `queue_unavailable`."))
IDEMPOTENCY_PARAM = OpenApiParameter(
    "Idempotency-Key", {"type": "string", "minLength": 1, "maxLength": 120, "pattern": r"^[ -~]*[!-~][ -~]*$"},
    OpenApiParameter.HEADER,
    description="Any unique string of 1 to 120 printable characters (e.g. a UUID): a retry with the same key and "
                "body gets the first response back (with `Idempotency-Replayed: true`) instead of starting the "
                "work twice. Kept 24 hours. While the first request is still running a retry gets 409 "
                "`idempotency_key_in_flight` with `Retry-After`; if that request never finishes (its server died), "
                "a retry after that time runs it.")
# Ids in query parameters: whole numbers of at most 12 digits (`whole_number`).
ID_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 999_999_999_999}
# `since` / `until`: an ISO 8601 date or date-time, as `moment` reads them. (The server also takes the 29th to
# 31st of a month that has them: the schema leaves them out, as a pattern cannot tell February from March.)
MOMENT_SCHEMA = {"type": "string", "pattern": (
    r"^[1-9]\d{3}-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])"
    r"([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?(Z|[+-](0\d|1[0-3]):?[0-5]\d)?)?$")}


def since_until_params(what: str) -> list[OpenApiParameter]:
    return [OpenApiParameter("since", MOMENT_SCHEMA,
                             description=f"Only {what} created at or after this ISO 8601 date or date-time (UTC "
                                         "when no offset is given)."),
            OpenApiParameter("until", MOMENT_SCHEMA,
                             description=f"Only {what} created up to this ISO 8601 date (the whole day) or "
                                         "date-time.")]


class UnverifiedEmail(exceptions.PermissionDenied):
    default_code = "unverified_email"


def acting_user(request):
    """The person a request acts for: the signed-in user, or for a key the member who created it.

    A key whose creator left the organization (or was deleted) acts for the organization alone: None.
    """
    if not isinstance(request.auth, ApiKey):
        return request.user
    key = request.auth
    if key.created_by_id and Membership.objects.filter(organization_id=key.organization_id,
                                                       user_id=key.created_by_id).exists():
        return key.created_by
    return None


def site_in(org, pk) -> Site:
    """The organization's site, or 404 (another organization's id is just as unknown)."""
    return get_object_or_404(Site.objects.select_related("organization"), organization=org, pk=pk)


def accepted(body: dict, location: str, *, existing: bool = False) -> Response:
    """202 with the work's representation and its URL; `Already-Active: true` when nothing new started."""
    headers = {"Location": location}
    if existing:
        headers[EXISTING_HEADER] = "true"
    return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)


def over_quota(code: str, message: str, retry_after: float) -> QuotaExceeded:
    """429 with `Retry-After` (DRF's handler sets the header from `wait`). `wait` is set after
    construction because the messages already say when to retry, in words."""
    exc = QuotaExceeded(detail=message, code=code)
    exc.wait = max(1, math.ceil(retry_after))
    return exc


class Refused(exceptions.PermissionDenied):
    """403 with the service's own code, for a refusal no wait would cure."""

    def __init__(self, message: str, code: str):
        super().__init__(message, code=code)


def daily_cap_refusal(queryset, limit: int, code: str, message: str) -> exceptions.APIException:
    """A cap per 24 hours as an API error: 429 until enough of the counted rows age out (their
    `created_at`), or 403 when the cap is 0 (waiting will not help)."""
    if limit < 1:
        return Refused(message, code)
    wait = seconds_until_free(list(times_since(queryset, DAY)), limit, DAY, timezone.now())
    return over_quota(code, message, wait or 1)


def choice(params, name: str, allowed) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise BadQuery({name: f"Use one of {', '.join(allowed)}."})
    return value


def whole_number(params, name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if not value.isdigit() or len(value) > 12:
        raise BadQuery({name: "Use a whole number (an id)."})
    return int(value)


def created_between(queryset, params):
    """`since` / `until` on created_at: a date means the whole day, a date-time without offset is UTC."""
    since, _ = moment(params, "since")
    until, until_is_day = moment(params, "until")
    if until_is_day:
        until += DAY   # until=2026-03-02 keeps everything before 2026-03-03 00:00
    if since and until and since >= until:
        raise BadQuery({"since": "since must be before until."})
    if since:
        queryset = queryset.filter(created_at__gte=since)
    if until:
        queryset = queryset.filter(**{"created_at__lt" if until_is_day else "created_at__lte": until})
    return queryset


def moment(params, name: str) -> tuple[datetime | None, bool]:
    """(the aware date-time, whether only a date was given); BadQuery for anything else."""
    raw = params.get(name)
    if raw is None:
        return None, False
    try:
        # The date first: parse_datetime would read a bare date as its midnight.
        day = parse_date(raw.strip())
        parsed = parse_datetime(raw.strip()) if day is None else None
    except ValueError:   # well-formed but impossible, e.g. 2026-02-30
        day = parsed = None
    if day is not None:
        return datetime.combine(day, time.min, tzinfo=UTC), True
    if parsed is not None:
        return (parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)), False
    raise BadQuery({name: "Use an ISO 8601 date (2026-03-02) or date-time (2026-03-02T03:00:00Z)."})
