"""Fifteen sites on one address behind a WAN link, at the shipped defaults (issue #27): the batch CLI
against the sslyze CLI over the same targets, alternated.

    .venv/bin/python bench/shared_address.py [--quick] [--json OUT] [--targets 15] [--rtt 50] [--rounds 3]

One nginx with the lab's graded configurations (bench/fleet.py), every server reached at the latency
lab's one address (tests/support/wan.py), as shared hosting serves many sites on one IP. Each round runs
`manage.py audit T1 ... T15 --ip ADDR --ca-file CA --json` with nothing raised (5 connections per
address, one audit of an address at a time, each deadline from its turn), then `python -m sslyze` over
the same targets (its own concurrency: 10 servers at once, 5 connections each, so up to 50 connections
to the one address). Prints per round: wall times, how many were graded and how many failed (and why),
and the ratio. Before #27 the batch CLI graded 1 of 15 here: 14 ran out of their 50 s deadline together.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.audit_fleet import HOST, PYTHON, sslyze_cli, timed  # noqa: E402
from bench.contract import Recorder, add_arguments  # noqa: E402
from bench.fleet import start_fleet  # noqa: E402

BENCH = {"title": "Sites on one address at 50 ms RTT: the batch CLI at the shipped defaults vs sslyze's", "order": 13,
         "quick_timeout_s": 150, "full_timeout_s": 1800}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--targets", type=int, help="sites on the one address (default 15; quick 4)")
    parser.add_argument("--rtt", type=float, default=50.0, help="the link's round trip, ms (default 50)")
    parser.add_argument("--rounds", type=int, help="alternated batch-CLI / sslyze-CLI pairs (default 3; quick 1)")
    args = parser.parse_args()
    args.targets = args.targets or (4 if args.quick else 15)
    args.rounds = args.rounds or (1 if args.quick else 3)
    return args


def shipped_env() -> dict[str, str]:
    """This machine's environment without our limits raised (a benchmark must run the shipped defaults)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL") and not k.startswith(("SCAN_", "AUDIT_"))}
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", PYTHONWARNINGS="ignore")
    return env


def outcomes(stdout: str, servers) -> tuple[int, Counter, list[str]]:
    """(graded with the fixture's grade, error codes, wrong grades) from the CLI's JSON lines."""
    lines = {line["port"]: line for line in map(json.loads, stdout.splitlines()) if "port" in line}
    graded, errors, wrong = 0, Counter(), []
    for server in servers:
        line = lines.get(server.port, {})
        if "error" in line:
            errors[line["error"]["code"]] += 1
        elif line.get("grade") == server.spec.grade:
            graded += 1
        else:
            wrong.append(f"{server.name}: {line.get('grade')}, expected {server.spec.grade}")
    return graded, errors, wrong


def main() -> None:
    args = parse_args()
    from tests.support.wan import start_wan

    recorder = Recorder(BENCH["title"], args)
    ours, raw, failed = [], [], 0
    with start_fleet(args.targets) as fleet, start_wan(args.rtt) as link:
        servers = fleet.servers[:args.targets]
        command = [PYTHON, "manage.py", "audit", *(f"{HOST}:{s.port}" for s in servers), "--ip", link.host,
                   "--ca-file", str(fleet.ca_file), "--json"]
        for round_number in range(1, args.rounds + 1):
            wall, _, code = timed(command, shipped_env())
            graded, errors, wrong = outcomes(timed.stdout, servers)
            failed += len(servers) - graded
            ours.append(wall)
            theirs = sslyze_cli(servers, link.host, fleet.ca_file)
            raw.append(theirs["wall"])
            print(f"round {round_number}: batch CLI {wall:.1f} s, {graded}/{len(servers)} graded, errors "
                  f"{dict(errors) or 'none'}{', WRONG ' + '; '.join(wrong) if wrong else ''} (exit {code}); "
                  f"sslyze CLI {theirs['wall']:.1f} s, {len(servers) - len(theirs['wrong'])} completed; "
                  f"ratio {wall / theirs['wall']:.2f}x", flush=True)
    recorder.figure(f"batch CLI, {args.targets} sites on one address at {args.rtt:g} ms RTT (wall)",
                    statistics.median(ours), "s", note=f"runs: {', '.join(f'{w:.1f}' for w in ours)}")
    recorder.figure("sslyze CLI, the same targets (wall)", statistics.median(raw), "s",
                    note=f"runs: {', '.join(f'{w:.1f}' for w in raw)}")
    recorder.figure("audits not graded (goal 0)", failed, "audits")
    recorder.ratio("batch CLI / sslyze CLI (wall)", ours, raw, goal="<= 0.3x (#27, with fewer connections per audit)",
                   met=lambda median: median <= 0.3, note="sides alternated, one pair a round")
    recorder.write()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
