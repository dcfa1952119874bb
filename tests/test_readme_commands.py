"""The README's terminal commands run as a reader types them in a fresh checkout (issue #17 item 1).

The commands are read from README.md itself, not copied here. Each one runs through bash in the
repository, in an environment with nothing a checkout does not have: no TLSAUDIT_DEV, SECRET_KEY,
ALLOWED_HOSTS, DATABASE_URL or REDIS_URL (a reader's shell sets none of them), and its own var/
directory (a fresh checkout's). The one-target commands are pointed at the local TLS lab the way a
reader points them at their own server: the target replaced, the lab's CA given, and
TLSAUDIT_ALLOW_PRIVATE_TARGETS=1 set, as the README says for one's own machine.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ONE_TARGET = ("audit", "loadtest", "overhead", "handshakes", "probe")
# What a checkout's shell does not have (the test runner's own environment sets several).
NOT_IN_A_READERS_SHELL = ("TLSAUDIT_DEV", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "SITE_URL", "DATABASE_URL",
                          "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CELERY_TASK_ALWAYS_EAGER",
                          "TLSAUDIT_ALLOW_PRIVATE_TARGETS", "TLSAUDIT_VAR_DIR", "DJANGO_SETTINGS_MODULE")
LAB_SERVER = "a_plus_rsa_hsts"


# A line a reader types: optional VAR=value words, then the checkout's Python running manage.py.
SHELL_LINE = re.compile(r"^(?:[A-Z_]+=\S*\s+)*\.venv/bin/python manage\.py ")


def readme_commands() -> list[str]:
    """Every `.venv/bin/python manage.py` line inside a fenced block of README.md, without its trailing
    comment."""
    commands, fenced = [], False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and SHELL_LINE.match(line.strip()):   # not a tree or prose that names a command
            commands.append(re.split(r"\s{2,}#", line)[0].strip())
    return commands


def command_name(command: str) -> str:
    words = shlex.split(command)
    return words[words.index(".venv/bin/python") + 2]


def one_target_commands() -> list[str]:
    return [c for c in readme_commands() if command_name(c) in ONE_TARGET]


def database_commands() -> list[str]:
    return [c for c in readme_commands() if command_name(c) not in ONE_TARGET]


def readers_environment(var_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_IN_A_READERS_SHELL}
    return {**env, "TLSAUDIT_VAR_DIR": str(var_dir), "PYTHONWARNINGS": "ignore", **extra}


def aim_at_lab(command: str, lab) -> str:
    """The reader's substitution: their server instead of example.com (here a lab server on 127.0.0.1)."""
    https, http, ca = lab.port(LAB_SERVER), lab.http_port(LAB_SERVER), str(lab.ca_file)
    name = command_name(command)
    command = command.replace("192.0.2.10", "127.0.0.1").replace("internal-ca.pem", ca)
    command = re.sub(r"https://example\.com/", f"https://localhost:{https}/", command)
    if name == "overhead":
        command = re.sub(r"\bexample\.com\b", f"localhost --http-port {http} --https-port {https}", command)
    else:
        command = re.sub(r"\bexample\.com(:\d+)?(?=\s|$)", f"localhost:{https}", command)
    if name != "overhead" and "--ca-file" not in command:
        command += f" --ca-file {ca}"
    if name == "probe" and probe_takes_an_http_port():
        command += f" --http-port {http}"   # the lab's HTTP side is not on port 80
    return command


def probe_takes_an_http_port() -> bool:
    """`probe` loads the other scheme on its default port unless it has --http-port (issue #17 item 12)."""
    source = ROOT / "tlsaudit" / "probes" / "management" / "commands" / "probe.py"
    return '"--http-port"' in source.read_text()


def run(command: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_readme_shows_every_command_in_a_form_that_runs_as_typed():
    names = [command_name(c) for c in readme_commands()]
    assert set(ONE_TARGET) <= set(names), names
    assert {"seed_demo", "create_api_key"} <= set(names), names
    for command in readme_commands():
        assert "[" not in command and "…" not in command, f"a placeholder cannot be typed: {command}"


@pytest.mark.parametrize("command", one_target_commands(), ids=lambda c: " ".join(shlex.split(c)[2:4]))
def test_a_one_target_command_runs_as_written_in_a_checkout(command, tls_lab, tmp_path):
    """Given a shell with no SECRET_KEY or TLSAUDIT_DEV, when the README's line runs against a lab
    server, then it measures it (exit 0), and writes nothing to the checkout's var/."""
    aimed = aim_at_lab(command, tls_lab)
    done = run(aimed, readers_environment(tmp_path / "var", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1"))
    assert done.returncode == 0, f"{aimed}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr and "ImproperlyConfigured" not in done.stderr
    if "--json" in aimed:
        assert "error" not in json.loads(done.stdout)
    else:
        assert "localhost" in done.stdout, done.stdout[-2000:]
    if command_name(command) == "probe":
        assert re.search(r"^\s*https\s+cold\s", done.stdout, re.M), done.stdout   # Chromium loaded the page
        if probe_takes_an_http_port():
            assert "http failed" not in done.stdout, done.stdout


@pytest.mark.parametrize("words", ["help audit", "help probe", "audit --help", "help", ""])
def test_help_runs_in_a_readers_shell(words, tmp_path):
    """`manage.py help <command>` (and the bare list of commands) reads no secret: it works with none set."""
    done = run(f".venv/bin/python manage.py {words}", readers_environment(tmp_path / "var"), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("Available subcommands" if words in ("", "help") else "usage: manage.py") in done.stdout + done.stderr


def test_a_refused_loopback_target_names_the_variable_that_allows_it(tls_lab, tmp_path):
    command = aim_at_lab(one_target_commands()[0], tls_lab)
    done = run(command, readers_environment(tmp_path / "var"), timeout=120)
    assert done.returncode == 2
    assert "loopback address" in done.stderr and "TLSAUDIT_ALLOW_PRIVATE_TARGETS=1" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_database_commands_run_as_written_after_make_run(tmp_path):
    """Given the SQLite database `make run` prepares (migrate, ensure_demo, as the Makefile runs
    them), the README's database lines run as written; without their TLSAUDIT_DEV=1 a line says in
    one line what to set, with no traceback."""
    var = tmp_path / "var"
    env = readers_environment(var)
    for step in ("migrate --noinput", "ensure_demo"):  # what `make run` does before serving
        prepared = run(f"TLSAUDIT_DEV=1 .venv/bin/python manage.py {step}", env)
        assert prepared.returncode == 0, prepared.stderr[-3000:]
    commands = database_commands()
    assert commands and all(c.startswith("TLSAUDIT_DEV=1 ") for c in commands), commands
    for command in commands:
        done = run(command, env, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr
    key = run(next(c for c in commands if "create_api_key" in c), env)
    assert re.search(r"\bhcw_|tla|[A-Za-z0-9_]{20,}", key.stdout), key.stdout
    bare = run(commands[0].removeprefix("TLSAUDIT_DEV=1 "), env)
    assert bare.returncode != 0
    message = bare.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert "SECRET_KEY" in message and "TLSAUDIT_DEV=1" in message, message
