"""`python manage.py audit` (issue #3 "CLI"), run as a real process against the nginx TLS lab.

Every run gets a DATABASE_URL naming a SQLite file that does not exist, no REDIS_URL (so the
filesystem broker under tmp_path) and its own TLSAUDIT_VAR_DIR. SQLite creates its file on the
first connection, so "the file still does not exist and no file appeared under var/" proves the
command neither touched the database nor enqueued, cached or stored anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.relay import counting_relay
from tests.support.tls_servers import free_ports

MANAGE_PY = Path(__file__).resolve().parents[1] / "manage.py"
# Variables of the pytest run that would point the child at the real PostgreSQL/Redis.
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
                     "CELERY_TASK_ALWAYS_EAGER")
TOP_LEVEL_TYPES = {
    "host": str, "port": int, "ip": str, "grade": str, "grade_ignoring_trust": str, "score": int,
    "scores": dict, "caps": list, "warnings": list, "findings": list, "mozilla": dict, "duration_s": (int, float),
}


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)  # the whole stdout must be one JSON document


@dataclass
class AuditCli:
    """Runs `manage.py audit` in a sandbox and checks after every run that nothing was written."""

    base_env: dict[str, str]
    database: Path
    var_dir: Path

    def __call__(self, *args: str, timeout: float = 60, **env: str) -> CliRun:
        return self.in_parallel([args], timeout=timeout, **env)[0]

    def json_and_text(self, *args: str, **env: str) -> tuple[CliRun, CliRun]:
        """The same command with and without --json, run side by side (each costs a Django start-up)."""
        as_json, as_text = self.in_parallel([(*args, "--json"), args], **env)
        return as_json, as_text

    def in_parallel(self, arg_lists, timeout: float = 60, **env: str) -> list[CliRun]:
        assert not self.database.exists()
        processes = [subprocess.Popen([sys.executable, str(MANAGE_PY), "audit", *args], cwd=MANAGE_PY.parent,
                                      env={**self.base_env, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for args in arg_lists]
        runs = []
        for process in processes:
            stdout, stderr = process.communicate(timeout=timeout)
            runs.append(CliRun(process.returncode, stdout, stderr))
            assert "Traceback" not in stderr, stderr
        self.assert_nothing_written()
        return runs

    def assert_nothing_written(self) -> None:
        assert not self.database.exists(), "the audit command opened the database"
        assert (self.var_dir / "broker" / "in").is_dir(), "the child did not use our TLSAUDIT_VAR_DIR"
        written = sorted(str(p.relative_to(self.var_dir)) for p in self.var_dir.rglob("*") if p.is_file())
        assert written == [], f"the audit command wrote files (broker message, cache, result...): {written}"


@pytest.fixture
def audit_cli(tmp_path) -> AuditCli:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    database = tmp_path / "never-created.sqlite3"
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", DATABASE_URL=f"sqlite:///{database}",
               TLSAUDIT_VAR_DIR=str(tmp_path / "var"), PYTHONWARNINGS="ignore")
    return AuditCli(env, database, tmp_path / "var")


def lab_target(tls_lab, name: str) -> list[str]:
    return [f"localhost:{tls_lab.port(name)}", "--ip", "127.0.0.1", "--ca-file", str(tls_lab.ca_file)]


def audit_json(audit_cli, tls_lab, name: str) -> dict:
    run = audit_cli(*lab_target(tls_lab, name), "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    return run.json


def mentions(items: list[dict], keyword: str, field: str = "reason") -> bool:
    return any(keyword in item[field].lower() for item in items)


# --- audits that ran: exit 0 ------------------------------------------------------------------

def test_it_prints_one_json_object_with_every_field_for_an_a_plus_server(audit_cli, tls_lab):
    spec = tls_lab.spec("a_plus_rsa_hsts")

    report = audit_json(audit_cli, tls_lab, "a_plus_rsa_hsts")

    for key, kind in TOP_LEVEL_TYPES.items():
        assert isinstance(report[key], kind), f"{key}: {report[key]!r}"
    assert (report["host"], report["port"], report["ip"]) == ("localhost", tls_lab.port("a_plus_rsa_hsts"),
                                                               "127.0.0.1")
    assert (report["grade"], report["grade_ignoring_trust"]) == ("A+", "A+")
    assert report["scores"] == dict(zip(("protocol", "key_exchange", "cipher"), spec.score[:3]))
    assert report["score"] == spec.score[3]
    assert report["caps"] == [] and report["warnings"] == []
    assert 0 < report["duration_s"] < 30
    assert report["findings"], "an audit always reports findings"
    for finding in report["findings"]:
        assert {k: type(finding[k]) for k in ("id", "severity", "title", "status")} == dict.fromkeys(
            ("id", "severity", "title", "status"), str)
        assert finding["status"] in ("pass", "fail", "info", "not_tested")
    assert {f["id"]: f["status"] for f in report["findings"]}["cert.expired"] == "pass"
    assert set(report["mozilla"]) == {"modern", "intermediate"}
    for verdict in report["mozilla"].values():
        assert verdict["compliant"] in (True, False, None) and isinstance(verdict["issues"], dict)
    assert report["mozilla"]["modern"]["compliant"] is False  # an RSA certificate never meets "modern"


def test_it_caps_a_server_offering_tls_1_0_and_1_1_at_b(audit_cli, tls_lab):
    report = audit_json(audit_cli, tls_lab, "b_tls10_enabled")

    assert report["grade"] == "B"
    assert [c["grade"] for c in report["caps"]] == ["B"]
    assert mentions(report["caps"], "tls 1.0") and mentions(report["caps"], "tls 1.1")
    for cap in report["caps"]:
        assert isinstance(cap["grade"], str) and isinstance(cap["reason"], str)


def test_it_grades_an_expired_certificate_t_but_a_plus_ignoring_trust(audit_cli, tls_lab):
    report = audit_json(audit_cli, tls_lab, "t_expired")

    assert (report["grade"], report["grade_ignoring_trust"]) == ("T", "A+")
    assert {f["id"]: f["status"] for f in report["findings"]}["cert.expired"] == "fail"


def test_it_grades_a_certificate_for_another_name_m(audit_cli, tls_lab):
    report = audit_json(audit_cli, tls_lab, "m_wrong_name")

    assert (report["grade"], report["grade_ignoring_trust"]) == ("M", "A+")
    assert {f["id"]: f["status"] for f in report["findings"]}["cert.hostname_mismatch"] == "fail"


def test_it_prints_a_readable_report_without_json(audit_cli, tls_lab):
    run = audit_cli(*lab_target(tls_lab, "b_tls10_enabled"))

    assert run.returncode == 0, run.stderr
    lines = [line.strip() for line in run.stdout.splitlines()]
    assert f"TLS Audit of localhost:{tls_lab.port('b_tls10_enabled')} (127.0.0.1)" in run.stdout
    assert "Protocols" in lines
    for protocol, state in [("SSLv3", "not offered"), ("TLSv1.0", "offered"), ("TLSv1.1", "offered"),
                            ("TLSv1.2", "offered"), ("TLSv1.3", "offered")]:
        assert f"{protocol:<8} {state}" in lines
    assert "Final score       91" in lines
    assert "Overall grade     B" in lines
    assert any(line.startswith("Grade cap         B: TLS 1.0 and TLS 1.1") for line in lines)


# --- audits that could not run: exit 2 ----------------------------------------------------------

def closed_port_target(tls_lab) -> tuple[list[str], dict]:
    port = free_ports(1)[0]  # bound, then released: nothing listens there
    return [f"localhost:{port}", "--ip", "127.0.0.1"], {}


def plain_http_target(tls_lab) -> tuple[list[str], dict]:
    return [f"localhost:{tls_lab.http_port('a_plus_rsa_hsts')}", "--ip", "127.0.0.1"], {}


def unresolvable_target(tls_lab) -> tuple[list[str], dict]:
    return ["nothing.invalid"], {}


def private_target(tls_lab) -> tuple[list[str], dict]:
    return lab_target(tls_lab, "a_plus_rsa_hsts"), {"TLSAUDIT_ALLOW_PRIVATE_TARGETS": "0"}


@pytest.mark.parametrize("target, code", [
    (closed_port_target, "refused"),
    (plain_http_target, "no_tls"),
    (unresolvable_target, "dns"),
    (private_target, "private_target"),
], ids=lambda value: getattr(value, "__name__", value))
def test_it_exits_2_with_an_error_code_when_the_audit_cannot_run(audit_cli, tls_lab, target, code):
    args, env = target(tls_lab)

    as_json, as_text = audit_cli.json_and_text(*args, **env)

    assert as_json.returncode == 2, as_json.stdout + as_json.stderr
    error = as_json.json["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert as_text.returncode == 2
    assert as_text.stdout == ""
    assert as_text.stderr.strip() == f"audit failed: {error['message']}"


@pytest.mark.parametrize("args, complaint", [
    (["https://x.example/path"], "path"),
    (["host.example:99999"], "99999"),
    (["host:99999"], "99999"),
    ([""], "host name"),
    ([], "host name"),
    (["localhost", "--ip", "300.1.1.1"], "300.1.1.1"),
    (["localhost", "--ca-file", "/nonexistent/ca.pem"], "does not exist"),
    (["localhost", "--ca-file", str(MANAGE_PY)], "not a pem"),
    (["localhost", "--timeout", "0"], "--timeout"),
    (["localhost", "--timeout", "nan"], "--timeout"),
    (["localhost", "--timeout", "0.5"], "--timeout"),
], ids=["url-with-path", "port-out-of-range", "short-host-port-out-of-range", "empty", "missing", "bad-ip",
        "missing-ca-file", "ca-file-not-pem", "timeout-zero", "timeout-nan", "timeout-fraction"])
def test_it_refuses_bad_arguments_with_exit_2(audit_cli, args, complaint):
    as_json, as_text = audit_cli.json_and_text(*args)

    assert as_json.returncode == 2, as_json.stdout + as_json.stderr
    assert as_json.json == {"error": {"code": "invalid_argument", "message": as_json.json["error"]["message"]}}
    assert complaint in as_json.json["error"]["message"].lower()
    assert as_text.returncode == 2
    assert as_text.stdout == ""
    assert as_text.stderr.strip() == f"audit failed: {as_json.json['error']['message']}"


def test_the_sandbox_database_is_live_so_its_absence_proves_no_write(audit_cli):
    # Control for the "no database write" proof: a command that does connect creates the file.
    done = subprocess.run([sys.executable, str(MANAGE_PY), "check", "--database", "default"], cwd=MANAGE_PY.parent,
                          env=audit_cli.base_env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert audit_cli.database.exists()


# --- several targets at once (issue #16): the same engine, concurrently, one JSON line each ------------

BATCH = ("a_plus_rsa_hsts", "b_tls10_enabled", "t_expired", "m_wrong_name")


def batch_lines(run: CliRun) -> dict[str, dict]:
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert len(lines) == len(run.stdout.strip().splitlines()), "every line must be one JSON object"
    return {line["target"]: line for line in lines}


def test_it_audits_several_targets_concurrently_each_with_its_own_grade(audit_cli, tls_lab):
    targets = [f"localhost:{tls_lab.port(name)}" for name in BATCH]

    run = audit_cli(*targets, "--ip", "127.0.0.1", "--ca-file", str(tls_lab.ca_file), "--json")

    assert run.returncode == 0, run.stdout + run.stderr
    lines = batch_lines(run)
    assert sorted(lines) == sorted(targets)
    for name, target in zip(BATCH, targets):
        spec = tls_lab.spec(name)
        assert lines[target]["port"] == tls_lab.port(name)
        assert (lines[target]["grade"], lines[target]["grade_ignoring_trust"]) == (spec.grade,
                                                                                  spec.grade_ignoring_trust), name


def test_a_batch_with_one_target_that_cannot_run_exits_2_and_still_reports_the_others(audit_cli, tls_lab):
    good = f"localhost:{tls_lab.port('a_plus_rsa_hsts')}"
    closed = f"localhost:{free_ports(1)[0]}"

    as_json, as_text = audit_cli.json_and_text(good, closed, "bad:99999", "--ip", "127.0.0.1",
                                               "--ca-file", str(tls_lab.ca_file))

    assert as_json.returncode == 2, as_json.stdout + as_json.stderr
    lines = batch_lines(as_json)
    assert lines[good]["grade"] == "A+"
    assert lines[closed]["error"]["code"] == "refused"
    assert lines["bad:99999"]["error"]["code"] == "invalid_argument"
    assert as_text.returncode == 2
    assert f"TLS Audit of {good} (127.0.0.1)" in as_text.stdout
    assert f"audit failed: {closed}:" in as_text.stderr and "audit failed: bad:99999:" in as_text.stderr


def test_a_batch_refuses_one_pdf_for_several_targets(audit_cli, tmp_path):
    run = audit_cli("a.example", "b.example", "--pdf", str(tmp_path / "x.pdf"), "--json")

    assert run.returncode == 2
    assert run.json["error"]["code"] == "invalid_argument" and "one target" in run.json["error"]["message"]


SHARED = 15


@pytest.mark.timing   # fifteen audits back to back keep a core busy: never beside the latency lab
def test_fifteen_sites_on_one_address_take_turns_and_all_are_graded_within_five_connections(audit_cli, tls_lab):
    """#27: 15 sites on one address (15 ports of one host), each audit with a 10 s deadline. Sharing the
    address's 5 connections among 15 audits (~9,000 connections) ran them all out of time together; in
    turn, each audit has its whole deadline and the address never more than 5 of our connections."""
    names = tls_lab.names("grade")
    plan = [names[i % len(names)] for i in range(SHARED)]
    with counting_relay([tls_lab.port(name) for name in plan]) as relay:
        targets = [f"localhost:{port}" for port in relay.ports()]

        run = audit_cli(*targets, "--ip", "127.0.0.1", "--ca-file", str(tls_lab.ca_file), "--json",
                        "--deadline", "10", timeout=SHARED * 10 + 30)

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = batch_lines(run)
    assert sorted(lines) == sorted(targets)
    for name, target in zip(plan, targets):
        spec = tls_lab.spec(name)
        assert (lines[target]["grade"], lines[target]["grade_ignoring_trust"]) == (spec.grade,
                                                                                  spec.grade_ignoring_trust), name
    assert relay.total > SHARED * 60                   # every audit went through the relay (~90-120 each)
    assert relay.peak <= 5 + 1, relay.peak              # the relay's count: within the connection in flight
