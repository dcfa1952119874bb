import logging

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from tlsaudit.api.models import ApiKey

logger = logging.getLogger(__name__)


class PerKeyThrottle(SimpleRateThrottle):
    """API_THROTTLE_RATE per key (or per signed-in user), unless the key has its own rate."""

    scope = "api"

    def get_rate(self):
        return settings.API_THROTTLE_RATE

    def allow_request(self, request, view):
        if isinstance(request.auth, ApiKey) and request.auth.rate_per_minute:
            self.num_requests, self.duration = request.auth.rate_per_minute, 60
        try:
            return super().allow_request(request, view)
        except Exception:  # noqa: BLE001  the cache (Redis) is down: serve unthrottled, loudly, as ratelimits.hit
            logger.warning("API throttle not checked: the cache is unavailable", exc_info=True)
            return True

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiKey):
            ident = f"key-{request.auth.lookup}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return f"throttle-api-{ident}"
