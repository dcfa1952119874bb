"""Render the runner's collected runs as docs/benchmarks.md (pure: dicts in, markdown out).

A run (what `bench/run.py` saves as docs/benchmarks/<mode>.json):

    {"mode": "quick", "command": "...", "started_at": "...", "duration_s": 212.4,
     "machine": {"cpu": "...", "cores": 2, "ram_gib": 23.5, "system": "Linux 6.1", "python": "3.11.7",
                 "load_start": [0.4, 0.5, 0.2]},
     "scripts": [{"name": "throughput", "title": "...", "command": "...", "exit": 0, "duration_s": 80.1,
                  "error": "", "report": {<bench.contract.Report as a dict>} or null}]}
"""

from __future__ import annotations

MODE_COMMANDS = {"quick": "make bench", "full": "make bench-full"}
MET_LABELS = {True: "yes", False: "**no**", None: ""}


def format_number(value: float | int | None) -> str:
    """Three significant figures or so, thousands separated: 83.24 -> 83.2, 1234.5 -> 1,234, 0.0456 -> 0.046."""
    if value is None:
        return "–"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 100:
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def format_value(value: float | int | None, unit: str) -> str:
    text = format_number(value)
    if value is None or not unit:
        return text
    return f"{text}{unit}" if unit in ("x", "%") else f"{text} {unit}"


def format_figure_value(figure: dict) -> str:
    """The value; for a ratio from alternated pairs also its range and the number of pairs."""
    text = format_value(figure.get("value"), figure.get("unit", ""))
    if figure.get("pairs"):
        text += (f" ({format_value(figure['low'], figure.get('unit', ''))} – "
                 f"{format_value(figure['high'], figure.get('unit', ''))}, median of {figure['pairs']} pairs)")
    return text


def cell(text: object) -> str:
    """A markdown table cell: pipes escaped, newlines flattened."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def format_load(load: list[float] | None) -> str:
    return " / ".join(f"{v:.2f}" for v in load) if load else "unknown"


def machine_line(machine: dict) -> str:
    return (f"{machine.get('cpu', 'unknown CPU')}, {machine.get('cores', '?')} cores, "
            f"{format_number(machine.get('ram_gib'))} GiB RAM, {machine.get('system', '')}, "
            f"Python {machine.get('python', '?')}; load average at start {format_load(machine.get('load_start'))} "
            "(1 / 5 / 15 min)")


def figures_table(scripts: list[dict]) -> list[str]:
    lines = ["| benchmark | figure | value | goal | met | load (1 min) | note |",
             "|---|---|---:|---|---|---:|---|"]
    for script in scripts:
        report = script.get("report")
        title = cell(report["title"] if report else script["title"])
        if script.get("exit") != 0:
            lines.append(f"| {title} | **run failed** (exit {script.get('exit')}) | | | | | "
                         f"{cell(script.get('error') or 'see the log')} |")
        for figure in (report or {}).get("figures", []):
            load = figure.get("load")
            value = format_figure_value(figure)
            lines.append(f"| {title} | {cell(figure['name'])} | {value} | {cell(figure.get('goal', ''))} | "
                         f"{MET_LABELS[figure.get('met')]} | {'' if load is None else f'{load:.2f}'} | "
                         f"{cell(figure.get('note', ''))} |")
    return lines


def commands_table(scripts: list[dict]) -> list[str]:
    lines = ["| script | started (UTC) | exit | wall s | command |", "|---|---|---:|---:|---|"]
    for s in scripts:
        started = (s.get("report") or {}).get("started_at", "")
        lines.append(f"| `{s['name']}` | {started.replace('T', ' ')[:19]} | {s.get('exit')} | "
                     f"{format_number(s.get('duration_s'))} | `{cell(s.get('command', ''))}` |")
    return lines


def notes_section(scripts: list[dict]) -> list[str]:
    lines = []
    for s in scripts:
        notes = (s.get("report") or {}).get("notes") or []
        if notes:
            lines += ["", f"**{s['report']['title']}**", ""] + [list_item(n) for n in notes]
    return lines


def list_item(note: str) -> str:
    """A note as a list item; the lines of a multi-line note (a markdown table) indented into the item."""
    first, *rest = note.split("\n")
    return "\n".join([f"- {first}", *(f"  {line}" if line.strip() else "" for line in rest)])


def render_run(run: dict) -> list[str]:
    scripts = run.get("scripts", [])
    failed = [s["name"] for s in scripts if s.get("exit") != 0]
    mode = run["mode"]
    lines = [f"## {mode.capitalize()} mode (`{MODE_COMMANDS.get(mode, mode)}`), {run.get('started_at', '')}", "",
             f"- command: `{run.get('command', '')}`",
             f"- machine: {machine_line(run.get('machine', {}))}",
             f"- total wall time: {format_number(run.get('duration_s'))} s"
             + (" (goal for the quick mode: under 300 s on an idle machine)" if mode == "quick" else "")
             + f"; scripts: {len(scripts) - len(failed)} ok"
             + (f", **{len(failed)} failed: {', '.join(failed)}**" if failed else ", none failed"), ""]
    lines += figures_table(scripts)
    lines += ["", f"### Commands ({mode})", ""] + commands_table(scripts)
    notes = notes_section(scripts)
    if notes:
        lines += ["", f"### Notes ({mode})"] + notes
    return lines + [""]


def render(run: dict) -> str:
    """The whole docs/benchmarks.md from one invocation of the runner (nothing merged from other runs)."""
    lines = ["# Benchmarks", "",
             "Written by `bench/run.py` from one invocation: `make bench` (quick mode, under 5 minutes) or "
             "`make bench-full` (full mode). Do not edit by hand; rerun. Every figure below comes from that one "
             "run; a ratio against a reference tool (ab, h2load, sslyze, testssl.sh) is the median of alternated "
             "pairs (ours, reference, ours, reference ...) of that run, shown with the range of the pairs. The raw "
             "figures are in `docs/benchmarks/<mode>.json`. What each script measures, and how to add one: "
             "`bench/README.md`.", "",
             "The machine is shared with other jobs, so every figure carries the 1-minute load average at the "
             "moment it was measured: compare figures taken at similar loads.", ""]
    return "\n".join(lines + render_run(run))
