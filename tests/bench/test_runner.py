"""The `make bench` runner (bench/run.py) with real little scripts, and every bench script's bad arguments."""

import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.contract import parse_marker
from bench.run import run_script

ROOT = Path(__file__).resolve().parents[2]


def make_script(folder: Path, name: str, body: str, timeout: int = 60) -> object:
    source = textwrap.dedent(f'''
        import argparse, json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from bench.contract import Recorder, add_arguments
        BENCH = {{"title": "{name} title", "quick_timeout_s": {timeout}}}
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args()
    ''') + textwrap.dedent(body)
    path = folder / f"{name}.py"
    path.write_text(source)
    return parse_marker(source, path)


def test_it_runs_a_script_in_quick_mode_and_collects_its_report(tmp_path):
    script = make_script(tmp_path, "bench_selftest_ok", '''
        recorder = Recorder("Self-test", args)
        recorder.figure("quick flag seen", 1 if args.quick else 0)
        recorder.write()
    ''')
    entry = run_script(script, "quick", tmp_path)
    assert entry["exit"] == 0 and entry["error"] == ""
    assert entry["report"]["figures"][0]["name"] == "quick flag seen"
    assert entry["report"]["figures"][0]["value"] == 1
    assert entry["command"].endswith("bench_selftest_ok.py --quick") and "--json" not in entry["command"]


def test_a_script_that_fails_keeps_its_exit_status_and_its_figures(tmp_path):
    script = make_script(tmp_path, "bench_selftest_fails", '''
        recorder = Recorder("Self-test", args)
        recorder.figure("before the failure", 3.0)
        recorder.write()
        sys.exit(3)
    ''')
    entry = run_script(script, "full", tmp_path)
    assert entry["exit"] == 3
    assert entry["report"]["mode"] == "full" and entry["report"]["figures"][0]["value"] == 3.0


def test_a_script_that_writes_no_report_or_a_broken_one_is_marked_failed(tmp_path):
    silent = make_script(tmp_path, "bench_selftest_silent", "print('no report')\n")
    entry = run_script(silent, "quick", tmp_path)
    assert entry["exit"] == 1 and "wrote no report" in entry["error"]
    broken = make_script(tmp_path, "bench_selftest_broken", '''
        args.json.write_text(json.dumps({"title": "x", "mode": "quick", "figures": [{"name": "x", "value": "1"}]}))
    ''')
    entry = run_script(broken, "quick", tmp_path)
    assert entry["exit"] == 1 and "'value' must be a finite number" in entry["error"]


def test_a_script_that_overruns_its_timeout_is_stopped_and_reported(tmp_path):
    script = make_script(tmp_path, "bench_selftest_slow", "import time\ntime.sleep(60)\n", timeout=1)
    entry = run_script(script, "quick", tmp_path)
    assert entry["exit"] == 124 and "timed out after 1 s" in entry["error"]
    assert entry["duration_s"] < 30


@pytest.mark.parametrize("command, message", [
    (["run", "--mode", "slow"], "invalid choice: 'slow'"),
    (["run", "--only", "nosuch"], "unknown bench script(s) ['nosuch']"),
    (["throughput", "--targets", "0"], "--targets must be at least 1"),
    (["throughput", "--concurrency", "0"], "--concurrency must be at least 1"),
    (["throughput", "--connections", "6"], "--connections must be 1..5"),
    (["throughput", "--prefetch", "0"], "--prefetch must be at least 1"),
    (["throughput", "--pool", "gevent"], "invalid choice: 'gevent'"),
    (["throughput", "--nginx-workers", "0"], "--nginx-workers must be at least 1"),
    (["throughput", "--nice", "-21"], "--nice must be -20..19"),
    (["worker_memory", "--audits", "5"], "--audits must be more than 12"),
    (["worker_memory", "--recycle-after", "0"], "--recycle-after must be at least 1"),
    (["worker_memory", "--servers", "0"], "--servers must be at least 1"),
    (["audit_vs_peers", "--runs", "0"], "--runs must be at least 1"),
    (["audit_vs_peers", "--runs", "2", "--testssl-runs", "3"], "--testssl-runs must be between 0 and --runs"),
    (["audit_vs_peers", "--target", "nosuch"], "invalid choice: 'nosuch'"),
    (["handshake_vs_h2load", "-c", "ten"], "--concurrency must be comma-separated integers"),
    (["handshake_vs_h2load", "-n", "100", "-c", "30"], "each concurrency must be at least 1 and divide"),
    (["handshake_vs_h2load", "-n", "0"], "each concurrency must be at least 1 and divide"),
    (["handshake_vs_h2load", "--rounds", "0"], "--rounds must be at least 1"),
    (["loadgen_vs_ab", "--pairs", "0"], "--pairs and -c must be at least 1"),
    (["loadgen_vs_ab", "-c", "0"], "--pairs and -c must be at least 1"),
    (["throughput", "--json"], "expected one argument"),
])
def test_bad_arguments_are_refused_with_a_clear_message(command, message, monkeypatch, capsys):
    module = importlib.import_module(f"bench.{command[0]}")
    monkeypatch.setattr(sys, "argv", [f"bench/{command[0]}.py", *command[1:]])
    with pytest.raises(SystemExit) as exited:
        module.parse_args()
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_runner_lists_the_suite_without_running_it():
    done = subprocess.run([sys.executable, "bench/run.py", "--list"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "throughput" in done.stdout and "Audit throughput" in done.stdout


def run_runner(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench/run.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_one_invocation_writes_one_page_and_a_later_run_replaces_it_whole(tmp_path):
    """Issue 15 item 6: no figure of an earlier run survives into the page of a later one."""
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("bench_alpha", "bench_beta"):
        make_script(suite, name, '''
            import os
            recorder = Recorder("Self-test", args)
            recorder.figure("value", float(os.environ.get("BENCH_SELFTEST_VALUE", "1")))
            recorder.ratio("ours / reference", [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], goal="<= 2x", met=lambda r: r <= 2)
            recorder.write()
        ''')
    docs = tmp_path / "out" / "benchmarks.md"

    first = run_runner("--suite", str(suite), "--docs", str(docs))
    assert first.returncode == 0, first.stdout + first.stderr
    page = docs.read_text()
    assert page.count("| value | 1.00 |") == 2
    assert "| 2.00x (1.00x – 3.00x, median of 3 pairs) | <= 2x | yes |" in page
    saved = json.loads((tmp_path / "out" / "benchmarks" / "quick.json").read_text())
    assert [s["name"] for s in saved["scripts"]] == ["bench_alpha", "bench_beta"] and "rerun" not in saved

    only = run_runner("--suite", str(suite), "--only", "bench_beta", "--docs", str(docs))
    assert only.returncode == 0, only.stdout + only.stderr
    assert "bench_alpha" not in docs.read_text(), "a partial run's page holds that run only"


def test_a_partial_run_never_writes_the_published_page():
    done = run_runner("--only", "loadgen_vs_ab", "--docs", "docs/benchmarks.md")
    assert done.returncode == 2 and "never writes docs/benchmarks.md" in done.stderr
