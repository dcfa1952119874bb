"""The bench contract (bench/contract.py): how the runner finds scripts and reads their figures."""

import argparse
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.contract import (
    ContractError,
    Recorder,
    discover,
    parse_marker,
    parse_report,
    read_report,
    without_json_option,
)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path("bench/example.py")


def good_report(**changes) -> dict:
    report = {"title": "Example", "mode": "quick", "figures": [
        {"name": "wall time", "value": 12.5, "unit": "s", "goal": "< 20 s", "met": True, "load": 1.5, "note": ""}]}
    report.update(changes)
    return report


def test_it_reads_a_marker_without_importing_the_script():
    source = 'import does_not_exist\nBENCH = {"title": "Example", "order": 7, "quick_timeout_s": 30}\n'
    script = parse_marker(source, HERE)
    assert (script.name, script.title, script.order, script.timeout_s("quick"), script.timeout_s("full")) == \
        ("example", "Example", 7, 30, 3600)


def test_a_script_without_a_marker_is_not_in_the_suite():
    assert parse_marker("print('hello')\n", HERE) is None


@pytest.mark.parametrize("marker, message", [
    ('["Example"]', "must be a dict"),
    ('{"title": TITLE}', "literal dict"),
    ('{"order": 3}', "non-empty 'title'"),
    ('{"title": "  "}', "non-empty 'title'"),
    ('{"title": "X", "oder": 3}', "unknown BENCH keys ['oder']"),
    ('{"title": "X", "order": "3"}', "'order'] must be int"),
    ('{"title": "X", "order": True}', "'order'] must be int"),
    ('{"title": "X", "quick_timeout_s": 0}', "must be positive"),
])
def test_a_bad_marker_says_what_to_fix(marker, message):
    with pytest.raises(ContractError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_marker(f"BENCH = {marker}\n", HERE)


def test_a_script_that_does_not_parse_is_an_error_not_a_silent_skip():
    with pytest.raises(ContractError, match="cannot parse"):
        parse_marker("BENCH = {\n", HERE)


def test_the_suite_in_bench_runs_in_declared_order():
    names = [s.name for s in discover(ROOT / "bench")]
    expected = ["throughput", "worker_memory", "audit_vs_peers", "handshake_vs_h2load", "loadgen_vs_ab"]
    assert [n for n in names if n in expected] == expected
    assert "run" not in names and "contract" not in names  # the runner and helpers have no marker


def test_it_accepts_a_report_that_follows_the_contract():
    report = parse_report(good_report(notes=["n"], load_start=[1, 2, 3]))
    assert (report.title, report.mode, report.figures[0].value, report.figures[0].met, report.load_start) == \
        ("Example", "quick", 12.5, True, [1.0, 2.0, 3.0])


def test_a_figure_may_be_unmeasured_if_it_says_why():
    report = parse_report(good_report(figures=[{"name": "testssl", "value": None, "note": "not installed"}]))
    assert report.figures[0].value is None and report.figures[0].note == "not installed"


@pytest.mark.parametrize("change, message", [
    ({"mode": "slow"}, "'mode' must be 'quick' or 'full'"),
    ({"figures": {}}, "'figures' must be a list"),
    ({"figures": [{"value": 1}]}, "non-empty 'name'"),
    ({"figures": [{"name": "x", "value": "fast"}]}, "'value' must be a finite number"),
    ({"figures": [{"name": "x", "value": float("nan")}]}, "'value' must be a finite number"),
    ({"figures": [{"name": "x", "value": True}]}, "'value' must be a finite number"),
    ({"figures": [{"name": "x", "value": 1, "met": "yes"}]}, "'met' must be true, false or null"),
    ({"figures": [{"name": "x", "value": 1, "colour": "red"}]}, "unknown keys"),
    ({"figures": [{"name": "x", "value": 1, "unit": 5}]}, "'unit' must be a string"),
    ({"figures": [{"name": "x", "value": 1, "load": "high"}]}, "'load' must be a number"),
    ({"notes": "one note"}, "'notes' must be a list of strings"),
    ({"load_start": ["high"]}, "'load_start' must be a list of numbers"),
])
def test_a_bad_report_says_what_is_wrong(change, message):
    with pytest.raises(ContractError, match=message):
        parse_report(good_report(**change))


def test_a_report_must_be_an_object_with_title_mode_and_figures():
    with pytest.raises(ContractError, match="must be a JSON object"):
        parse_report([])
    with pytest.raises(ContractError, match="has no 'figures'"):
        parse_report({"title": "x", "mode": "full"})


def test_reading_a_missing_or_broken_report_fails_clearly(tmp_path):
    with pytest.raises(ContractError, match="wrote no report"):
        read_report(tmp_path / "absent.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ContractError, match="not JSON"):
        read_report(tmp_path / "broken.json")


@pytest.fixture
def restore_sigterm():
    handler = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, handler)


def test_the_recorder_writes_a_report_the_runner_accepts(tmp_path, restore_sigterm):
    out = tmp_path / "sub" / "report.json"
    recorder = Recorder("Example", argparse.Namespace(quick=True, json=out))
    recorder.figure("wall time", 12.34567, "s", goal="< 20 s", met=True)
    recorder.figure("not measured", None, note="skipped in quick mode")
    recorder.note("a note")
    recorder.write()
    report = read_report(out)
    assert report.mode == "quick" and [f.name for f in report.figures] == ["wall time", "not measured"]
    assert report.figures[0].value == 12.3457 and report.figures[0].load is not None
    assert json.loads(out.read_text())["notes"] == ["a note"] and len(report.load_end) == 3


def test_a_script_stopped_by_the_runner_still_runs_its_cleanup(tmp_path):
    """SIGTERM (the runner's timeout) becomes SystemExit, so `finally` blocks stop nginx and workers."""
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(f'''
        import argparse, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from bench.contract import Recorder
        Recorder("Slow", argparse.Namespace(quick=True, json=None))
        try:
            print("started", flush=True)
            time.sleep(60)
        finally:
            print("cleaned up", flush=True)
    '''))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "started\n"
    process.terminate()
    out, _ = process.communicate(timeout=30)
    assert out == "cleaned up\n" and process.returncode == 128 + signal.SIGTERM


def test_the_recorded_command_leaves_out_the_runners_temp_file():
    assert without_json_option(["--quick", "--json", "/tmp/x.json", "--runs", "3"]) == ["--quick", "--runs", "3"]
    assert without_json_option(["--json=/tmp/x.json"]) == []


def test_a_paired_ratio_is_the_median_of_the_pair_ratios_with_their_range():
    from bench.contract import paired_ratio

    paired = paired_ratio([2.0, 3.0, 10.0, 4.0], [1.0, 1.0, 2.0, 4.0])  # pairs: 2, 3, 5, 1
    assert (paired.median, paired.low, paired.high, paired.pairs) == (2.5, 1.0, 5.0, 4)
    with pytest.raises(ValueError, match="as many reference runs"):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="not positive"):
        paired_ratio([1.0], [0.0])


@pytest.mark.parametrize("extra, message", [
    ({"low": 0.9}, "go together"),
    ({"low": 0.9, "high": 1.1, "pairs": 0}, "'pairs' must be a positive integer"),
    ({"low": 1.1, "high": 1.2, "pairs": 3}, "must lie between"),
    ({"low": "a", "high": 1.2, "pairs": 3}, "finite numbers"),
])
def test_a_range_must_be_whole_and_hold_the_value(extra, message):
    from bench.contract import ContractError, parse_figure

    with pytest.raises(ContractError, match=message):
        parse_figure({"name": "ratio", "value": 1.0, "unit": "x", **extra}, "test")
    assert parse_figure({"name": "ratio", "value": 1.0, "low": 0.9, "high": 1.1, "pairs": 3}, "test").pairs == 3
