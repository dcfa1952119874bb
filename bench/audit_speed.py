"""How much does a TLS Audit audit cost next to raw sslyze? (issue #3 "Benchmark"; goal: at most 2x)

    .venv/bin/python bench/audit_speed.py [--target b_tls10_enabled] [--runs 5]

Starts the nginx TLS lab (tests/support/tls_servers.py), then times, interleaved round by round
on the same fixture (hostname localhost pinned to 127.0.0.1, the lab's root as custom CA):

1. ours, warm:  `run_scan` + `build_report` in this process (the Celery worker's path);
2. ours, cold:  `manage.py audit --json` as a subprocess (SQLite path that is never created, no broker);
3. sslyze CLI, default: `python -m sslyze --json_out=FILE --certinfo_ca_file CA 'localhost:PORT{127.0.0.1}'`
   (its default set: the 15 commands the Mozilla check needs, plus the "intermediate" check);
4. sslyze CLI, all 18 commands (the commands our engine runs) plus the "intermediate" check;
5. sslyze API, warm: `Scanner` with all 18 commands in this process.

Round 0 is a discarded warm-up (imports, trust stores, page cache). Each sslyze run writes its JSON
to a temp file instead of /dev/null so the script can check that the scan really completed.
Prints the machine, the command, a markdown table (median / min / max seconds) and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.tls_servers import FIXTURES, NGINX, require_nginx, start_lab  # noqa: E402

PYTHON = sys.executable
HOST, IP = "localhost", "127.0.0.1"
# The CLI's defaults (settings.SCAN_NETWORK_TIMEOUT / SCAN_CONNECTIONS_PER_SERVER), for the in-process run.
NETWORK_TIMEOUT, CONNECTIONS_PER_SERVER = 3, 5
ALL_SSLYZE_FLAGS = ("--sslv2", "--sslv3", "--tlsv1", "--tlsv1_1", "--tlsv1_2", "--tlsv1_3", "--certinfo", "--reneg",
                    "--resum", "--compression", "--heartbleed", "--openssl_ccs", "--fallback", "--http_headers",
                    "--elliptic_curves", "--ems", "--early_data", "--robot")
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
OURS_WARM, OURS_CLI = "ours: run_scan + build_report (in-process, warm)", "ours: manage.py audit --json (cold)"
SSLYZE_CLI, SSLYZE_CLI_ALL = "sslyze CLI, default commands (cold)", "sslyze CLI, all 18 commands (cold)"
SSLYZE_API = "sslyze API, all 18 commands (in-process, warm)"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="b_tls10_enabled", choices=[n for n, s in FIXTURES.items()
                                                                          if s.role == "grade"])
    parser.add_argument("--runs", type=int, default=5, help="timed rounds (after one warm-up round)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


# --- the five contenders: each returns only after checking that its audit really completed -----------

def ours_in_process(port: int, ca_file: str, expected_grade: str) -> dict[str, float]:
    from tlsaudit.domain.audit_report import build_report
    from workers.tls.engine import run_scan

    outcome = run_scan(HOST, port, ip=IP, ca_file=ca_file, allow_private=True, network_timeout=NETWORK_TIMEOUT,
                       max_retries=1, per_server_connections=CONNECTIONS_PER_SERVER)
    assert outcome.error is None, outcome.error
    grade = build_report(outcome.facts, outcome.mozilla).grade.grade
    assert grade == expected_grade, f"ours graded {grade}, the lab expects {expected_grade}"
    return outcome.timings  # seconds per phase, for the breakdown


def ours_cli(port: int, ca_file: str, expected_grade: str, sandbox: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", TLSAUDIT_VAR_DIR=str(sandbox / "var"),
               DATABASE_URL=f"sqlite:///{sandbox / 'never-created.sqlite3'}", PYTHONWARNINGS="ignore")
    done = subprocess.run([PYTHON, str(ROOT / "manage.py"), "audit", f"{HOST}:{port}", "--ip", IP,
                           "--ca-file", ca_file, "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["grade"] == expected_grade


def sslyze_cli(port: int, ca_file: str, json_out: Path, extra: tuple[str, ...] = ()) -> None:
    # sslyze exits 1 when the server fails the Mozilla check, which the legacy fixtures do on purpose.
    done = subprocess.run(sslyze_command(port, ca_file, json_out, extra), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result = json.loads(json_out.read_text())["server_scan_results"][0]
    status = (result["connectivity_status"], result["scan_status"])
    assert status == ("COMPLETED", "COMPLETED"), (status, result["connectivity_error_trace"])
    commands = result["scan_result"].values()
    assert all(c["status"] in ("COMPLETED", "NOT_SCHEDULED") for c in commands)
    assert sum(c["status"] == "COMPLETED" for c in commands) == (18 if extra else 15)


def sslyze_command(port: int, ca_file: str, json_out: Path, extra: tuple[str, ...] = ()) -> list[str]:
    return [PYTHON, "-m", "sslyze", f"--json_out={json_out}", "--certinfo_ca_file", ca_file, *extra,
            f"{HOST}:{port}{{{IP}}}"]


def sslyze_in_process(port: int, ca_file: str) -> None:
    from sslyze import (
        CertificateInfoExtraArgument,
        ScanCommandsExtraArguments,
        Scanner,
        ServerNetworkLocation,
        ServerScanRequest,
        ServerScanStatusEnum,
    )

    request = ServerScanRequest(
        server_location=ServerNetworkLocation(HOST, port, ip_address=IP),
        scan_commands_extra_arguments=ScanCommandsExtraArguments(
            certificate_info=CertificateInfoExtraArgument(custom_ca_file=Path(ca_file))))
    scanner = Scanner(per_server_concurrent_connections_limit=CONNECTIONS_PER_SERVER, concurrent_server_scans_limit=1)
    scanner.queue_scans([request])
    (result,) = list(scanner.get_results())
    assert result.scan_status == ServerScanStatusEnum.COMPLETED, result.connectivity_error_trace


# --- timing --------------------------------------------------------------------------------------

def run_rounds(contenders: dict[str, Callable[[], dict | None]], runs: int) -> tuple[dict[str, list[float]], list[dict]]:
    """Round 0 warms up and is dropped; round i starts with contender i (mod n) so no one always goes first."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    phase_timings: list[dict] = []
    names = list(contenders)
    for round_number in range(runs + 1):
        order = names[round_number % len(names):] + names[:round_number % len(names)]
        for name in order:
            started = time.perf_counter()
            phases = contenders[name]()
            elapsed = time.perf_counter() - started
            if round_number:
                times[name].append(elapsed)
                if phases:
                    phase_timings.append(phases)
        label = "warm-up" if round_number == 0 else f"round {round_number}/{runs}"
        print(f"  {label}: done", file=sys.stderr, flush=True)
    return times, phase_timings


def markdown_table(times: dict[str, list[float]]) -> str:
    rows = ["| run | median s | min s | max s |", "|---|---:|---:|---:|"]
    rows += [f"| {name} | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} |" for name, t in times.items()]
    return "\n".join(rows)


def ratio_lines(times: dict[str, list[float]]) -> list[str]:
    median = {name: statistics.median(t) for name, t in times.items()}
    pairs = [(OURS_CLI, SSLYZE_CLI, "ours CLI / sslyze CLI (default commands)"),
             (OURS_CLI, SSLYZE_CLI_ALL, "ours CLI / sslyze CLI (all 18 commands)"),
             (OURS_WARM, SSLYZE_API, "ours in-process / sslyze API in-process (both warm)")]
    lines = []
    for ours, raw, label in pairs:
        ratio = median[ours] / median[raw]
        lines.append(f"- {label}: **{ratio:.2f}x** ({'within' if ratio <= 2 else 'OVER'} the 2x goal)")
    return lines


def phase_lines(phase_timings: list[dict]) -> list[str]:
    """Where the in-process audit spends its time (medians of `ScanOutcome.timings`)."""
    phases = [p for p in phase_timings[0] if p != "connectivity"]  # connectivity is a mark inside "sslyze"
    return [f"- {p}: {statistics.median(t.get(p, 0.0) for t in phase_timings):.3f} s" for p in phases]


def machine_lines() -> list[str]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown")
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    nginx = subprocess.run([str(NGINX), "-v"], capture_output=True, text=True).stderr.strip()
    import sslyze.__version__ as sslyze_version
    testssl = shutil.which("testssl.sh") or shutil.which("testssl")
    return [f"- machine: nproc {nproc}, CPU {model}, {platform.system()} {platform.release()}",
            f"- Python {platform.python_version()}, sslyze {sslyze_version.__version__}, {nginx}",
            f"- testssl.sh: found at {testssl}, not measured by this script" if testssl
            else "- testssl.sh: not installed here (and not fetched), so there is no testssl.sh comparison"]


def main() -> None:
    args = parse_args()
    require_nginx()
    expected = FIXTURES[args.target].grade
    command = " ".join(shlex.quote(a) for a in [os.path.relpath(PYTHON, ROOT), *sys.argv])
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as scratch, start_lab() as lab:
        scratch = Path(scratch)
        port, ca = lab.port(args.target), str(lab.ca_file)
        contenders = {
            OURS_WARM: lambda: ours_in_process(port, ca, expected),
            OURS_CLI: lambda: ours_cli(port, ca, expected, scratch),
            SSLYZE_CLI: lambda: sslyze_cli(port, ca, scratch / "sslyze.json"),
            SSLYZE_CLI_ALL: lambda: sslyze_cli(port, ca, scratch / "sslyze-all.json",
                                               (*ALL_SSLYZE_FLAGS, "--mozilla_config=intermediate")),
            SSLYZE_API: lambda: sslyze_in_process(port, ca),
        }
        print(f"benchmarking {args.target} (expected grade {expected}) on {HOST}:{port}{{{IP}}}, "
              f"{args.runs} rounds", file=sys.stderr)
        times, phases = run_rounds(contenders, args.runs)
        raw_command = shlex.join([os.path.relpath(PYTHON, ROOT), *sslyze_command(port, ca, Path("FILE"))[1:]])
        assert not (scratch / "never-created.sqlite3").exists(), "manage.py audit opened the database"
    print(f"## Audit speed: {args.target} (grade {expected}), {args.runs} interleaved runs after 1 warm-up\n")
    print(f"- command: `{command}`")
    print(f"- raw sslyze baseline: `{raw_command}` (all-18 run: plus every command flag and "
          "`--mozilla_config=intermediate`)")
    print("\n".join(machine_lines()) + "\n")
    print(markdown_table(times) + "\n")
    print("Ratios of medians (goal: ours at most 2x raw sslyze):")
    print("\n".join(ratio_lines(times)) + "\n")
    print("Our in-process audit by phase (median):")
    print("\n".join(phase_lines(phases)))


if __name__ == "__main__":
    main()
