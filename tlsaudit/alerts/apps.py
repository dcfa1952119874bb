from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "tlsaudit.alerts"
    label = "alerts"
