"""The one-target commands against every hostile server, run as a user types them (`manage.py audit
localhost:PORT --ip 127.0.0.1 --json` in its own process, no worker, no database): each ends by its
deadline with exit 2 and a JSON `error` (code and message), or, for a server whose TLS is real and
whose hostility is elsewhere, with its report. Most runs get a shorter deadline (`--deadline`, or the
settings' environment variables: the same code path); one audit keeps the default, the issue's
promise: a hostile target ends an audit in at most 60 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests import hostile

MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
                     "CELERY_TASK_ALWAYS_EAGER")
EITHER = -1           # done (exit 0), or the error given
START_S = 8.0          # Django and sslyze start-up, and the drain after a deadline, on a busy 2-core machine
PARALLEL = 3

# target -> (exit status, error code) of an audit; exit 0: done, the report says what could not be read.
AUDIT = {
    "tarpit": (2, "timeout"), "reset": (2, "connection_failed"), "plain_http": (2, "no_tls"),
    "garbage": (2, "no_tls"), "drip": (2, "timeout"), "drip_record": (2, "timeout"), "drip_noise": (2, "no_tls"),
    "drip_server_hello": (2, "timeout"), "trickle_every": (2, "timeout"), "slow_http": (0, None),
    "slow_subresource": (0, None), "big_chain": (2, "tls_handshake_failed"), "wrong_sni": (2, "tls_handshake_failed"),
    "handshake_then_hang": (0, None), "blackhole": (2, "timeout"),
}


def servers(pki, directory: Path) -> dict:
    return {"tarpit": hostile.tarpit, "reset": hostile.reset, "plain_http": hostile.plain_http,
            "garbage": hostile.garbage, "drip": hostile.drip, "drip_record": hostile.drip_record,
            "drip_noise": hostile.drip_noise, "drip_server_hello": hostile.drip_server_hello,
            "trickle_every": lambda: hostile.trickle_every(pki), "slow_http": lambda: hostile.slow_http(pki),
            "slow_subresource": lambda: hostile.slow_subresource(pki), "blackhole": hostile.blackhole,
            "big_chain": lambda: hostile.big_chain(pki, directory), "wrong_sni": lambda: hostile.wrong_sni(pki),
            "handshake_then_hang": lambda: hostile.handshake_then_hang(pki)}


@pytest.fixture
def cli(tmp_path):
    """cli([(argv, extra env), ...]) -> [(exit status, parsed JSON or None, seconds, stderr)], run PARALLEL
    at a time, each in a sandbox where the database file must never appear."""
    database = tmp_path / "never-created.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", DATABASE_URL=f"sqlite:///{database}",
               TLSAUDIT_VAR_DIR=str(tmp_path / "var"), PYTHONWARNINGS="ignore")

    def run_one(job, cap: float):
        argv, extra = job
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, str(MANAGE_PY), *argv], cwd=MANAGE_PY.parent,
                                   env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = process.communicate(timeout=cap)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None, None, time.monotonic() - started, f"killed after {cap:.0f} s"
        try:
            parsed = json.loads(stdout)
        except json.JSONDecodeError:
            parsed = None
        return process.returncode, parsed, time.monotonic() - started, stderr

    def run(jobs, cap: float):
        with ThreadPoolExecutor(PARALLEL) as pool:
            results = list(pool.map(lambda job: run_one(job, cap), jobs))
        assert not database.exists(), "a command opened the database"
        for _, _, _, stderr in results:
            assert "Traceback" not in stderr, stderr
        return results

    return run


def check(result, expected_exit: int, expected_code: str | None, bound_s: float, what: str) -> None:
    status, parsed, seconds, stderr = result
    assert status is not None, f"{what}: {stderr}"
    assert seconds <= bound_s, f"{what} took {seconds:.1f} s (bound {bound_s:.0f} s)"
    assert parsed is not None, f"{what}: stdout is not one JSON object ({stderr})"
    if expected_exit == EITHER:  # the page may or may not land on a stalled connection
        assert (status, parsed.get("error", {}).get("code")) in ((0, None), (2, expected_code)), (what, parsed)
    elif expected_exit == 2:
        assert status == 2 and parsed["error"]["code"] == expected_code, (what, parsed)
        assert parsed["error"]["message"], what
    else:
        assert status == 0 and "error" not in parsed, (what, parsed)


def test_every_hostile_target_ends_an_audit_by_its_deadline_with_exit_2_and_a_json_error(cli, tls_lab, tmp_path):
    deadline = 20
    with ExitStack() as stack:
        ports = {name: stack.enter_context(start()) for name, start in servers(tls_lab.pki, tmp_path).items()}
        jobs = [(["audit", f"localhost:{ports[name]}", "--ip", "127.0.0.1", "--ca-file", str(tls_lab.ca_file),
                  "--deadline", str(deadline), "--json"], {}) for name in AUDIT]
        results = cli(jobs, cap=deadline + 60)

    for (name, (status, code)), result in zip(AUDIT.items(), results):
        check(result, status, code, deadline + START_S, f"audit of {name}")


def test_a_server_that_stalls_some_connections_ends_an_audit_within_a_minute_at_the_default_deadline(cli, tls_lab):
    # Given a real TLS server that trickles one connection in seven (the pre-flight and sslyze's
    # connectivity test pass, then its scan threads stall one by one: before the deadline, for ever)
    with hostile.trickle_every(tls_lab.pki, nth=7) as port:
        # When a user audits it as they would, with the defaults
        [result] = cli([(["audit", f"localhost:{port}", "--ip", "127.0.0.1", "--json"], {})], cap=120)

    # Then it ends within a minute, exit 2, with the reason
    check(result, 2, "timeout", 60, "audit at the default deadline")
    message = result[1]["error"]["message"]
    assert message.startswith(f"The audit of 127.0.0.1:{port} did not finish within its 50 s deadline: "), message
    assert "still unfinished after 10 s" in message


# command -> target -> (exit, code), with CLI_DEADLINE_SECONDS=15 and LOAD_STALL_SECONDS=6
MEASURING = {
    "loadtest": {"drip_noise": (2, "no_tls"), "drip_server_hello": (2, "timeout"), "trickle_every": (2, "deadline"),
                 "slow_http": (2, "stalled"), "slow_subresource": (0, None)},
    "handshakes": {"drip_noise": (2, "no_tls"), "drip_server_hello": (2, "timeout"),
                   "trickle_every": (2, "deadline"), "slow_http": (0, None), "slow_subresource": (0, None)},
    # Chromium opens connections of its own (the favicon): whether the page's lands on a stalled one varies.
    "probe": {"drip_noise": (2, "no_tls"), "drip_server_hello": (2, "timeout"), "trickle_every": (EITHER, "timeout"),
              "slow_http": (2, "timeout"), "slow_subresource": (2, "timeout")},
}
SHORT = {"CLI_DEADLINE_SECONDS": "15", "LOAD_STALL_SECONDS": "6", "PROBE_LOAD_TIMEOUT": "8"}


def measuring_argv(command: str, port: int, ca_file: str) -> list[str]:
    target = f"localhost:{port}"
    return {"loadtest": ["loadtest", f"https://{target}/", "--timeout", "1"],
            # a count cap per cell (2 agents x 10 handshakes): a server that answers ends each cell at once
            # (24 cells, 480 handshakes: a few seconds for a Python server on a busy machine, where 10
            # agents x 20 took 16 s and missed the deadline), one that trickles keeps every cell to its
            # 2 s, and the matrix to the 15 s deadline
            "handshakes": ["handshakes", target, "--timeout", "2", "--deadline", "15", "--agents", "2",
                           "--per-agent", "10"],
            "probe": ["probe", f"https://{target}/", "--ca-file", ca_file, "--runs", "1"]}[command] + [
        "--ip", "127.0.0.1", "--json"]


def test_the_measuring_commands_end_a_hostile_run_by_their_deadline_or_stall_bound(cli, tls_lab, tmp_path):
    jobs, cases = [], []
    with ExitStack() as stack:
        factories = servers(tls_lab.pki, tmp_path)
        for command, targets in MEASURING.items():
            for name, expected in targets.items():
                port = stack.enter_context(factories[name]())  # one server per run: trickle_every counts
                jobs.append((measuring_argv(command, port, str(tls_lab.ca_file)), SHORT))
                cases.append((command, name, expected))
        results = cli(jobs, cap=90)

    for (command, name, (status, code)), result in zip(cases, results):
        check(result, status, code, 15 + START_S, f"{command} against {name}")


def test_an_overhead_sweep_stops_at_the_first_run_that_stalls(cli, tls_lab):
    # Given a plain HTTP side that answers (400; its connection ends after the 1 s drain grace), and an
    # HTTPS side whose responses trickle for ever: 12 requests of up to 1 s each, one at a time
    with hostile.slow_http(tls_lab.pki) as https_port, hostile.plain_http() as http_port:
        [result] = cli([(["overhead", "localhost", "--ip", "127.0.0.1", "--https-port", str(https_port),
                          "--http-port", str(http_port), "--levels", "1,2", "-n", "12", "--timeout", "1", "--repeats", "1", "--json"],
                         {**SHORT, "CLI_DEADLINE_SECONDS": "30"})], cap=90)

    # Then the sweep ends at the HTTPS side's first run (its warm-up), where every request timed out, exit 2,
    # and says why
    check(result, 2, "stalled", 30 + START_S, "overhead against slow_http")
    assert result[1]["error"]["message"].startswith(f"Every request to https://localhost:{https_port}/ timed out"), \
        result[1]


def test_an_overhead_sweep_ends_at_its_deadline_with_what_was_done(cli, tls_lab):
    # Given a sweep whose first run (12 plain HTTP requests, each ending after the 1 s drain grace) is longer
    # than the whole deadline of 5 s
    with hostile.slow_http(tls_lab.pki) as https_port, hostile.plain_http() as http_port:
        [result] = cli([(["overhead", "localhost", "--ip", "127.0.0.1", "--https-port", str(https_port),
                          "--http-port", str(http_port), "--levels", "1", "-n", "12", "-t", "0", "--timeout", "1",
                          "--deadline", "5", "--json"], {})], cap=90)

    check(result, 2, "deadline", 5 + START_S, "overhead past its deadline")
    assert result[1]["error"]["message"].startswith(f"The run against http://localhost:{http_port}/ was not done by "
                                                    "its 5 s deadline ("), result[1]
