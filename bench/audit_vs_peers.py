"""Audit speed vs peers (issue #9): one full audit by us, by raw sslyze and by testssl.sh, same target, same run.

    .venv/bin/python bench/audit_vs_peers.py [--quick] [--json OUT] [--target b_tls10_enabled] [--runs 5]
        [--testssl-runs 2]

Starts the TLS lab and times, interleaved round by round on one fixture (hostname localhost pinned to
127.0.0.1, the lab's root as custom CA), the contenders of bench/audit_speed.py (whose functions it
reuses: each checks that its audit completed and, for ours, that the grade is right):

- ours, warm: `run_scan` + `build_report` in this process (what the Celery worker does);
- ours, cold: `manage.py audit HOST:PORT --ip 127.0.0.1 --ca-file CA --json` in a new process;
- sslyze CLI, default commands and all 18 commands (cold); sslyze API, all 18 commands (warm);
- testssl.sh, Debian's package (3.0.8 on bookworm, not 3.2: see bench/README.md), default checks:
  `testssl --quiet --color 0 --warnings off --jsonfile FILE --ip 127.0.0.1 --add-ca CA https://localhost:PORT`,
  checked by its JSON (every protocol tested, scan time reported). It runs the first `--testssl-runs`
  rounds only (about 100 s a run here); quick mode leaves it out.

Round 0 warms up and is dropped (testssl has no warm state and skips it). CPU: this process's
process_time() for the warm contenders, the children's rusage for the cold ones (testssl's openssl
children included).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.audit_speed import (  # noqa: E402
    ALL_SSLYZE_FLAGS,
    HOST,
    IP,
    OURS_CLI,
    OURS_WARM,
    SSLYZE_API,
    SSLYZE_CLI,
    SSLYZE_CLI_ALL,
    ours_cli,
    ours_in_process,
    sslyze_cli,
    sslyze_in_process,
)
from bench.contract import Recorder, add_arguments  # noqa: E402
from tests.support.tls_servers import FIXTURES, require_nginx, start_lab  # noqa: E402

BENCH = {"title": "Audit speed vs peers", "order": 30, "quick_timeout_s": 240, "full_timeout_s": 1200}
TESTSSL = "testssl.sh (Debian, default checks, cold)"
TESTSSL_PROTOCOL_IDS = ("SSLv2", "SSLv3", "TLS1", "TLS1_1", "TLS1_2", "TLS1_3")
TESTSSL_FIRST_ERROR = 242  # testssl.sh 3.0's ERR_* exit codes run from 242 (ERR_CHILD) to 255 (ERR_BASH)
GOAL_RATIO = 2.0  # issue #3: ours at most 2x raw sslyze


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--target", default="b_tls10_enabled",
                        choices=[n for n, s in FIXTURES.items() if s.role == "grade"])
    parser.add_argument("--runs", type=int, help="timed rounds after one warm-up (default 5, quick 3)")
    parser.add_argument("--testssl-runs", type=int, help="rounds that also run testssl.sh (default 2, quick 0)")
    args = parser.parse_args()
    args.runs = args.runs if args.runs is not None else (3 if args.quick else 5)
    args.testssl_runs = args.testssl_runs if args.testssl_runs is not None else (0 if args.quick else 2)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not 0 <= args.testssl_runs <= args.runs:
        parser.error("--testssl-runs must be between 0 and --runs")
    return args


def testssl_binary() -> str | None:
    return shutil.which("testssl") or shutil.which("testssl.sh")


def testssl_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout
    return next((line.split("testssl", 1)[1].split("from")[0].strip() for line in out.splitlines()
                 if "testssl" in line and "from" in line), "unknown")


def testssl_command(binary: str, port: int, ca_file: str, json_out: Path) -> list[str]:
    return [binary, "--quiet", "--color", "0", "--warnings", "off", "--jsonfile", str(json_out), "--ip", IP,
            "--add-ca", ca_file, f"https://{HOST}:{port}"]


def testssl_run(binary: str, port: int, ca_file: str, json_out: Path, exits: list[int]) -> None:
    """One testssl.sh run; fails unless its JSON shows every protocol tested, a scan time and no fatal
    problem. testssl 3.0 exits with the sum of its checks' return codes (non-zero when a check had
    trouble, e.g. a handshake that timed out on a busy machine) or with an error code from 242 up:
    only the latter is a failed run."""
    json_out.unlink(missing_ok=True)  # testssl refuses to overwrite its JSON file
    done = subprocess.run(testssl_command(binary, port, ca_file, json_out), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode < TESTSSL_FIRST_ERROR, \
        f"testssl exited {done.returncode}: {done.stdout[-800:]}{done.stderr[-800:]}"
    entries = json.loads(json_out.read_text())
    fatal = [e for e in entries if e.get("severity") == "FATAL"]
    assert not fatal, f"testssl reported fatal problems: {fatal}"
    findings = {entry["id"]: entry for entry in entries}
    missing = [p for p in TESTSSL_PROTOCOL_IDS if p not in findings]
    assert not missing, f"testssl did not test {missing}"
    assert "scanTime" in findings, "testssl reported no scan time (the scan did not finish)"
    assert "offered" in findings["TLS1_2"]["finding"], findings["TLS1_2"]
    exits.append(done.returncode)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(run, cold: bool) -> tuple[float, float]:
    """(wall s, CPU s) of one contender run."""
    cpu = children_cpu_s() if cold else time.process_time()
    started = time.perf_counter()
    run()
    wall = time.perf_counter() - started
    return wall, (children_cpu_s() if cold else time.process_time()) - cpu


def run_rounds(contenders: dict, runs: int, testssl_runs: int) -> dict[str, dict[str, list[float]]]:
    """Round 0 warms up (dropped); round i starts with contender i mod n, so no one always goes first."""
    times = {name: {"wall": [], "cpu": []} for name in contenders}
    names = [n for n in contenders if n != TESTSSL]
    for round_number in range(runs + 1):
        order = names[round_number % len(names):] + names[:round_number % len(names)]
        if TESTSSL in contenders and 1 <= round_number <= testssl_runs:
            order.insert(round_number % (len(order) + 1), TESTSSL)
        for name in order:
            run, cold = contenders[name]
            wall, cpu = timed(run, cold)
            if round_number:
                times[name]["wall"].append(wall)
                times[name]["cpu"].append(cpu)
        print(f"  {'warm-up' if round_number == 0 else f'round {round_number}/{runs}'}: done", file=sys.stderr,
              flush=True)
    return times


def contenders_for(port: int, ca: str, expected: str, scratch: Path, testssl: str | None,
                   testssl_exits: list[int]) -> dict:
    contenders = {
        OURS_WARM: (lambda: ours_in_process(port, ca, expected), False),
        OURS_CLI: (lambda: ours_cli(port, ca, expected, scratch), True),
        SSLYZE_CLI: (lambda: sslyze_cli(port, ca, scratch / "sslyze.json"), True),
        SSLYZE_CLI_ALL: (lambda: sslyze_cli(port, ca, scratch / "sslyze-all.json",
                                            (*ALL_SSLYZE_FLAGS, "--mozilla_config=intermediate")), True),
        SSLYZE_API: (lambda: sslyze_in_process(port, ca), False),
    }
    if testssl:
        contenders[TESTSSL] = (lambda: testssl_run(testssl, port, ca, scratch / "testssl.json", testssl_exits), True)
    return contenders


def record(recorder: Recorder, times: dict, args, testssl: str | None) -> None:
    medians = {name: statistics.median(t["wall"]) for name, t in times.items() if t["wall"]}
    cpu = {name: statistics.median(t["cpu"]) for name, t in times.items() if t["cpu"]}
    for name, wall in medians.items():
        spread = f"min {min(times[name]['wall']):.2f}, max {max(times[name]['wall']):.2f}, n={len(times[name]['wall'])}"
        recorder.figure(f"{name}: wall (median)", wall, "s", note=f"{spread}; CPU {cpu[name]:.2f} s")
    # Every round runs each contender once, in a rotating order: round i's runs are an alternated pair.
    for ours, raw, label in ((OURS_CLI, SSLYZE_CLI_ALL, "ours CLI / sslyze CLI (all 18 commands)"),
                             (OURS_CLI, SSLYZE_CLI, "ours CLI / sslyze CLI (default commands)"),
                             (OURS_WARM, SSLYZE_API, "ours in-process / sslyze API (both warm)")):
        recorder.ratio(label, times[ours]["wall"], times[raw]["wall"], goal=f"<= {GOAL_RATIO:.0f}x (issue #3)",
                       met=lambda ratio: ratio <= GOAL_RATIO, note="wall time")
    if TESTSSL in medians:
        tested = len(times[TESTSSL]["wall"])  # testssl runs in the first rounds only: pair it with ours of those
        recorder.ratio("testssl.sh / ours CLI", times[TESTSSL]["wall"], times[OURS_CLI]["wall"][:tested],
                       note="how many times longer testssl.sh takes; it also simulates 35 clients and runs more "
                            "checks, with an openssl process per check")
    else:
        why = ("testssl.sh is not installed (Debian package testssl.sh)" if not testssl else
               "quick mode skips testssl.sh (about 100 s a run here); `make bench-full` runs it")
        recorder.figure(f"{TESTSSL}: wall (median)", None, "s", note=why)
        recorder.note(why)


def main() -> None:
    args = parse_args()
    require_nginx()
    recorder = Recorder(BENCH["title"], args)
    expected = FIXTURES[args.target].grade
    testssl = testssl_binary()
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as scratch, start_lab() as lab:
        scratch = Path(scratch)
        port, ca = lab.port(args.target), str(lab.ca_file)
        testssl_exits: list[int] = []
        contenders = contenders_for(port, ca, expected, scratch, testssl if args.testssl_runs else None,
                                    testssl_exits)
        print(f"{args.target} (grade {expected}) on {HOST}:{port}{{{IP}}}: {args.runs} rounds, testssl in "
              f"{args.testssl_runs}", file=sys.stderr)
        times = run_rounds(contenders, args.runs, args.testssl_runs)
    record(recorder, times, args, testssl)
    if testssl_exits:
        recorder.note(f"testssl.sh exit statuses: {testssl_exits} (the sum of its checks' return codes: 0 = every "
                      "check ran cleanly, a small number = a check had trouble, e.g. a timeout on a busy machine).")
    import sslyze.__version__ as sslyze_version

    recorder.note(f"Target: lab fixture `{args.target}` (expected grade {expected}), TLS 1.0-1.3; "
                  f"{args.runs} interleaved rounds after a warm-up; sslyze {sslyze_version.__version__}; "
                  + (f"testssl.sh {testssl_version(testssl)} (Debian's package; 3.2 is not packaged for bookworm)"
                     if testssl else "testssl.sh not installed") + ".")
    recorder.note("Cold rows include process start-up (Django set-up ~0.4 s, importing sslyze ~0.3 s); warm rows "
                  "are what a running worker pays. testssl.sh forks openssl per check, so its CPU is mostly its "
                  "children's.")
    recorder.write()


if __name__ == "__main__":
    main()
