"""Every API response says `Cache-Control: no-store`: answers carry an organization's data for one
key or session, and no browser, proxy or CDN cache may keep them (nor replay them to another caller).
A middleware rather than a view base class, so errors, 404s and the database-down 503 carry it too."""

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
