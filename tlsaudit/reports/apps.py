from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "tlsaudit.reports"
    label = "reports"
