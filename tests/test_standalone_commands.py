"""manage.py runs the one-target commands without django.setup() (tlsaudit/core/standalone.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.loadtests import http_server
from tlsaudit.core.standalone import STANDALONE_COMMANDS, runs_standalone

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv, standalone", [
    (["manage.py", "audit", "example.com"], True),
    (["manage.py", "loadtest", "http://127.0.0.1/"], True),
    (["manage.py", "overhead", "127.0.0.1"], True),
    (["manage.py", "handshakes", "127.0.0.1"], True),
    (["manage.py", "audit", "example.com", "--pdf", "r.pdf"], False),  # the PDF needs templates
    (["manage.py", "audit", "example.com", "--pdf=r.pdf"], False),
    (["manage.py", "migrate"], False),
    (["manage.py"], False),
])
def test_which_commands_skip_the_app_registry(argv, standalone):
    assert runs_standalone(argv) is standalone


def test_every_standalone_command_lives_in_its_app():
    for name, app in STANDALONE_COMMANDS.items():
        assert (ROOT / app.replace(".", "/") / "management" / "commands" / f"{name}.py").is_file()


def test_a_standalone_command_runs_with_no_app_loaded():
    """The real entry point, in a new process: the command parses and exits, the registry stays empty."""
    code = ("import runpy, sys\n"
            "sys.argv = ['manage.py', 'audit', '--help']\n"
            "try:\n    runpy.run_path('manage.py', run_name='__main__')\n"
            "except SystemExit as exit:\n    assert exit.code in (0, None), exit.code\n"
            "from django.apps import apps\n"
            "print('apps ready:', apps.ready)\n")
    env = {**os.environ, "TLSAUDIT_DEV": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--ca-file" in done.stdout, "audit's own help was printed"
    assert done.stdout.strip().endswith("apps ready: False")


@pytest.mark.parametrize("argv", [["loadtest", "--help"], ["overhead", "--help"], ["handshakes", "--help"],
                                  ["audit", "--help"]])
def test_the_lean_commands_import_no_django_module_but_the_settings_ones(argv):
    """`ab -n 20000 -k` spends ~0.1 s of CPU on its whole run; Django's management package, django.conf
    and its logging set-up cost ~0.2 s before our first request. Only what tlsaudit/settings.py itself
    imports (django.core.exceptions, for ImproperlyConfigured) may load."""
    code = ("import runpy, sys\n"
            f"sys.argv = ['manage.py', *{argv!r}]\n"
            "try:\n    runpy.run_path('manage.py', run_name='__main__')\n"
            "except SystemExit as exit:\n    assert exit.code in (0, None), exit.code\n"
            "print('django modules:', sorted(m for m in sys.modules if m.startswith('django')))\n")
    env = {**os.environ, "TLSAUDIT_DEV": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--verbosity" in done.stdout and "--json" in done.stdout, "the command's own help, with Django's options"
    loaded = done.stdout.strip().splitlines()[-1]
    for heavy in ("'django.conf'", "'django.core.management", "'django.apps'", "'django.db", "'django.utils.log'"):
        assert heavy not in loaded, loaded


def test_a_lean_command_takes_djangos_base_options_and_still_refuses_bad_ones():
    env = {**os.environ, "TLSAUDIT_DEV": "1"}
    run = [sys.executable, "manage.py", "loadtest"]
    version = subprocess.run([*run, "--version"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.strip().startswith("5."), version.stdout + version.stderr
    bad = subprocess.run([*run, "http://127.0.0.1:9/", "-v", "7"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "invalid choice: 7" in bad.stderr and "usage: manage.py loadtest" in bad.stderr


def test_a_load_test_run_imports_no_scanner():
    """The load commands run the pre-flight (workers/net/reach.py) but never scan: importing sslyze
    (pydantic, cryptography) cost each run ~0.3 s of CPU before its first request, 60x ab's start-up;
    the scan's probes and fact types (workers/net/contexts.py says why it is apart) another ~15 ms."""
    with http_server({"/": (200, {}, b"ok")}) as port:
        code = ("import runpy, sys\n"
                "SCAN_ONLY = {'workers.tls.probes', 'tlsaudit.domain.scanfacts'}\n"
                f"sys.argv = ['manage.py', 'loadtest', 'http://127.0.0.1:{port}/', '-n', '2', '-c', '1', '--json']\n"
                "try:\n    runpy.run_path('manage.py', run_name='__main__')\n"
                "except SystemExit as exit:\n    assert exit.code in (0, None), exit.code\n"
                "print('heavy modules:', sorted(m for m in sys.modules if m.split('.')[0] in "
                "('sslyze', 'pydantic', 'cryptography', 'nassl') or m in SCAN_ONLY))\n")
        env = {**os.environ, "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1"}
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=60)

    assert done.returncode == 0, done.stderr
    assert '"complete": 2' in done.stdout, done.stdout[-500:]
    assert done.stdout.strip().endswith("heavy modules: []"), done.stdout[-500:]

