from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "tlsaudit.accounts"
    label = "accounts"

    def ready(self):
        # Lazy on purpose: the receivers import models, which exist only once the app registry is ready.
        from tlsaudit.accounts import signals  # noqa: F401  (connects the audit-log receivers)
