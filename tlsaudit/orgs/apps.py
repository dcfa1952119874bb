from django.apps import AppConfig


class OrgsConfig(AppConfig):
    name = "tlsaudit.orgs"
    label = "orgs"
    verbose_name = "Organizations"
