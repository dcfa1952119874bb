from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The OpenAPI extensions are registered where the API's URLs are (tlsaudit/api/urls.py), not in
    ready(): drf-spectacular's import costs ~0.1 s that commands serving no URL (`audit`) skip."""

    name = "tlsaudit.api"
    label = "api"
    verbose_name = "REST API"
