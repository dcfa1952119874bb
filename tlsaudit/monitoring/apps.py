from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "tlsaudit.monitoring"
    label = "monitoring"

    def ready(self):
        from tlsaudit.monitoring import signals  # noqa: F401  (every new site gets a schedule)
