"""The one-target commands (`audit`, `loadtest`, `overhead`, `handshakes`) without django.setup().

They use no model, URL, template or app registry: they run an engine and print. django.setup()
would still import every app's models (django-celery-beat's bring Celery and kombu), ~0.35 s of
a ~1 s cold `manage.py audit` on this machine, where raw sslyze starts in ~0.2 s (issue #3 asks
for at most 2x raw sslyze). manage.py sends these commands here; the same Command classes also
run through Django's normal path (call_command, and `audit --pdf`, whose report needs templates).
"""

from __future__ import annotations

# command -> the app package that holds it (Django finds commands through the app registry,
# which is exactly what is not loaded here).
STANDALONE_COMMANDS = {"audit": "tlsaudit.audits", "loadtest": "tlsaudit.loadtests",
                       "overhead": "tlsaudit.loadtests", "handshakes": "tlsaudit.loadtests"}


def runs_standalone(argv: list[str]) -> bool:
    """True for a one-target command that needs no app: not `audit --pdf` (templates)."""
    if len(argv) < 2 or argv[1] not in STANDALONE_COMMANDS:
        return False
    return not any(arg == "--pdf" or arg.startswith("--pdf=") for arg in argv[2:])


def run_standalone(argv: list[str]) -> None:
    from django.conf import settings
    from django.core.management import load_command_class
    from django.utils.log import configure_logging

    configure_logging(settings.LOGGING_CONFIG, settings.LOGGING)  # what django.setup() does first
    command = load_command_class(STANDALONE_COMMANDS[argv[1]], argv[1])
    command.run_from_argv(argv)
