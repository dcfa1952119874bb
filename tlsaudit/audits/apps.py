from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "tlsaudit.audits"
    label = "audits"
