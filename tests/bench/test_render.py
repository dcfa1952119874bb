"""docs/benchmarks.md rendering (bench/render.py): every figure in one table, with its load and goal."""

import pytest

from bench.render import format_number, format_value, render

MACHINE = {"cpu": "AMD EPYC 7B13", "cores": 2, "ram_gib": 23.5, "system": "Linux 6.1", "python": "3.11.7",
           "load_start": [0.43, 0.47, 0.23]}


def script(name="throughput", title="Audit throughput", exit_code=0, figures=(), notes=(), error=""):
    report = {"title": title, "mode": "quick", "figures": list(figures), "notes": list(notes)}
    return {"name": name, "title": title, "command": f".venv/bin/python bench/{name}.py --quick", "exit": exit_code,
            "duration_s": 42.0, "error": error, "report": report if figures or notes else None}


def run(mode="quick", scripts=()):
    return {"mode": mode, "command": f"bench/run.py --mode {mode}", "started_at": "2026-11-22T00:00:00+00:00",
            "duration_s": 212.4, "machine": MACHINE, "scripts": list(scripts)}


@pytest.mark.parametrize("value, text", [
    (None, "–"), (0, "0"), (7, "7"), (1234, "1,234"), (1234.5, "1,234"), (150.0, "150"),
    (83.24, "83.2"), (3.14159, "3.14"), (0.04567, "0.046"), (-12.5, "-12.5"),
])
def test_numbers_keep_about_three_significant_figures(value, text):
    assert format_number(value) == text


def test_units_follow_the_number_and_ratios_stick_to_it():
    assert format_value(1.234, "x") == "1.23x"
    assert format_value(6.7, "%") == "6.70%"
    assert format_value(83.2, "s") == "83.2 s"
    assert format_value(None, "s") == "–"


def test_every_figure_is_a_row_with_its_goal_verdict_and_load():
    figures = [{"name": "wall time, 100 audits", "value": 83.24, "unit": "s", "goal": "< 120 s", "met": True,
                "load": 1.92, "note": "celery -c 2"},
               {"name": "peak RSS", "value": 312.0, "unit": "MiB", "goal": "< 300 MiB", "met": False, "load": 2.5},
               {"name": "CPU", "value": 40.1, "unit": "s", "load": None}]
    text = render(run(scripts=[script(figures=figures)]))
    assert "| Audit throughput | wall time, 100 audits | 83.2 s | < 120 s | yes | 1.92 | celery -c 2 |" in text
    assert "| Audit throughput | peak RSS | 312 MiB | < 300 MiB | **no** | 2.50 |  |" in text
    assert "| Audit throughput | CPU | 40.1 s |  |  |  |  |" in text


def test_the_machine_the_date_and_the_commands_are_recorded():
    text = render(run(scripts=[script(figures=[{"name": "x", "value": 1}])]))
    assert "## Quick mode (`make bench`), 2026-11-22T00:00:00+00:00" in text
    assert "AMD EPYC 7B13, 2 cores, 23.5 GiB RAM, Linux 6.1, Python 3.11.7" in text
    assert "load average at start 0.43 / 0.47 / 0.23" in text
    assert "- command: `bench/run.py --mode quick`" in text
    assert "| `throughput` |  | 0 | 42.0 | `.venv/bin/python bench/throughput.py --quick` |" in text


def test_a_ratio_from_alternated_pairs_shows_its_median_range_and_count():
    figures = [{"name": "HTTP keep-alive: client CPU per request, ours / ab", "value": 0.97, "unit": "x",
                "goal": "<= 1.0x", "met": True, "load": 1.2, "low": 0.91, "high": 1.08, "pairs": 5}]
    text = render(run(scripts=[script(figures=figures)]))
    assert "| 0.970x (0.910x – 1.08x, median of 5 pairs) | <= 1.0x | yes |" in text


def test_the_page_is_one_invocation_and_says_so():
    text = render(run("full", [script(figures=[{"name": "x", "value": 1}])]))
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## Full mode (`make bench-full`), 2026-11-22T00:00:00+00:00"]
    assert "from one invocation" in text and "re-run" not in text and "merged" not in text


def test_a_failed_script_is_shown_with_its_error_and_any_figures_it_wrote():
    failed = script(name="worker_memory", title="Worker memory", exit_code=1, error="audit 17 failed",
                    figures=[{"name": "peak RSS", "value": 180.0, "unit": "MiB"}])
    crashed = script(name="pages", title="Pages", exit_code=124, error="timed out after 90 s")
    text = render(run("full", [failed, crashed]))
    assert "| Worker memory | **run failed** (exit 1) | | | | | audit 17 failed |" in text
    assert "| Worker memory | peak RSS | 180 MiB |" in text
    assert "| Pages | **run failed** (exit 124) | | | | | timed out after 90 s |" in text
    assert "**2 failed: worker_memory, pages**" in text


def test_pipes_in_names_and_notes_do_not_break_the_table():
    text = render(run(scripts=[script(figures=[{"name": "a | b", "value": 1, "note": "x|y"}])]))
    assert "| a \\| b |" in text and "x\\|y" in text


def test_notes_are_listed_per_benchmark():
    text = render(run(scripts=[script(figures=[{"name": "x", "value": 1}], notes=["fleet of 100"])]))
    assert "**Audit throughput**\n\n- fleet of 100" in text


def test_a_note_holding_a_table_stays_inside_its_list_item():
    table = "**Sweep**\n\n| c | overhead |\n|---|---|\n| 20 | +50 % |"
    text = render(run(scripts=[script(figures=[{"name": "x", "value": 1}], notes=[table, "after"])]))
    assert "- **Sweep**\n\n  | c | overhead |\n  |---|---|\n  | 20 | +50 % |\n- after" in text
