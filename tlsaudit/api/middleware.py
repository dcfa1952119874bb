"""Middleware of the API: `Cache-Control: no-store` on every answer, and paths with or without their
trailing slash.

Every API response says `Cache-Control: no-store`: answers carry an organization's data for one
key or session, and no browser, proxy or CDN cache may keep them (nor replay them to another caller).
A middleware rather than a view base class, so errors, 404s and the database-down 503 carry it too."""

from django.urls import is_valid_path
from django.utils.cache import patch_cache_control

API_PREFIX = "/api/"


class ApiNoStoreMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith(API_PREFIX):
            patch_cache_control(response, no_store=True)
        return response


class ApiTrailingSlashMiddleware:
    """`/api/v1/sites` and `/api/v1/sites/` are one resource, for every method, with no redirect (a 301
    turns a POST into a GET in most clients, and its HTML body is no API answer). An API path that does
    not resolve is tried with its trailing slash added (or removed); if that resolves, the request is
    served as if it had been sent so. First in MIDDLEWARE, so CSRF, sessions, authentication and logs
    all see the one path the view sees: the rewrite cannot take a request past a check."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.startswith(API_PREFIX):
            canonical = resolvable_twin(request.path_info, getattr(request, "urlconf", None))
            if canonical is not None:
                request.path = request.path[: len(request.path) - len(request.path_info)] + canonical
                request.path_info = canonical
        return self.get_response(request)


def resolvable_twin(path: str, urlconf) -> str | None:
    """The path with its trailing slash toggled, when only that one resolves."""
    if is_valid_path(path, urlconf):
        return None
    twin = path[:-1] if path.endswith("/") else f"{path}/"
    return twin if is_valid_path(twin, urlconf) else None
