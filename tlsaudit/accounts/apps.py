from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "tlsaudit.accounts"
    label = "accounts"
