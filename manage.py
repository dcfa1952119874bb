#!/usr/bin/env python
"""Django's command-line utility for TLS Audit."""
import os
import sys

from tlsaudit.core.standalone import ONE_TARGET_COMMANDS, run_standalone, runs_standalone

# Asking for help (of any command, or the list of them) reads no secret either.
HELP_WORDS = frozenset({"help", "--help", "-h", "version", "--version"})


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tlsaudit.settings")
    if len(sys.argv) < 2 or sys.argv[1] in ONE_TARGET_COMMANDS | HELP_WORDS:
        allow_without_deployment_settings()
    if runs_standalone(sys.argv):  # audit/loadtest/overhead/handshakes: no app registry needed
        run_standalone(sys.argv)
        return
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        load_settings()
    except ImproperlyConfigured as exc:  # one line saying what to set, not a traceback
        sys.exit(f"manage.py {sys.argv[1] if len(sys.argv) > 1 else ''}: {exc}".replace("  ", " "))
    execute_from_command_line(sys.argv)


def allow_without_deployment_settings():
    """A checkout runs the one-target commands as written: a throwaway key (nothing they do is
    signed) and a host list (they answer no request) stand in for what a deployment must set."""
    import secrets

    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    os.environ.setdefault("ALLOWED_HOSTS", "localhost")


def load_settings():
    from django.conf import settings

    settings.INSTALLED_APPS  # noqa: B018 - reading one setting loads the module, raising on a bad value


if __name__ == "__main__":
    main()
