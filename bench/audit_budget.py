"""Does a full audit of an honest but distant server fit the audit's deadline? Per-phase times of
`run_scan` through a latency proxy (bench/slow_link.py) in front of lab servers, at several RTTs.

    .venv/bin/python bench/audit_budget.py [--rtt-ms 150,200] [--targets a_plus_rsa_hsts,b_tls10_enabled]

Uses the app's settings (SCAN_NETWORK_TIMEOUT, SCAN_CONNECTIONS_PER_SERVER, AUDIT_DEADLINE_SECONDS) and
the lab's CA. Prints one row per (RTT, target): total seconds, the phases (pre-flight, sslyze, AIA,
preference, ALPN, HSTS), the outcome, and whether every check was tested. What the deadline must
hold: sslyze ends PROBES_RESERVE_S before the deadline, our probes by it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tlsaudit.settings")
os.environ.setdefault("TLSAUDIT_DEV", "1")  # a bench on loopback: the development settings

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from slow_link import slow_link  # noqa: E402

from tests.support.tls_servers import start_lab  # noqa: E402

PHASES = ("reachability", "sslyze", "aia", "preference", "alpn", "hsts")


def untested(facts) -> list[str]:
    """Our probes' checks that ended 'not tested' (e.g. the deadline came first)."""
    found = [name for name in ("alpn_check", "hsts_check") if getattr(facts, name).status == "not_tested"]
    found += [f"preference {p}" for p, pref in facts.preferences.items() if pref.enforced is None
              and "budget" in (pref.reason or "")]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", default="0,150,200")
    parser.add_argument("--targets", default="a_plus_rsa_hsts,b_tls10_enabled")
    args = parser.parse_args()
    from workers.tls.engine import PROBES_RESERVE_S, run_scan

    deadline = settings.AUDIT_DEADLINE_SECONDS
    print(f"deadline {deadline} s (sslyze until {deadline - PROBES_RESERVE_S:g} s), network timeout "
          f"{settings.SCAN_NETWORK_TIMEOUT} s, {settings.SCAN_CONNECTIONS_PER_SERVER} connections; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'RTT ms':>6} {'target':18} {'total s':>7} " + " ".join(f"{p:>12}" for p in PHASES) + "  outcome")
    with start_lab() as lab:
        for rtt_ms in (int(r) for r in args.rtt_ms.split(",")):
            for name in args.targets.split(","):
                with slow_link(lab.port(name), rtt_ms / 1000) as port:
                    started = time.monotonic()
                    outcome = run_scan("localhost", port, ip="127.0.0.1", ca_file=str(lab.ca_file),
                                       allow_private=True, network_timeout=settings.SCAN_NETWORK_TIMEOUT,
                                       per_server_connections=settings.SCAN_CONNECTIONS_PER_SERVER,
                                       deadline_s=deadline)
                    total = time.monotonic() - started
                result = outcome.error.code if outcome.error else (
                    "done, all tested" if not untested(outcome.facts) else f"done, not tested: {untested(outcome.facts)}")
                print(f"{rtt_ms:>6} {name:18} {total:7.1f} "
                      + " ".join(f"{outcome.timings.get(p, 0):12.1f}" for p in PHASES) + f"  {result}", flush=True)


if __name__ == "__main__":
    main()
