from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "tlsaudit.api"
    label = "api"
    verbose_name = "REST API"

    def ready(self):
        from tlsaudit.api import schema  # noqa: F401  registers the OpenAPI extensions
