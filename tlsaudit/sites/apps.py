from django.apps import AppConfig


class SitesConfig(AppConfig):
    name = "tlsaudit.sites"
    label = "sites"
    verbose_name = "Sites"
