"""The API's rate limit: API_THROTTLE_RATE per key (or per signed-in user, or per client IP for the
public schema), unless the key has its own `rate_per_minute`. Counted by core.ratelimits.count,
one atomic Redis operation per request, so all web processes share one exact count."""

import logging

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from tlsaudit.api.models import ApiKey
from tlsaudit.core import ratelimits
from tlsaudit.core.clientip import client_ip

logger = logging.getLogger(__name__)
PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class PerKeyThrottle(BaseThrottle):
    """Refuses past the caller's rate; leaves its Tally on the request for the RateLimit-* headers."""

    tally = None

    def allow_request(self, request, view):
        limit, window_s = rate_of(request)
        try:
            self.tally = ratelimits.count(f"api:{ident_of(request)}", limit=limit, window_s=window_s)
        except Exception:  # noqa: BLE001  the cache (Redis) is down: serve unthrottled, loudly, as ratelimits.hit
            logger.warning("API throttle not checked: the cache is unavailable", exc_info=True)
            return True
        request.ratelimit = self.tally
        return self.tally.allowed

    def wait(self):
        return self.tally.retry_after if self.tally else None


def rate_of(request) -> tuple[int, int]:
    """(requests, per seconds): the key's own rate per minute, else API_THROTTLE_RATE ("600/min")."""
    if isinstance(request.auth, ApiKey) and request.auth.rate_per_minute:
        return request.auth.rate_per_minute, 60
    number, period = settings.API_THROTTLE_RATE.split("/")
    return int(number), PERIODS[period[0]]


def ident_of(request) -> str:
    if isinstance(request.auth, ApiKey):
        return f"key-{request.auth.lookup}"
    if request.user and request.user.is_authenticated:
        return f"user-{request.user.pk}"
    return f"ip-{client_ip(request) or 'unknown'}"


def rate_limit_headers(response, tally) -> None:
    """The IETF draft's fields (draft-ietf-httpapi-ratelimit-headers-06): the limit, what is left of
    it, seconds until a slot comes back (the oldest counted request leaves the sliding window)."""
    response["RateLimit-Limit"] = str(tally.limit)
    response["RateLimit-Remaining"] = str(tally.remaining)
    response["RateLimit-Reset"] = str(tally.reset_s)
    response["RateLimit-Policy"] = f"{tally.limit};w={tally.window_s}"
