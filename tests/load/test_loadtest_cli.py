"""`manage.py loadtest` and `manage.py overhead` (issue #4 "CLI"), run as real processes.

Like `audit`, they run without a worker or database: every run gets a DATABASE_URL naming a
SQLite file that must never appear, and no REDIS_URL. Bad arguments are run side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
NAME = "load_no_resumption"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)


@pytest.fixture
def cli(tmp_path):
    """cli([args], [args], ..., private=True) -> list[Run], all run in parallel; checks no database appeared."""
    database = tmp_path / "never-created.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env.update(TLSAUDIT_DEV="1", DATABASE_URL=f"sqlite:///{database}", TLSAUDIT_VAR_DIR=str(tmp_path / "var"),
               PYTHONWARNINGS="ignore")

    def run(*arg_lists, private=True) -> list[Run]:
        child_env = {**env, "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1" if private else "0"}
        processes = [subprocess.Popen([sys.executable, str(MANAGE_PY), *args], cwd=MANAGE_PY.parent, env=child_env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for args in arg_lists]
        outputs = [p.communicate(timeout=120) for p in processes]
        runs = [Run(p.returncode, out, err) for p, (out, err) in zip(processes, outputs)]
        for r in runs:
            assert "Traceback" not in r.stderr, r.stderr
        assert not database.exists(), "the command opened the database"
        return runs

    return run


def https_url(tls_lab) -> str:
    return f"https://localhost:{tls_lab.port(NAME)}/"


def http_url(tls_lab) -> str:
    return f"http://localhost:{tls_lab.http_port(NAME)}/health"


# --- loadtest: runs that happened ----------------------------------------------------------------------

def test_loadtest_prints_the_issues_json_fields_for_https(cli, tls_lab):
    [run] = cli(["loadtest", https_url(tls_lab), "--ip", "127.0.0.1", "-n", "40", "-c", "4",
                 "--ca-file", str(tls_lab.ca_file), "--json"])

    assert run.returncode == 0, run.stdout + run.stderr
    data = run.json
    assert (data["complete"], data["failed"], data["non_2xx"]) == (40, 0, 0)
    assert data["requests_per_second"] > 0 and data["time_taken_s"] > 0
    assert set(data["latency_ms"]) == {"p50", "p90", "p99", "max", "mean"}
    assert data["latency_ms"]["p50"] <= data["latency_ms"]["p99"] <= data["latency_ms"]["max"]
    assert data["connect_ms"]["mean"] > 0
    assert data["tls_handshake_ms"]["median"] > 0 and data["report"]["tls_handshake"]["count"] == 40
    assert (data["protocol"], data["cipher"]) == ("TLSv1.3", "TLS_AES_256_GCM_SHA384")
    assert data["report"]["connections_opened"] == 40


def test_loadtest_over_http_with_keep_alive_has_no_tls_numbers(cli, tls_lab):
    [run] = cli(["loadtest", http_url(tls_lab), "-n", "200", "-c", "2", "-k", "--processes", "2", "--json"])

    assert run.returncode == 0, run.stdout + run.stderr
    data = run.json
    assert (data["complete"], data["failed"]) == (200, 0)
    assert data["tls_handshake_ms"] is None and data["protocol"] is None and data["cipher"] is None
    assert data["report"]["keepalive_requests"] == 200 and data["report"]["connections_opened"] == 2
    assert data["report"]["processes"] == 2


def test_loadtest_text_uses_abs_labels_and_a_time_limit_like_ab_t(cli, tls_lab):
    text, timed = cli(["loadtest", https_url(tls_lab), "--ip", "127.0.0.1", "-n", "30", "-c", "3", "-f", "1.2",
                       "-Z", "ECDHE-RSA-AES128-GCM-SHA256", "-H", "X-Trace: 1"],
                      ["loadtest", http_url(tls_lab), "-k", "-c", "1", "-t", "0.5", "--json"])

    assert text.returncode == 0, text.stderr
    for line in ("Server Software:        nginx/", "SSL/TLS Protocol:       TLSv1.2,ECDHE-RSA-AES128-GCM-SHA256",
                 "Complete requests:      30", "Failed requests:        0", "Requests per second:",
                 "Connection Times (ms)", "Percentage of the requests served within a certain time (ms)",
                 " 100%", "TLS handshake:", "Connections opened:     30", "Load engine:            C loop"):
        assert line in text.stdout, line
    assert timed.returncode == 0, timed.stderr
    # -t without -n: at most 50,000 requests (ab's rule), ended by the time limit unless the C loop did
    # all 50,000 first (one connection: ~30 µs a request here, so normally the limit ends it).
    assert 0 < timed.json["complete"] <= 50_000
    assert timed.json["complete"] == 50_000 or 0.45 <= timed.json["time_taken_s"] <= 1.0


# --- loadtest: refusals, exit 2 ----------------------------------------------------------------------------

BAD_LOADTEST = [
    ([], "invalid_argument", "url: give the URL to load"),
    (["ftp://localhost/"], "invalid_argument", "must start with http:// or https://"),
    (["https://u:p@localhost/"], "invalid_argument", "remove the user name and password"),
    (["https://localhost:99999/"], "invalid_argument", "url: Port 99999 is out of range"),
    (["https://localhost/a b"], "invalid_argument", "the path cannot contain spaces"),
    (["URL", "-n", "0"], "invalid_argument", "-n must be between 1 and 1000000, got 0"),
    (["URL", "-n", "many"], "invalid_argument", "-n: 'many' is not a whole number"),
    (["URL", "-n", "2", "-c", "5"], "invalid_argument", "-c 5 is more than -n 2"),
    (["URL", "-c", "5000", "-n", "9000"], "invalid_argument", "-c must be between 1 and 1000, got 5000"),
    (["URL", "--timeout", "0"], "invalid_argument", "--timeout must be more than 0"),
    (["URL", "--timeout", "nan"], "invalid_argument", "--timeout must be more than 0"),
    (["URL", "-t", "soon"], "invalid_argument", "-t: 'soon' is not a number of seconds"),
    (["URL", "-H", "NoColon"], "invalid_argument", "-H: 'NoColon' is not a header"),
    (["URL", "--ip", "999.1.1.1"], "invalid_argument", "--ip: '999.1.1.1' is not an IPv4 or IPv6 address"),
    (["URL", "--ca-file", "CA", "--insecure"], "invalid_argument", "--ca-file and --insecure exclude each other"),
    (["URL", "--ca-file", "/nonexistent/ca.pem"], "invalid_argument", "--ca-file: /nonexistent/ca.pem does not exist"),
    (["URL", "--ca-file", str(MANAGE_PY)], "invalid_argument", "is not a PEM certificate file"),
    (["URL", "-f", "1.1"], "invalid_argument", "-f: '1.1' is not a TLS version"),
    (["URL", "-f", "1.3", "-Z", "ECDHE-RSA-AES128-GCM-SHA256"], "invalid_argument", "-Z sets TLS <= 1.2"),
    (["URL", "-Z", "NOT-A-CIPHER"], "invalid_argument", "OpenSSL accepts no cipher of 'NOT-A-CIPHER'"),
    (["URL", "--processes", "0"], "invalid_argument", "--processes must be between 1 and 16, got 0"),
    (["HTTP_URL", "-Z", "AES128-SHA"], "invalid_argument", "-f / -Z apply to https:// URLs only"),
    (["HTTP_URL", "--ca-file", "CA"], "invalid_argument", "--ca-file applies to https:// URLs only"),
    (["URL", "--repeats", "21"], "invalid_argument", "--repeats must be between 1 and 20, got 21"),
]


def test_every_bad_loadtest_argument_exits_2_with_its_message(cli, tls_lab):
    def concrete(args):
        swap = {"URL": https_url(tls_lab), "HTTP_URL": http_url(tls_lab), "CA": str(tls_lab.ca_file)}
        return ["loadtest", *[swap.get(a, a) for a in args], "--json"]

    runs = cli(*[concrete(args) for args, _, _ in BAD_LOADTEST])

    for (args, code, message), run in zip(BAD_LOADTEST, runs):
        assert run.returncode == 2, (args, run.stdout, run.stderr)
        assert run.json["error"]["code"] == code, args
        assert message in run.json["error"]["message"], (args, run.json["error"]["message"])


def test_loadtest_refuses_private_targets_unless_allowed_and_says_when_nothing_connects(cli, tls_lab,
                                                                                         refused_port):
    [private] = cli(["loadtest", https_url(tls_lab), "--json"], private=False)
    refused, refused_text = cli(["loadtest", f"http://127.0.0.1:{refused_port}/", "-n", "3", "--json"],
                                ["loadtest", f"http://127.0.0.1:{refused_port}/", "-n", "3"])

    assert private.returncode == 2 and private.json["error"]["code"] == "private_target"
    assert "loopback" in private.json["error"]["message"]
    assert refused.returncode == 2 and refused.json["error"]["code"] == "no_connection"
    assert refused.json["errors"] == {"connect: ConnectionRefusedError": 3}
    assert refused_text.returncode == 2 and refused_text.stdout == ""
    assert "loadtest failed: No request could connect to 127.0.0.1" in refused_text.stderr


# --- overhead ----------------------------------------------------------------------------------------------

def overhead_args(tls_lab, *extra) -> list[str]:
    return ["overhead", "localhost", "--ip", "127.0.0.1", "--http-port", str(tls_lab.http_port(NAME)),
            "--https-port", str(tls_lab.port(NAME)), "--path", "/health", *extra]


def test_overhead_reports_each_level_over_repeats_and_the_signed_average(cli, tls_lab):
    as_json, as_text = cli(overhead_args(tls_lab, "--levels", "1,3", "-n", "30", "--json"),
                           overhead_args(tls_lab, "--levels", "2", "-n", "20", "-k", "--repeats", "2"))

    assert as_json.returncode == 0, as_json.stderr
    data = as_json.json
    assert data["repeats"] == 3 and 0 < data["startup_s"] < 30
    assert [row["concurrency"] for row in data["levels"]] == [1, 3]
    assert len(data["runs"]) == 2 * 2 * 3   # levels x sides x repeats (the warm-ups are not figures)
    for run in data["runs"]:
        assert run["complete"] == 30 and run["wall_s"] >= run["time_taken_s"]
        assert (run["protocol"] == "TLSv1.3") == (run["scheme"] == "https")
    for row in data["levels"]:
        assert row["http"]["repeats"] == row["https"]["repeats"] == 3
        # 30 requests on loopback take milliseconds, and still answer: every request's time, with an interval
        time = row["time_taken_overhead"]
        assert time["verdict"] in ("higher", "lower", "no significant difference") and time["n"] == 3
        assert time["low_pct"] <= time["pct"] <= time["high_pct"] and row["https"]["too_short"] is None
        # the sign agrees with the two medians it compares
        assert (time["pct"] > 0) == (time["other_median"] > time["base_median"])
    assert data["average"]["levels_used"] == [1, 3]
    assert as_text.returncode == 0, as_text.stderr
    assert "keep-alive" in as_text.stdout and "\navg " in as_text.stdout
    assert "2 repeats per level after a discarded warm-up" in as_text.stdout
    assert "HTTP median ms" in as_text.stdout and "too short" not in as_text.stdout.lower()
    assert "Start-up:" in as_text.stdout


def test_overhead_warms_up_then_interleaves_http_and_https_alternating_which_goes_first(tls_lab):
    from tlsaudit.loadtests.management.commands.overhead import parse_overhead, run_sweep
    from workers.load.client import run_load

    order = []

    def recording_run_load(spec, on_progress=None):
        order.append((spec.scheme, spec.concurrency, spec.requests))
        return run_load(spec, on_progress=on_progress)

    options = {"host": "localhost", "ip": "127.0.0.1", "keepalive": False, "timeout": "5", "processes": "1",
               "http_port": str(tls_lab.http_port(NAME)), "https_port": str(tls_lab.port(NAME)), "path": "/health",
               "levels": "1,2", "requests": "6", "repeats": "2", "time_limit": None}
    runs = run_sweep(recording_run_load, parse_overhead(options), "127.0.0.1")

    assert order == [("http", 2, 6), ("https", 2, 6),                    # warm-up, discarded
                     ("http", 1, 6), ("https", 1, 6), ("http", 2, 6), ("https", 2, 6),
                     ("https", 1, 6), ("http", 1, 6), ("https", 2, 6), ("http", 2, 6)]
    assert [(r["repeat"], r["scheme"], r["concurrency"]) for r in runs] == [
        (0, "http", 1), (0, "https", 1), (0, "http", 2), (0, "https", 2),
        (1, "https", 1), (1, "http", 1), (1, "https", 2), (1, "http", 2)]
    assert all(r["report"]["complete_requests"] == 6 for r in runs)


def test_the_default_sweep_has_a_deadline_its_runs_fit_in():
    """At 50 ms RTT the default sweep (20 runs of up to 5 s: 2 warm-ups, 3 levels x 2 sides x 3 repeats)
    failed at the CLI's usual 50 s deadline (bench/honest_stats.py found it). With -t, the default
    deadline is every run to its limit, plus the margin `loadtest -t` leaves; --deadline still rules."""
    from tlsaudit.loadtests.management.commands.loadtest import DEADLINE_AFTER_TIME_LIMIT_S, parse_deadline
    from tlsaudit.loadtests.management.commands.overhead import longest_sweep_s, parse_overhead

    options = {"host": "localhost", "ip": "127.0.0.1", "keepalive": False, "timeout": "5", "processes": "1",
               "http_port": "80", "https_port": "443", "path": "/", "levels": "1,20,40", "requests": "500",
               "repeats": "3", "time_limit": "5"}
    plan = parse_overhead(options)

    assert longest_sweep_s(plan) == pytest.approx((5 + 0.6) * 20)   # each run's set-up and requests in flight
    assert parse_deadline(options, longest_sweep_s(plan)) == pytest.approx(112 + DEADLINE_AFTER_TIME_LIMIT_S)
    assert parse_deadline({**options, "deadline": "40"}, longest_sweep_s(plan)) == 40
    assert longest_sweep_s(parse_overhead({**options, "time_limit": "0"})) is None


def test_loadtest_reports_the_end_to_end_rate_the_start_up_apart_and_repeats(cli, tls_lab):
    text, repeated = cli(["loadtest", https_url(tls_lab), "--ip", "127.0.0.1", "-n", "30", "-c", "3"],
                         ["loadtest", https_url(tls_lab), "--ip", "127.0.0.1", "-n", "30", "-c", "3", "--repeats", "3",
                          "--json"])

    assert text.returncode == 0, text.stderr
    assert "End to end:             " in text.stdout and "(set-up included)" in text.stdout
    assert "Start-up:               " in text.stdout and "Too short" not in text.stdout  # one run still gives figures
    assert repeated.returncode == 0, repeated.stderr
    data = repeated.json
    assert data["repeats"] == 3 and len(data["runs"]) == 3 and all(r["complete"] == 30 for r in data["runs"])
    rate = data["summary"]["requests_per_second"]
    assert rate["n"] == 3 and rate["low"] <= rate["median"] <= rate["high"]
    assert data["report"]["requests_per_second_end_to_end"] == pytest.approx(rate["median"])


BAD_OVERHEAD = [
    ([], "host: give the site, e.g. example.com, example.com:8443 or https://example.com/"),
    (["ftp://localhost/"], "must start with http:// or https://"),
    (["localhost:8443", "--https-port", "9443"], "--https-port: 9443 differs from the target's port 8443"),
    (["http://localhost:8080/", "--http-port", "80"], "--http-port: 80 differs from the target's port 8080"),
    (["https://localhost/a", "--path", "/b"], "--path: '/b' differs from the URL's path '/a'"),
    (["localhost", "--http-port", "0"], "--http-port: Port 0 is out of range"),
    (["localhost", "--https-port", "https"], "--https-port: Port 'https' is not a number"),
    (["localhost", "--levels", ","], "--levels: give at least one concurrency level"),
    (["localhost", "--levels", "1,x"], "--levels: 'x' is not a whole number"),
    (["localhost", "--levels", "1,1"], "--levels: '1,1' repeats a level"),
    (["localhost", "--levels", "0"], "--levels must be between 1 and 1000, got 0"),
    (["localhost", "-n", "5", "--levels", "10"], "-n 5 is less than the highest level 10"),
    (["localhost", "-n", "600000", "--levels", "1,2", "--repeats", "1"], "this sweep would send 2,400,000 requests"),
    (["localhost", "-n", "200000", "--levels", "1,2"], "(lower -n, --levels or --repeats)"),
    (["localhost", "--repeats", "0"], "--repeats must be between 1 and 20, got 0"),
    (["localhost", "-t", "never"], "-t: 'never' is not a number of seconds"),
    (["localhost", "--path", "health"], "--path: 'health' must start with /"),
    (["localhost", "--timeout", "-1"], "--timeout must be more than 0"),
    (["localhost", "--ip", "localhost"], "--ip: 'localhost' is not an IPv4 or IPv6 address"),
]


def test_every_bad_overhead_argument_exits_2_with_its_message(cli):
    runs = cli(*[["overhead", *args, "--json"] for args, _ in BAD_OVERHEAD])

    for (args, message), run in zip(BAD_OVERHEAD, runs):
        assert run.returncode == 2, (args, run.stdout, run.stderr)
        assert run.json["error"]["code"] == "invalid_argument", args
        assert message in run.json["error"]["message"], (args, run.json["error"]["message"])


def test_overhead_exits_2_when_a_side_cannot_connect(cli, tls_lab, refused_port):
    [run] = cli(["overhead", "localhost", "--ip", "127.0.0.1", "--http-port", str(refused_port),
                 "--https-port", str(tls_lab.port(NAME)), "--levels", "1", "-n", "3", "--json"])

    assert run.returncode == 2
    assert run.json["error"]["code"] == "no_connection"
    assert run.json["error"]["message"].startswith("HTTP at concurrency 1: No request could connect")


def test_the_overhead_defaults_are_sized_by_time_with_the_single_visitor_first():
    """No -n: each run lasts -t (2 s), its request count only capped as ab -t caps it; the levels are the
    dashboard's, c=1 first; the plan's longest time is known before it starts."""
    from tlsaudit.loadtests.management.commands.loadtest import AB_TIME_LIMIT_REQUESTS
    from tlsaudit.loadtests.management.commands.overhead import DEFAULT_LEVELS, longest_sweep_s, parse_overhead

    options = {"host": "localhost", "ip": "127.0.0.1", "keepalive": False, "timeout": "5", "processes": "1",
               "http_port": "80", "https_port": "443", "path": "/", "levels": DEFAULT_LEVELS, "requests": None,
               "repeats": None, "time_limit": "2"}
    plan = parse_overhead(options)

    assert plan["levels"][0] == 1 and (plan["time_limit"], plan["requests"]) == (2.0, AB_TIME_LIMIT_REQUESTS)
    assert longest_sweep_s(plan) == pytest.approx((2 + 0.6) * (2 + 4 * 2 * 3))
    untimed = parse_overhead({**options, "time_limit": "0"})
    assert (untimed["time_limit"], untimed["requests"]) == (None, 500)
    with pytest.raises(ValueError, match="the limit is 2,000,000"):
        parse_overhead({**options, "requests": "1000000"})
