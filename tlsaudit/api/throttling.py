from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from tlsaudit.api.models import ApiKey


class PerKeyThrottle(SimpleRateThrottle):
    """API_THROTTLE_RATE per key (or per signed-in user), unless the key has its own rate."""

    scope = "api"

    def get_rate(self):
        return settings.API_THROTTLE_RATE

    def allow_request(self, request, view):
        if isinstance(request.auth, ApiKey) and request.auth.rate_per_minute:
            self.num_requests, self.duration = request.auth.rate_per_minute, 60
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiKey):
            ident = f"key-{request.auth.lookup}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return f"throttle-api-{ident}"
