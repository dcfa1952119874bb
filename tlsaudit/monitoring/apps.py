from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "tlsaudit.monitoring"
    label = "monitoring"

    def ready(self):
        # Lazy on purpose: the receivers import models, which exist only once the app registry is ready.
        from tlsaudit.monitoring import signals  # noqa: F401  (a deleted schedule drops its beat entry)
