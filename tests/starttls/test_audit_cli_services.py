"""`manage.py audit smtp://...` (#18 item 3): a STARTTLS service audited from the command line, as a
real process, with a graded report in text and JSON that says which service it was."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tlsaudit.audits.management.commands.audit import parse_arguments

MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


def audit_cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1",
               DATABASE_URL=f"sqlite:///{tmp_path / 'never-created.sqlite3'}",
               TLSAUDIT_VAR_DIR=str(tmp_path / "var"), PYTHONWARNINGS="ignore")
    run = subprocess.run([sys.executable, str(MANAGE_PY), "audit", *args], cwd=MANAGE_PY.parent, env=env,
                         capture_output=True, text=True, timeout=90)
    assert "Traceback" not in run.stderr, run.stderr
    return run


def test_it_audits_an_smtp_starttls_service_and_prints_a_graded_report(tmp_path, smtp_servers, service_pki):
    target = [f"smtp://localhost:{smtp_servers['smtp']}", "--ip", "127.0.0.1", "--ca-file", str(service_pki.ca_file)]

    as_json = audit_cli(tmp_path, *target, "--json")
    as_text = audit_cli(tmp_path, *target)

    assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    report = json.loads(as_json.stdout)
    assert (report["service"], report["port"], report["grade"]) == ("smtp", smtp_servers["smtp"], "A")
    assert report["protocols"] == ["TLSv1.2", "TLSv1.3"]
    assert report["hsts"]["check"]["status"] == "not_applicable"
    assert as_text.returncode == 0, as_text.stderr
    lines = as_text.stdout.splitlines()
    assert lines[0].startswith(f"TLS Audit of localhost:{smtp_servers['smtp']} (127.0.0.1)")
    assert lines[1] == " Service: SMTP (STARTTLS)"
    assert any(line.strip() == "Overall grade     A" for line in lines), as_text.stdout


def test_a_service_that_refuses_starttls_exits_2_with_the_reason(tmp_path, service_ports):
    run = audit_cli(tmp_path, f"imap://localhost:{service_ports['pop3']}", "--ip", "127.0.0.1", "--json")

    assert run.returncode == 2
    error = json.loads(run.stdout)
    assert error["error"]["code"] == "starttls_rejected", error
    assert "IMAP greeting" in error["error"]["message"]


def test_an_unknown_scheme_is_refused_before_any_connection(tmp_path):
    run = audit_cli(tmp_path, "gopher://localhost:70", "--json")

    assert run.returncode == 2
    assert "gopher:// is not a TLS service we audit" in run.stdout


def options(target: str) -> dict:
    return {"target": target, "ip": None, "ca_file": None, "timeout": "5", "deadline": "50"}


@pytest.mark.parametrize("target, host, port, service", [
    ("smtp://mail.example.com", "mail.example.com", 25, "smtp"),
    ("submission://mail.example.com:587", "mail.example.com", 587, "smtp"),
    ("imaps://mail.example.com", "mail.example.com", 993, "imaps"),
    ("postgresql://db.example.com", "db.example.com", 5432, "postgres"),
    ("LDAP://dir.example.com", "dir.example.com", 389, "ldap"),
    ("example.com", "example.com", 443, "https"),
    ("example.com:8443", "example.com", 8443, "https"),
    ("http://example.com", "example.com", 443, "https"),
    ("https://example.com:444/", "example.com", 444, "https"),
])
def test_the_service_and_its_default_port_come_from_the_scheme(target, host, port, service):
    parsed = parse_arguments(options(target))

    assert (parsed[0], parsed[1], parsed[-1]) == (host, port, service)


def test_the_readme_example_audits_a_starttls_mail_server(tmp_path, smtp_servers, service_pki):
    """The README's `manage.py audit smtp://mail.example.com`, aimed at our SMTP server as a reader aims
    it at theirs (the host and port replaced, the test CA given)."""
    readme = (MANAGE_PY.parent / "README.md").read_text()
    (command,) = re.findall(r"`(\.venv/bin/python manage\.py audit smtp://[^`]+)`", readme)
    target = shlex.split(command)[3].replace("mail.example.com", f"localhost:{smtp_servers['smtp']}")

    run = audit_cli(tmp_path, target, "--ip", "127.0.0.1", "--ca-file", str(service_pki.ca_file), "--json")

    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["service"] == "smtp"
