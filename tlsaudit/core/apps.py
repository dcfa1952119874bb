from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "tlsaudit.core"
    label = "core"
