"""Every hostile server of tests/hostile.py against every one-target command, run as a user types it:
`python manage.py audit|loadtest|handshakes|probe ... --json` in its own process, with the defaults
(no --timeout, no --deadline). Prints, per target and command, the wall time, the exit status and
the JSON error code, then the figure "hostile targets ended <= 60 s: N/M" (ended = exit 2 with a
JSON `error`, or exit 0 where the target is a real TLS server whose hostility is elsewhere).

    .venv/bin/python bench/hostile_cli.py [--commands audit,loadtest,handshakes,probe] [--targets drip,...]
                                          [--cap 120] [--parallel 2]

Each command is killed after --cap seconds (counted as not ended). Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import hostile  # noqa: E402
from tests.support.pki import TestPki  # noqa: E402

BOUND_S = 60
# Servers whose every TLS handshake completes: an audit of them may end done (exit 0), its report
# saying what could not be read; the others must end in an error (exit 2).
TLS_OK = {"handshake_then_hang", "slow_http", "slow_subresource", "trickle_every"}
TARGETS = ("tarpit", "reset", "plain_http", "garbage", "drip", "drip_record", "drip_noise", "drip_server_hello",
           "trickle_every", "slow_http", "slow_subresource", "big_chain", "wrong_sni", "handshake_then_hang",
           "blackhole")
COMMANDS = ("audit", "loadtest", "handshakes", "probe")


@dataclass
class Outcome:
    seconds: float
    exit: int | None           # None: killed at the cap
    code: str                  # the JSON error's code, "-" for none

    def ended(self, target: str, command: str) -> bool:
        if self.exit is None or self.seconds > BOUND_S:
            return False
        if self.exit == 2:
            return self.code != "-"
        return self.exit == 0 and target in TLS_OK


def servers(pki, directory: Path) -> dict:
    return {"tarpit": hostile.tarpit, "reset": hostile.reset, "plain_http": hostile.plain_http,
            "garbage": hostile.garbage, "drip": hostile.drip, "drip_record": hostile.drip_record,
            "drip_noise": hostile.drip_noise, "drip_server_hello": hostile.drip_server_hello,
            "trickle_every": lambda: hostile.trickle_every(pki), "slow_http": lambda: hostile.slow_http(pki),
            "slow_subresource": lambda: hostile.slow_subresource(pki), "blackhole": hostile.blackhole,
            "big_chain": lambda: hostile.big_chain(pki, directory), "wrong_sni": lambda: hostile.wrong_sni(pki),
            "handshake_then_hang": lambda: hostile.handshake_then_hang(pki)}


def argv_for(command: str, port: int, ca_file: str) -> list[str]:
    target = f"localhost:{port}"
    return {"audit": ["audit", target, "--ip", "127.0.0.1", "--ca-file", ca_file],
            "loadtest": ["loadtest", f"https://{target}/", "--ip", "127.0.0.1"],
            "handshakes": ["handshakes", target, "--ip", "127.0.0.1"],
            "probe": ["probe", f"https://{target}/", "--ip", "127.0.0.1", "--ca-file", ca_file, "--runs", "1"],
            }[command] + ["--json"]


def cli_env(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", PYTHONWARNINGS="ignore",
               DATABASE_URL=f"sqlite:///{directory / 'never.sqlite3'}", TLSAUDIT_VAR_DIR=str(directory / "var"))
    return env


def run(argv: list[str], env: dict, cap: float) -> Outcome:
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *argv], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, _ = process.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.communicate()
        return Outcome(time.monotonic() - started, None, "-")
    seconds = time.monotonic() - started
    try:
        code = json.loads(stdout).get("error", {}).get("code", "-")
    except (json.JSONDecodeError, AttributeError):
        code = "no-json"
    return Outcome(seconds, process.returncode, code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--cap", type=float, default=120.0, help="kill a command after this many seconds")
    parser.add_argument("--parallel", type=int, default=2, help="commands run at once (the machine has 2 cores)")
    args = parser.parse_args()
    commands = args.commands.split(",")
    targets = args.targets.split(",")
    directory = Path(tempfile.mkdtemp(prefix="hostile-cli-"))
    pki = TestPki(directory / "pki")
    env = cli_env(directory)
    print(f"{'target':20} " + " ".join(f"{c:>28}" for c in commands), flush=True)
    ended = total = 0
    with ExitStack() as stack:
        ports = {name: stack.enter_context(servers(pki, directory)[name]()) for name in targets}
        jobs = [(t, c) for t in targets for c in commands]
        with ThreadPoolExecutor(args.parallel) as pool:
            results = dict(zip(jobs, pool.map(
                lambda job: run(argv_for(job[1], ports[job[0]], str(pki.ca_file)), env, args.cap), jobs)))
    for target in targets:
        cells = []
        for command in commands:
            outcome = results[(target, command)]
            ok = outcome.ended(target, command)
            ended += ok
            total += 1
            shown = "killed" if outcome.exit is None else f"exit {outcome.exit}"
            cells.append(f"{outcome.seconds:6.1f} s {shown:7} {outcome.code:10}{'' if ok else ' !'}")
        print(f"{target:20} " + " ".join(f"{cell:>28}" for cell in cells), flush=True)
    print(f"\nhostile targets ended <= {BOUND_S} s (CLI {','.join(commands)}): {ended}/{total}")


if __name__ == "__main__":
    main()
