"""The contract between `bench/run.py` (the `make bench` runner) and each bench script.

A script joins the suite by declaring, at module level, a literal dict the runner reads with `ast`
(without importing the script, so a script's imports cannot break discovery):

    BENCH = {"title": "Audit throughput", "order": 10, "quick_timeout_s": 150, "full_timeout_s": 900}

and by accepting two options:

    python bench/NAME.py [--quick] [--json OUT]

`--quick` runs the short variant (the whole quick suite must stay under 5 minutes), no flag runs the
full one. With `--json OUT` the script writes one report (see `parse_report`) to OUT; it prints
whatever it likes for humans. Exit status 0 means "the run did what it claims" (a wrong grade, a
failed audit or a tool that did not run is non-zero); the runner still shows the figures of a
failed script, marked failed.

Scripts build the report with `Recorder`, which stamps each figure with the 1-minute load average
at the moment it was measured (the machine is shared, so a figure without its load is half a figure).
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import shlex
import signal
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

CONTRACT_VERSION = 1
MARKER = "BENCH"
DEFAULT_ORDER = 100
DEFAULT_QUICK_TIMEOUT_S = 300
DEFAULT_FULL_TIMEOUT_S = 3600
MARKER_KEYS = {"title": str, "order": int, "quick_timeout_s": (int, float), "full_timeout_s": (int, float)}


class ContractError(ValueError):
    """A script's marker or report does not follow the contract; the message says what to fix."""


# --- the marker -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class BenchScript:
    name: str                 # file stem: "throughput"
    path: Path
    title: str
    order: int = DEFAULT_ORDER
    quick_timeout_s: float = DEFAULT_QUICK_TIMEOUT_S
    full_timeout_s: float = DEFAULT_FULL_TIMEOUT_S

    def timeout_s(self, mode: str) -> float:
        return self.quick_timeout_s if mode == "quick" else self.full_timeout_s


def parse_marker(source: str, path: Path) -> BenchScript | None:
    """The script's `BENCH = {...}` as a BenchScript; None when there is no marker (not in the suite)."""
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ContractError(f"{path.name}: cannot parse the script: {exc}") from exc
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == MARKER for t in node.targets):
            return script_from_marker(marker_value(node.value, path), path)
    return None


def marker_value(node: ast.expr, path: Path) -> dict:
    try:
        value = ast.literal_eval(node)
    except ValueError as exc:
        raise ContractError(f"{path.name}: {MARKER} must be a literal dict (no names or calls)") from exc
    if not isinstance(value, dict):
        raise ContractError(f"{path.name}: {MARKER} must be a dict, got {type(value).__name__}")
    return value


def script_from_marker(marker: dict, path: Path) -> BenchScript:
    unknown = sorted(set(marker) - set(MARKER_KEYS))
    if unknown:
        raise ContractError(f"{path.name}: unknown {MARKER} keys {unknown}; allowed: {sorted(MARKER_KEYS)}")
    if not isinstance(marker.get("title"), str) or not marker["title"].strip():
        raise ContractError(f"{path.name}: {MARKER} needs a non-empty 'title'")
    for key, kind in MARKER_KEYS.items():
        value = marker.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise ContractError(f"{path.name}: {MARKER}[{key!r}] must be {describe(kind)}, got {value!r}")
        if key.endswith("_s") and value is not None and value <= 0:
            raise ContractError(f"{path.name}: {MARKER}[{key!r}] must be positive, got {value!r}")
    return BenchScript(name=path.stem, path=path, **marker)


def describe(kind) -> str:
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__


def discover(folder: Path) -> list[BenchScript]:
    """Every script in `folder` with a marker, in (order, name) order."""
    found = []
    for path in sorted(folder.glob("*.py")):
        script = parse_marker(path.read_text(), path)
        if script is not None:
            found.append(script)
    return sorted(found, key=lambda s: (s.order, s.name))


# --- the report -------------------------------------------------------------------------------------

@dataclass
class Figure:
    name: str                       # "wall time, 100 audits"
    value: float | int | None       # None: not measured (say why in `note`)
    unit: str = ""                  # "s", "audits/min", "MiB", "x" (a ratio), "handshakes/s"
    goal: str = ""                  # human text: "< 120 s"
    met: bool | None = None         # None: no goal, or not decidable
    load: float | None = None       # 1-minute load average when measured
    note: str = ""
    # A ratio from alternated pairs (ours, reference, ours, reference ...) of this invocation: `value` is
    # the median of the per-pair ratios, low/high their range, pairs how many (see `paired_ratio`).
    low: float | None = None
    high: float | None = None
    pairs: int | None = None


@dataclass
class Report:
    title: str
    mode: str                       # "quick" | "full"
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    command: str = ""
    started_at: str = ""
    load_start: list[float] = field(default_factory=list)
    load_end: list[float] = field(default_factory=list)
    contract: int = CONTRACT_VERSION

    def to_dict(self) -> dict:
        return asdict(self)


def parse_report(data: object, source: str = "report") -> Report:
    """Validate a report (a JSON object as loaded) and return it; ContractError says what is wrong."""
    if not isinstance(data, dict):
        raise ContractError(f"{source}: the report must be a JSON object, got {type(data).__name__}")
    for key in ("title", "mode", "figures"):
        if key not in data:
            raise ContractError(f"{source}: the report has no {key!r}")
    if data["mode"] not in ("quick", "full"):
        raise ContractError(f"{source}: 'mode' must be 'quick' or 'full', got {data['mode']!r}")
    if not isinstance(data["figures"], list):
        raise ContractError(f"{source}: 'figures' must be a list")
    figures = [parse_figure(f, f"{source}: figure {i + 1}") for i, f in enumerate(data["figures"])]
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ContractError(f"{source}: 'notes' must be a list of strings")
    return Report(title=str(data["title"]), mode=data["mode"], figures=figures, notes=notes,
                  command=str(data.get("command", "")), started_at=str(data.get("started_at", "")),
                  load_start=numbers(data.get("load_start", []), source, "load_start"),
                  load_end=numbers(data.get("load_end", []), source, "load_end"),
                  contract=int(data.get("contract", CONTRACT_VERSION)))


def parse_figure(data: object, source: str) -> Figure:
    if not isinstance(data, dict):
        raise ContractError(f"{source}: must be an object")
    unknown = sorted(set(data) - set(Figure.__dataclass_fields__))
    if unknown:
        raise ContractError(f"{source}: unknown keys {unknown}")
    if not isinstance(data.get("name"), str) or not data["name"].strip():
        raise ContractError(f"{source}: needs a non-empty 'name'")
    value = data.get("value")
    finite_number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if value is not None and not finite_number:
        raise ContractError(f"{source} ({data['name']}): 'value' must be a finite number or null, got {value!r}")
    if data.get("met") not in (None, True, False):
        raise ContractError(f"{source} ({data['name']}): 'met' must be true, false or null, got {data['met']!r}")
    load = data.get("load")
    if load is not None and (isinstance(load, bool) or not isinstance(load, (int, float))):
        raise ContractError(f"{source} ({data['name']}): 'load' must be a number or null, got {load!r}")
    for key in ("unit", "goal", "note"):
        if not isinstance(data.get(key, ""), str):
            raise ContractError(f"{source} ({data['name']}): {key!r} must be a string")
    check_range(data, source)
    return Figure(**data)


def check_range(data: dict, source: str) -> None:
    """low <= value <= high and pairs >= 1, all three or none."""
    given = [data.get(key) is not None for key in ("low", "high", "pairs")]
    if not any(given):
        return
    if not all(given) or data.get("value") is None:
        raise ContractError(f"{source} ({data['name']}): 'low', 'high' and 'pairs' go together, with a value")
    low, high, pairs = data["low"], data["high"], data["pairs"]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in (low, high)):
        raise ContractError(f"{source} ({data['name']}): 'low' and 'high' must be finite numbers")
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 1:
        raise ContractError(f"{source} ({data['name']}): 'pairs' must be a positive integer, got {pairs!r}")
    if not low <= data["value"] <= high:
        raise ContractError(f"{source} ({data['name']}): the value must lie between 'low' and 'high'")


@dataclass(frozen=True)
class PairedRatio:
    median: float
    low: float
    high: float
    pairs: int


def paired_ratio(ours: list[float], reference: list[float]) -> PairedRatio:
    """ours[i] / reference[i] for each alternated pair of one invocation: the median and the range.
    A ratio of two medians (or of the best runs) would hide how much the pairs disagree."""
    if not ours or len(ours) != len(reference):
        raise ValueError(f"paired_ratio needs as many reference runs as ours, at least one: {len(ours)} vs "
                         f"{len(reference)}")
    if any(r <= 0 for r in reference):
        raise ValueError("paired_ratio: a reference value is not positive")
    ratios = sorted(o / r for o, r in zip(ours, reference))
    middle = len(ratios) // 2
    median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    return PairedRatio(median=median, low=ratios[0], high=ratios[-1], pairs=len(ratios))


def numbers(value: object, source: str, key: str) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ContractError(f"{source}: {key!r} must be a list of numbers")
    return [float(v) for v in value]


def read_report(path: Path) -> Report:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ContractError(f"{path.name}: the script wrote no report") from exc
    except json.JSONDecodeError as exc:
        raise ContractError(f"{path.name}: not JSON: {exc}") from exc
    return parse_report(data, path.name)


# --- for scripts ------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="the short variant (make bench); default: full")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON (bench contract)")


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


class Recorder:
    """Collects a script's figures; `write()` saves them to --json OUT (when given) and prints a summary."""

    def __init__(self, title: str, args: argparse.Namespace):
        exit_cleanly_on_sigterm()
        self.args = args
        self.report = Report(title=title, mode="quick" if args.quick else "full", command=command_line(),
                             started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             load_start=load_average())

    def figure(self, name: str, value: float | int | None, unit: str = "", *, goal: str = "",
               met: bool | None = None, note: str = "", load: float | None = None) -> Figure:
        figure = Figure(name=name, value=None if value is None else round(value, 4), unit=unit, goal=goal, met=met,
                        load=load if load is not None else load_average()[0], note=note)
        self.report.figures.append(figure)
        return figure

    def ratio(self, name: str, ours: list[float], reference: list[float], *, goal: str = "",
              met=None, note: str = "") -> Figure:
        """A ratio figure from alternated pairs: median, range and count (`met(median)` decides the goal)."""
        paired = paired_ratio(ours, reference)
        figure = self.figure(name, paired.median, "x", goal=goal, met=None if met is None else met(paired.median),
                             note=note)
        figure.low, figure.high, figure.pairs = round(paired.low, 4), round(paired.high, 4), paired.pairs
        figure.value = min(max(figure.value, figure.low), figure.high)  # rounding may not push it outside
        return figure

    def note(self, text: str) -> None:
        self.report.notes.append(text)

    def write(self) -> Report:
        self.report.load_end = load_average()
        parse_report(self.report.to_dict(), "this script's report")  # fail here, not in the runner
        if self.args.json:
            self.args.json.parent.mkdir(parents=True, exist_ok=True)
            self.args.json.write_text(json.dumps(self.report.to_dict(), indent=2) + "\n")
        for f in self.report.figures:
            goal = f" (goal {f.goal}: {'met' if f.met else 'NOT met' if f.met is False else '?'})" if f.goal else ""
            print(f"  figure: {f.name} = {f.value} {f.unit}{goal}, load {f.load}", file=sys.stderr)
        return self.report


def exit_cleanly_on_sigterm() -> None:
    """The runner stops an overrunning script with SIGTERM: turn it into SystemExit, so the script's
    `finally` and `with` blocks still stop its workers and nginx and delete its rows."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def command_line() -> str:
    """How this script was started, relative to the repository (for docs/benchmarks.md)."""
    root = Path(__file__).resolve().parents[1]
    python = os.path.relpath(sys.executable, root) if sys.executable.startswith(str(root)) else sys.executable
    script = os.path.relpath(os.path.abspath(sys.argv[0]), root)
    return shlex.join([python, script, *without_json_option(sys.argv[1:])])


def without_json_option(argv: list[str]) -> list[str]:
    """The arguments minus `--json OUT` (a temp path of the runner's, meaningless in the docs)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        elif not arg.startswith("--json="):
            kept.append(arg)
    return kept
