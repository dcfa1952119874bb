"""The `make bench` runner: run every bench script of one mode, collect figures, write docs/benchmarks.md.

    .venv/bin/python bench/run.py [--mode quick|full] [--only NAME ...] [--list]

1. Discover the scripts of bench/ that declare a `BENCH = {...}` marker (bench/contract.py), in order.
2. Record the machine (CPU model, cores, RAM, kernel, Python) and the load average at the start.
3. Run each as `python bench/NAME.py [--quick] --json TMP` with the marker's timeout for the mode,
   its output going to var/bench/<mode>/NAME.log; read and check its report.
4. Save the run as docs/benchmarks/<mode>.json and render docs/benchmarks.md from this run alone
   (one invocation, one table: nothing is merged from earlier runs). Exit 1 when any script failed
   (after writing the docs: failures are shown there).
`--only NAME ...` runs a subset for development: its page and JSON go to var/bench/only-<mode>.md
(and .../only-<mode>/<mode>.json), never to docs/. `--docs FILE` writes the page elsewhere (its JSON
beside it, in FILE-without-.md/<mode>.json); `--suite DIR` runs the scripts of another folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import BenchScript, ContractError, discover, load_average, read_report  # noqa: E402
from bench.render import render  # noqa: E402

BENCH_DIR = ROOT / "bench"
DOCS = ROOT / "docs" / "benchmarks.md"
LOG_DIR = ROOT / "var" / "bench"
KILL_GRACE_S = 20


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("quick", "full"), default="quick")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scripts (file stems)")
    parser.add_argument("--list", action="store_true", help="list the suite and exit")
    parser.add_argument("--docs", type=Path, help=f"write the page here (default {relative(DOCS)}; with --only "
                                                  f"{relative(LOG_DIR)}/only-MODE.md)")
    parser.add_argument("--suite", type=Path, default=BENCH_DIR, help="folder of the bench scripts (default bench/)")
    args = parser.parse_args()
    try:
        args.scripts = select(discover(args.suite), args.only)
    except (ContractError, ValueError) as exc:
        parser.error(str(exc))
    if args.only and args.docs is not None and args.docs.resolve() == DOCS.resolve():
        parser.error(f"--only runs part of the suite: it never writes {relative(DOCS)} (one invocation, one table)")
    if args.docs is None:
        args.docs = LOG_DIR / f"only-{args.mode}.md" if args.only else DOCS
    return args


def select(scripts: list[BenchScript], only: list[str] | None) -> list[BenchScript]:
    if not only:
        return scripts
    known = {s.name for s in scripts}
    unknown = sorted(set(only) - known)
    if unknown:
        raise ValueError(f"unknown bench script(s) {unknown}; the suite has {sorted(known)}")
    return [s for s in scripts if s.name in only]


def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                 platform.processor() or "unknown CPU")
    mem_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)), "ram_gib": round(mem_kib / 1024 / 1024, 1),
            "system": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "load_start": load_average()}


def relative(path: Path) -> str:
    """`path` relative to the repository when inside it (commands in the docs read the same on any clone)."""
    return os.path.relpath(path, ROOT) if str(path).startswith(str(ROOT) + os.sep) else str(path)


def run_script(script: BenchScript, mode: str, scratch: Path) -> dict:
    out = scratch / f"{script.name}.json"
    command = [relative(Path(sys.executable)), relative(script.path), *(["--quick"] if mode == "quick" else [])]
    LOG_DIR.joinpath(mode).mkdir(parents=True, exist_ok=True)
    log = LOG_DIR / mode / f"{script.name}.log"
    print(f"== {script.name} ({script.title}): {shlex.join(command)}  [log: {log.relative_to(ROOT)}]", flush=True)
    started = time.perf_counter()
    exit_code, error = execute([*command, "--json", str(out)], log, script.timeout_s(mode))
    entry = {"name": script.name, "title": script.title, "command": shlex.join(command), "exit": exit_code,
             "duration_s": round(time.perf_counter() - started, 1), "error": error, "report": None}
    try:
        entry["report"] = read_report(out).to_dict()
    except ContractError as exc:
        entry["error"] = "; ".join(e for e in (error, str(exc)) if e)
        entry["exit"] = exit_code or 1
    status = "ok" if entry["exit"] == 0 else f"FAILED ({entry['error'] or 'exit ' + str(exit_code)})"
    print(f"   {status} in {entry['duration_s']} s", flush=True)
    return entry


def execute(command: list[str], log: Path, timeout_s: float) -> tuple[int, str]:
    """Run one script in its own process group (so a timeout also stops its nginx and workers)."""
    with log.open("w") as handle:
        process = subprocess.Popen(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return process.wait(timeout=timeout_s), ""
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            return 124, f"timed out after {timeout_s:.0f} s"


def tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def runs_dir_for(docs: Path) -> Path:
    """Where a page's raw runs go: docs/benchmarks.md -> docs/benchmarks/<mode>.json."""
    return docs.with_suffix("")


def save(run: dict, docs: Path) -> None:
    """This run's JSON, and the page rendered from this run alone."""
    runs_dir = runs_dir_for(docs)
    runs_dir.mkdir(parents=True, exist_ok=True)
    (runs_dir / f"{run['mode']}.json").write_text(json.dumps(run, indent=2) + "\n")
    docs.write_text(render(run))


def main() -> None:
    args = parse_args()
    scripts = args.scripts
    if args.list:
        for s in scripts:
            print(f"{s.order:4} {s.name:24} {s.title} (timeouts: quick {s.quick_timeout_s:.0f} s, "
                  f"full {s.full_timeout_s:.0f} s)")
        return
    started = time.perf_counter()
    run = {"mode": args.mode, "command": shlex.join(["bench/run.py", *sys.argv[1:]]),
           "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine()}
    print(f"bench {args.mode}: {len(scripts)} scripts; load average {run['machine']['load_start']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-run-") as scratch:
        run["scripts"] = [run_script(s, args.mode, Path(scratch)) for s in scripts]
    run["duration_s"] = round(time.perf_counter() - started, 1)
    save(run, args.docs)
    failed = [s for s in run["scripts"] if s["exit"] != 0]
    print(f"wrote {relative(args.docs)} ({args.mode}, {run['duration_s']} s); "
          f"{len(failed)} failed{': ' + ', '.join(s['name'] for s in failed) if failed else ''}")
    for s in failed:
        print(f"--- {s['name']} log tail ---\n{tail(LOG_DIR / args.mode / (s['name'] + '.log'))}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
