from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "tlsaudit.accounts"
    label = "accounts"

    def ready(self):
        from tlsaudit.accounts import signals  # noqa: F401  (connects the audit-log receivers)
