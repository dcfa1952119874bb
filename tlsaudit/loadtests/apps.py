from django.apps import AppConfig


class LoadtestsConfig(AppConfig):
    name = "tlsaudit.loadtests"
    label = "loadtests"
    verbose_name = "Performance"
