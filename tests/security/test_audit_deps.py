"""`.ci/audit-deps` (make check): audited-clean, audited-vulnerable and could-not-audit stay three
distinct outcomes. The branches are driven by a stand-in pip-audit that prints what the real one prints
in each case (a vulnerability service is not reachable from every machine); the last test runs the
real pip-audit and accepts only a real result or the NOT CHECKED banner, never a silent pass."""

import os
import subprocess
import tempfile
from pathlib import Path

# Each run writes its logs to a folder of its own (AUDIT_LOG_DIR): a run never reads another's log.
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "audit-deps"

CLEAN = "No known vulnerabilities found"
VULNERABLE = """Found 1 known vulnerability in 1 package
Name   Version ID                  Fix Versions
------ ------- ------------------- ------------
django 5.2.1   PYSEC-2025-0000     5.2.2"""
UNREACHABLE = {"pypi": "ERROR:pip_audit._cli:six: Dependency not found on PyPI and could not be audited: six (1.17.0)",
               "osv": "socket.gaierror: [Errno -2] Name or service not known"}


def stand_in(tmp_path, answers: dict[str, tuple[int, str]]) -> Path:
    """A pip-audit that answers per --vulnerability-service with (exit status, output)."""
    cases = "\n".join(f'  {service}) echo "{text}"; exit {status};;' for service, (status, text) in answers.items())
    script = tmp_path / "pip-audit"
    script.write_text(f'#!/usr/bin/env bash\nservice=""\nwhile [ $# -gt 0 ]; do\n'
                      f'  [ "$1" = "--vulnerability-service" ] && service=$2; shift\ndone\n'
                      f'case "$service" in\n{cases}\nesac\n')
    script.chmod(0o755)
    return script


def run(pip_audit, **env):
    logs = Path(tempfile.mkdtemp(prefix="audit-deps-"))
    return subprocess.run([str(SCRIPT)], env={**os.environ, "PIP_AUDIT": str(pip_audit), "AUDIT_LOG_DIR": str(logs),
                                              **env}, capture_output=True, text=True, timeout=900)


def test_a_clean_audit_passes_and_says_what_was_checked(tmp_path):
    result = run(stand_in(tmp_path, {"pypi": (0, CLEAN)}))
    assert result.returncode == 0
    assert "pinned packages checked against pypi: no known vulnerabilities." in result.stdout


def test_a_vulnerable_pin_fails_with_the_findings(tmp_path):
    result = run(stand_in(tmp_path, {"pypi": (1, VULNERABLE)}))
    assert result.returncode == 1
    assert "KNOWN VULNERABILITIES" in result.stderr and "PYSEC-2025-0000" in result.stderr


def test_the_second_service_is_asked_when_the_first_cannot_answer(tmp_path):
    result = run(stand_in(tmp_path, {"pypi": (1, UNREACHABLE["pypi"]), "osv": (1, VULNERABLE)}))
    assert result.returncode == 1 and "(osv)" in result.stderr


def test_no_reachable_service_is_not_checked_never_a_pass(tmp_path):
    answers = {service: (1, text) for service, text in UNREACHABLE.items()}
    relaxed = run(stand_in(tmp_path, answers))
    required = run(stand_in(tmp_path, answers), REQUIRE_DEP_AUDIT="1")

    for result in (relaxed, required):
        assert "DEPENDENCY AUDIT NOT CHECKED" in result.stderr and "This is not a pass." in result.stderr
        assert "no known vulnerabilities" not in result.stdout
        assert "Name or service not known" in result.stderr
    assert relaxed.returncode == 0 and required.returncode == 3


def test_the_real_pip_audit_gives_a_result_or_says_it_could_not(tmp_path):
    result = run(ROOT / ".venv" / "bin" / "pip-audit")
    checked = result.returncode == 0 and "no known vulnerabilities." in result.stdout
    vulnerable = result.returncode == 1 and "KNOWN VULNERABILITIES" in result.stderr
    not_checked = result.returncode == 0 and "DEPENDENCY AUDIT NOT CHECKED" in result.stderr
    assert checked or vulnerable or not_checked, result.stdout + result.stderr
    assert not vulnerable, result.stderr  # a known-vulnerable pin must be upgraded
