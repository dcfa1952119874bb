"""The README's measuring commands, as a reader types them (issue #26): wall time against the time each
states before it starts, and its answer, on loopback and behind 50 ms and 150 ms round trips.

    .venv/bin/python bench/readme_commands.py [--quick] [--json OUT]

The commands are read from README.md (tests/test_readme_commands.py: the same reader's shell, no
settings exported) and aimed at the nginx lab (the server that test aims them at), on
127.0.0.1 directly or through the latency lab's delay line (tests/support/wan.py, `--ip` its
address); `--json` is added to read the figures. Per command and RTT: the wall time, the plan's
longest time as the command printed it (`planned_s`), and its answer in words: every HTTPS vs HTTP
(or TLS 1.3 vs 1.2) figure with its 95 % interval. "Answers" when every figure has a verdict (higher,
lower, or no significant difference, with its interval); an interval wider than 100 points is printed
with the product's own words for it ("the runs disagree…"): on loopback a sub-millisecond phase is
scheduling noise, and the probe's TTFB there is one. `--quick`: loopback and 50 ms; full: 0, 50 and
150 ms.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.contract import Recorder, add_arguments  # noqa: E402
from tests.support.tls_servers import start_lab  # noqa: E402
from tests.support.wan import start_wan  # noqa: E402
from tests.test_readme_commands import (  # noqa: E402
    aim_at_lab,
    command_name,
    one_target_commands,
    readers_environment,
)
from tlsaudit.domain.stats import change_text  # noqa: E402

BENCH = {"title": "README measuring commands: time and answer", "order": 48, "quick_timeout_s": 900,
         "full_timeout_s": 1800}
MEASURING = ("loadtest", "overhead", "handshakes", "probe")
ANSWERS = ("higher", "lower", "no significant difference")
# The README commands' own start-up (Django, the load engine, Chromium's first launch) beside the plan.
STARTUP_ALLOWANCE_S = 10


@dataclass
class Outcome:
    command: str
    rtt_ms: int
    wall_s: float
    planned_s: float | None
    answer: str
    answered: bool
    exit_code: int

    @property
    def within(self) -> bool:
        return self.planned_s is None or self.wall_s <= self.planned_s + STARTUP_ALLOWANCE_S


def measuring_commands() -> list[str]:
    return [c for c in one_target_commands() if command_name(c) in MEASURING]


def aimed(command: str, lab, ip: str) -> str:
    """The reader's line aimed at the lab through `ip` (the delay line's address, or 127.0.0.1), as JSON."""
    line = aim_at_lab(command, lab)
    if "--ip" not in shlex.split(line):
        line += f" --ip {ip}"
    return line + " --json"


def run_command(command: str, lab, rtt_ms: int, ip: str, var_dir: Path, timeout_s: float = 600) -> Outcome:
    line = aimed(command, lab, ip)
    env = readers_environment(var_dir, TLSAUDIT_ALLOW_PRIVATE_TARGETS="1")
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    wall = time.monotonic() - started
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = {"error": {"message": (done.stderr or done.stdout)[-300:]}}
    words, answered = answer(command_name(command), data)
    return Outcome(command, rtt_ms, wall, data.get("planned_s"), words, answered and done.returncode == 0,
                   done.returncode)


def answer(name: str, data: dict) -> tuple[str, bool]:
    """The command's figures in words, and whether every comparison has a verdict that tells."""
    if "error" in data and name != "probe" or (name == "probe" and data.get("error")):
        return f"error: {data['error'].get('message', '')}", False
    if name == "loadtest":
        report = data["report"]
        return (f"{report['requests_per_second_end_to_end']:.0f} req/s end to end, "
                f"{report['complete_requests']} requests"), report["complete_requests"] > 0
    if name == "overhead":
        figures = [(f"c={row['concurrency']}", row["time_taken_overhead"]) for row in data["levels"]]
    elif name == "handshakes":
        figures = [(f"{row['agents']} agents", row["tls13_vs_tls12"]) for row in data["tls13_vs_tls12"]
                   if row["family"] == "all"]
    else:
        figures = [(f"{mode} {metric}", data["increase"][mode][metric]) for mode, metric in PROBE_FIGURES
                   if metric in data["increase"].get(mode, {})]
    side = "TLS 1.3" if name == "handshakes" else "HTTPS"
    texts = [f"{label}: {change_text(change, side=side)}" for label, change in figures]
    return "; ".join(texts), bool(figures) and all(tells(change) for _, change in figures)


PROBE_FIGURES = (("cold", "ttfb"), ("cold", "load"), ("warm", "load"))


def tells(change: dict) -> bool:
    return change["verdict"] in ANSWERS


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return parser.parse_args()


def measure_at(lab, rtt_ms: int, var_dir: Path) -> list[Outcome]:
    link = start_wan(rtt_ms) if rtt_ms else None
    try:
        ip = link.host if link else "127.0.0.1"
        return [run_command(command, lab, rtt_ms, ip, var_dir) for command in measuring_commands()]
    finally:
        if link:
            link.close()


def main() -> None:
    args = parse_args()
    recorder = Recorder(BENCH["title"], args)
    ok = True
    var_dir = ROOT / "var" / "bench" / "readme_commands"
    with start_lab() as lab:
        for rtt_ms in (0, 50) if args.quick else (0, 50, 150):
            for outcome in measure_at(lab, rtt_ms, var_dir):
                ok &= outcome.within and outcome.answered
                words = " ".join(shlex.split(outcome.command)[2:])
                planned = "-" if outcome.planned_s is None else f"{outcome.planned_s:.0f}"
                recorder.figure(f"{words} at {rtt_ms} ms RTT: wall time", round(outcome.wall_s, 1), "s",
                                goal=f"<= the {planned} s it states (+{STARTUP_ALLOWANCE_S} s start-up), and an answer",
                                met=outcome.within and outcome.answered, note=f"Answer: {outcome.answer}")
                print(f"{rtt_ms:>4} ms  {words:<70} {outcome.wall_s:6.1f} s of {planned:>4} s  {outcome.answer}",
                      flush=True)
    recorder.write()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
