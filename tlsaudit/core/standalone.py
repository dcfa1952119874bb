"""The one-target commands (`audit`, `loadtest`, `overhead`, `handshakes`) without django.setup().

They use no model, URL, template or app registry: they run an engine and print. django.setup()
would still import every app's models (django-celery-beat's bring Celery and kombu), ~0.35 s of
a ~1 s cold `manage.py audit` on this machine, where raw sslyze starts in ~0.2 s (the goal: at most
2x raw sslyze). manage.py sends these commands here; the same Command classes also
run through Django's normal path (call_command, and `audit --pdf`, whose report needs templates).

The load commands (`loadtest`, `overhead`, `handshakes`) and `audit` go one step further and load
no Django module at all: `ab -n 20000 -k` spends ~0.1 s of CPU on its whole run, and importing
Django's management package (its system checks import the ORM), django.conf (asgiref, asyncio) and
Django's logging set-up (its admin-mail handler imports the views) cost ~0.2 s before the first
request, or before sslyze's first connection (one audit no slower than raw sslyze). Their Command classes subclass `command_base()`: Django's BaseCommand everywhere, except
in a process this module started, where `LeanCommand` gives them the same arguments, output and
exit codes; `setting(name)` reads the settings module itself there instead of django.conf.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Commands that test one target and print (tlsaudit/core/management/base.py): they sign nothing, serve
# no page and need no secret, so manage.py runs them without a deployment's settings.
ONE_TARGET_COMMANDS = frozenset({"audit", "loadtest", "overhead", "handshakes", "probe"})
# command -> the app package that holds it (Django finds commands through the app registry,
# which is exactly what is not loaded here).
STANDALONE_COMMANDS = {"audit": "tlsaudit.audits", "loadtest": "tlsaudit.loadtests",
                       "overhead": "tlsaudit.loadtests", "handshakes": "tlsaudit.loadtests"}
# These run without any Django module (see the module docstring).
LEAN_COMMANDS = frozenset({"audit", "loadtest", "overhead", "handshakes"})
DEFAULT_SETTINGS_MODULE = "tlsaudit.settings"

_lean = False  # True only in a process whose command run_standalone started without Django


def runs_standalone(argv: list[str]) -> bool:
    """True for a one-target command that needs no app: not `audit --pdf` (templates)."""
    if len(argv) < 2 or argv[1] not in STANDALONE_COMMANDS:
        return False
    return not any(arg == "--pdf" or arg.startswith("--pdf=") for arg in argv[2:])


def run_standalone(argv: list[str]) -> None:
    if argv[1] in LEAN_COMMANDS:
        run_lean(argv)
        return
    from django.conf import settings
    from django.core.management import load_command_class
    from django.utils.log import configure_logging

    configure_logging(settings.LOGGING_CONFIG, settings.LOGGING)  # what django.setup() does first
    command = load_command_class(STANDALONE_COMMANDS[argv[1]], argv[1])
    command.run_from_argv(argv)


def run_lean(argv: list[str]) -> None:
    """Import the command with `command_base()` = LeanCommand and run it. Logging is left as Python
    starts it: these commands print their results themselves and log nothing, warnings still reach
    stderr through logging's last-resort handler, and logging.config costs ~5 ms (its socket server)."""
    global _lean
    _lean = True
    module = importlib.import_module(f"{STANDALONE_COMMANDS[argv[1]]}.management.commands.{argv[1]}")
    module.Command().run_from_argv(argv)


def command_base() -> type:
    """The parent of TargetCommand (tlsaudit/core/management/base.py), chosen when that module is first
    imported: LeanCommand in a lean process (run_lean marks it before the import), else BaseCommand."""
    if _lean:
        return LeanCommand
    from django.core.management.base import BaseCommand

    return BaseCommand


def setting(name: str):
    """A setting's value: django.conf's, or in a lean process the settings module's own (the same
    module django.conf would load: DJANGO_SETTINGS_MODULE or --settings)."""
    if _lean:
        module = os.environ.get("DJANGO_SETTINGS_MODULE") or DEFAULT_SETTINGS_MODULE
        return getattr(importlib.import_module(module), name)
    from django.conf import settings

    return getattr(settings, name)


class LineWriter:
    """Django's OutputWrapper in short: write() ends the text with a newline unless it has one."""

    def __init__(self, stream):
        self._out = stream

    def write(self, text: str = "", ending: str = "\n") -> None:
        self._out.write(text if not ending or text.endswith(ending) else text + ending)

    def __getattr__(self, name):  # flush, isatty, ...
        return getattr(self._out, name)


class DjangoVersion(argparse.Action):
    """`--version`, importing Django only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        import django

        print(django.get_version())  # on stdout, as argparse's own version action
        parser.exit()


class LeanCommand:
    """What the load commands use of Django's BaseCommand: the same base options (-v, --settings,
    --pythonpath, --traceback, --no-color, --force-color, --version), argparse's exit 2 with usage
    on a bad option, line-ending stdout/stderr, handle(**options)."""

    help = ""
    requires_system_checks: list = []

    def __init__(self):
        self.stdout = LineWriter(sys.stdout)
        self.stderr = LineWriter(sys.stderr)

    def add_arguments(self, parser) -> None:
        pass

    def handle(self, *args, **options):  # pragma: no cover - every command defines it
        raise NotImplementedError("a LeanCommand subclass must define handle(), as Django's BaseCommand says")

    def create_parser(self, prog_name: str, subcommand: str) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog=f"{os.path.basename(prog_name)} {subcommand}",
                                         description=self.help or None)
        parser.add_argument("--version", action=DjangoVersion, help="Show program's version number and exit.")
        parser.add_argument("-v", "--verbosity", default=1, type=int, choices=[0, 1, 2, 3],
                            help="Verbosity level; 0=minimal output, 1=normal output, 2=verbose output, "
                                 "3=very verbose output")
        parser.add_argument("--settings", help="The Python path to a settings module (else DJANGO_SETTINGS_MODULE).")
        parser.add_argument("--pythonpath", help="A directory to add to the Python path.")
        parser.add_argument("--traceback", action="store_true", help="Display a full stack trace on errors.")
        parser.add_argument("--no-color", action="store_true", help="Don't colorize the command output.")
        parser.add_argument("--force-color", action="store_true", help="Force colorization of the command output.")
        self.add_arguments(parser)
        return parser

    def run_from_argv(self, argv: list[str]) -> None:
        options = vars(self.create_parser(argv[0], argv[1]).parse_args(argv[2:]))
        if options.get("settings"):  # as Django's handle_default_options
            os.environ["DJANGO_SETTINGS_MODULE"] = options["settings"]
        if options.get("pythonpath"):
            sys.path.insert(0, options["pythonpath"])
        args = options.pop("args", ())
        self.handle(*args, **options)
