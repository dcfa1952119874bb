"""`python manage.py handshakes` as a real process: no worker, no database; every bad argument named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.tls_servers import free_ports

MANAGE_PY = Path(__file__).resolve().parents[2] / "manage.py"


def handshakes(*args: str, allow_private: str = "1") -> subprocess.CompletedProcess:
    # A DATABASE_URL that cannot be reached proves the command never opens the database.
    env = {**os.environ, "TLSAUDIT_ALLOW_PRIVATE_TARGETS": allow_private,
           "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
    run = subprocess.run([sys.executable, str(MANAGE_PY), "handshakes", *args], cwd=MANAGE_PY.parent, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr, run.stderr
    return run


def test_it_prints_the_matrix_as_json(tls_lab):
    run = handshakes(f"localhost:{tls_lab.port('load_session_cache')}", "--ip", "127.0.0.1", "--agents", "2",
                     "--per-agent", "2", "--resume", "--repeats", "2", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["repeats"] == 2 and report["verified"] is False
    assert [c["version"] for c in report["cells"] if c.get("warmup")] == ["1.2", "1.3"]
    full = [c for c in report["cells"] if c["mode"] == "full" and not c.get("warmup")]
    assert len(full) == 12 and all(c["count"] == 4 for c in full)          # 6 suites x 2 rounds
    assert sorted({c["repeat"] for c in full}) == [0, 1]
    assert {c["resumption"] for c in report["cells"] if c["mode"] == "resumed"} == {"supported"}
    assert {r["family"] for r in report["tls13_vs_tls12"]} == {"AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305",
                                                                "all"}
    assert all("histograms" not in c for c in report["cells"])
    # rates over each cell's end-to-end wall time, the start-up reported apart
    assert all(c["handshakes_per_s"] == round(c["count"] / c["wall_s"], 1) for c in full)
    assert 0 < report["startup_s"] < 30
    assert {(r["version"], r["repeats"]) for r in report["summary"] if r["mode"] == "full"} == {("1.2", 2), ("1.3", 2)}


def test_it_prints_a_table_with_every_column(tls_lab):
    run = handshakes(f"localhost:{tls_lab.port('load_no_resumption')}", "--ip", "127.0.0.1", "--agents", "1,2",
                     "--per-agent", "2", "--suites", "TLS_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256",
                     "--resume")
    assert run.returncode == 0, run.stderr
    header = next(line for line in run.stdout.splitlines() if line.startswith("version"))
    assert header.split() == ["version", "suite", "agents", "runs", "n", "median", "95", "%", "interval", "mean",
                              "hs/s", "failures"]
    assert "TLS_AES_128_GCM_SHA256 [resumed]" in run.stdout
    assert "did not resume" in run.stdout
    # 2 handshakes per agent on loopback still answer, from every handshake of the rounds
    comparison = run.stdout.split("TLS 1.3 vs 1.2 (the median of every handshake, rounds paired; negative = TLS 1.3 "
                                  "faster):\n")[1]
    assert " %" in comparison.splitlines()[0] and "too short" not in run.stdout
    assert "Start-up:" in run.stdout


def test_a_ca_file_verifies_the_certificate_like_loadtest(tls_lab):
    import certifi

    target = f"localhost:{tls_lab.port('load_no_resumption')}"
    trusted = handshakes(target, "--ip", "127.0.0.1", "--agents", "1", "--per-agent", "2", "--repeats", "1",
                         "--suites", "TLS_AES_128_GCM_SHA256", "--ca-file", str(tls_lab.ca_file), "--json")
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    report = json.loads(trusted.stdout)
    assert report["verified"] is True and report["summary"][0]["count"] == 2
    untrusted = handshakes(target, "--ip", "127.0.0.1", "--agents", "1", "--per-agent", "2", "--repeats", "1",
                           "--suites", "TLS_AES_128_GCM_SHA256", "--ca-file", certifi.where(), "--json")
    assert untrusted.returncode == 2
    error = json.loads(untrusted.stdout)["error"]
    assert error["code"] == "no_handshake" and "certificate not trusted" in error["message"]
    insecure = handshakes(target, "--ip", "127.0.0.1", "--agents", "1", "--per-agent", "2", "--repeats", "1",
                          "--suites", "TLS_AES_128_GCM_SHA256", "--insecure", "--json")
    assert insecure.returncode == 0 and json.loads(insecure.stdout)["verified"] is False
    both = handshakes(target, "--ca-file", str(tls_lab.ca_file), "--insecure", "--json")
    assert both.returncode == 2
    assert "--ca-file and --insecure exclude each other" in json.loads(both.stdout)["error"]["message"]


@pytest.mark.parametrize("agents, per_agent", [(1, 300), (10, 30)])
def test_the_reported_rates_add_up_to_the_end_to_end_rate(tls_lab, agents, per_agent):
    """The cells' rates cover the whole run (set-up included), all but the process's start-up, which is
    reported apart: one agent x 300 handshakes used to run 11-21 s while its rates came from ~2 s of
    summed batch times (5.9-8.1x the end-to-end rate at c=1, 3.0-3.4x at c=10)."""
    started = time.monotonic()
    run = handshakes(f"localhost:{tls_lab.port('load_no_resumption')}", "--ip", "127.0.0.1", "--agents",
                     str(agents), "--per-agent", str(per_agent),
                     "--suites", "TLS_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256", "--json")
    wall_s = time.monotonic() - started
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    cells = [c for c in report["cells"] if c["count"]]
    count = sum(c["count"] for c in cells)
    reported_rate = count / sum(c["count"] / c["handshakes_per_s"] for c in cells)
    end_to_end_rate = count / (wall_s - report.get("startup_s", 0))
    assert reported_rate / end_to_end_rate <= 1.3, (reported_rate, end_to_end_rate, wall_s, report.get("startup_s"))


def test_nothing_connecting_exits_2_with_a_json_error():
    [port] = free_ports(1)
    run = handshakes(f"localhost:{port}", "--ip", "127.0.0.1", "--agents", "1", "--per-agent", "1", "--json")
    assert run.returncode == 2
    error = json.loads(run.stdout)["error"]
    assert error["code"] == "no_handshake"
    assert "connection refused" in error["message"]


def test_the_ssrf_guard_refuses_loopback_unless_allowed():
    run = handshakes("localhost:443", "--ip", "127.0.0.1", "--json", allow_private="0")
    assert run.returncode == 2
    assert json.loads(run.stdout)["error"]["code"] == "private_target"


@pytest.mark.parametrize("args, message", [
    ((), "target: Enter a host name"),
    (("exa mple.com",), "target: A host name cannot contain spaces"),
    (("http://example.com",), "handshakes are timed over TLS"),
    (("example.com:99999",), "target:"),
    (("example.com", "--ip", "not-an-ip"), "--ip: 'not-an-ip' is not an IPv4 or IPv6 address"),
    (("example.com", "--versions", "1.1"), "--versions: '1.1' is not a TLS version"),
    (("example.com", "--versions", ","), "--versions: give at least one value"),
    (("example.com", "--agents", "ten"), "--agents: 'ten' is not a whole number"),
    (("example.com", "--agents", "0"), "--agents must be between 1 and 200, got 0"),
    (("example.com", "--agents", "10,500"), "--agents must be between 1 and 200, got 500"),
    (("example.com", "--per-agent", "0"), "--per-agent must be between 1 and 1000, got 0"),
    (("example.com", "--per-agent", "1.5"), "--per-agent: '1.5' is not a whole number"),
    (("example.com", "--timeout", "0"), "--timeout must be between 1 and 120, got 0"),
    (("example.com", "--suites", "TLS_MADE_UP"), "--suites: unknown TLS 1.2 cipher suite 'TLS_MADE_UP'"),
    (("example.com", "--suites", "TLS_AES_128_CCM_SHA256"), "--suites: unknown TLS 1.3 cipher suite"),
    (("example.com", "--versions", "1.2", "--suites", "TLS_AES_128_GCM_SHA256"),
     "--suites: TLS_AES_128_GCM_SHA256 is a TLS 1.3 suite but --versions does not include 1.3"),
    (("example.com", "--agents", "200", "--per-agent", "1000"), "the limit is 100,000"),
    (("example.com", "--agents", "10", "--per-agent", "100", "--repeats", "20"), "lower --agents, --per-agent or"),
    (("example.com", "--repeats", "0"), "--repeats must be between 1 and 20, got 0"),
    (("example.com", "--ca-file", "/nonexistent/ca.pem"), "--ca-file: /nonexistent/ca.pem does not exist"),
    (("example.com", "--ca-file", str(MANAGE_PY)), "is not a PEM certificate file"),
])
def test_every_bad_argument_is_named(args, message):
    as_json = handshakes(*args, "--json")
    assert as_json.returncode == 2
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "invalid_argument"
    assert message in error["message"]


def test_a_bad_argument_in_text_mode_goes_to_stderr():
    run = handshakes("example.com", "--agents", "0")
    assert run.returncode == 2 and run.stdout == ""
    assert "handshakes failed: --agents must be between 1 and 200, got 0" in run.stderr


def test_the_default_deadline_is_the_plans_longest_duration_and_a_cell_lasts_its_seconds(tls_lab):
    from tlsaudit.loadtests.management.commands.handshakes import parse_arguments

    base = {"target": "localhost", "versions": "1.2,1.3", "suites": "", "agents": "10", "per_agent": "20",
            "repeats": "3", "resume": False, "timeout": "10", "ip": None, "ca_file": None, "insecure": False}
    plan = parse_arguments({**base, "seconds": None, "deadline": None})
    # 2 warm-ups + 3 rounds x 9 cells (every candidate suite: TLS 1.2's 6, TLS 1.3's 3) at 2 s + 0.5 s, + 30 s
    assert (plan["seconds"], plan["planned_s"], plan["deadline"]) == (2.0, 72.5, 103.0)
    named = parse_arguments({**base, "suites": "TLS_AES_128_GCM_SHA256", "versions": "1.3", "seconds": None,
                             "deadline": None})
    assert named["planned_s"] == (1 + 3 * 1) * 2.5   # the suites named, not every candidate
    assert parse_arguments({**base, "seconds": "1", "deadline": "40"})["deadline"] == 40.0
    with pytest.raises(ValueError, match="--seconds must be between 0.5 and 30"):
        parse_arguments({**base, "seconds": "0.1", "deadline": None})
    # a cell sized by time: far more handshakes asked than fit in 0.5 s, the matrix still answers in seconds
    started = time.monotonic()
    run = handshakes(f"localhost:{tls_lab.port('load_no_resumption')}", "--ip", "127.0.0.1", "--agents", "2",
                     "--per-agent", "1000", "--seconds", "0.5", "--versions", "1.3", "--json")
    assert run.returncode == 0, run.stderr
    cells = [c for c in json.loads(run.stdout)["cells"] if not c.get("warmup")]
    assert len(cells) == 9 and all(0 < c["count"] < 2000 and not c["cancelled"] for c in cells)
    assert time.monotonic() - started < 9 * 0.5 + 20
