from django.apps import AppConfig


class ProbesConfig(AppConfig):
    name = "tlsaudit.probes"
    label = "probes"
    verbose_name = "Browser probes"
