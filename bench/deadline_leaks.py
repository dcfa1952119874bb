"""What an audit ended by its deadline leaves behind in a long-lived process (a worker's): file
descriptors, threads, sockets towards the target, and how long sslyze takes to drain after its
phase's deadline (its remaining jobs fail at once: no socket opens past it).

    .venv/bin/python bench/deadline_leaks.py [--audits 10] [--deadline 15] [--nth 7]

Each audit scans tests/hostile.trickle_every(nth) (a real TLS server that trickles one connection in
`nth`: the pre-flight and sslyze's connectivity test pass, then its scan threads stall one by one; it
runs in a process of its own) with `run_scan(deadline_s=...)` in this process, one after another;
descriptors, threads and RSS are counted after each.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.hostile_targets import client_sockets_to, open_fds, sslyze_threads  # noqa: E402
from tests.support.pki import TestPki  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


SERVER = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tests import hostile
from tests.support.pki import TestPki
with hostile.trickle_every(TestPki(Path({pki!r})), nth={nth}) as port:
    print(port, flush=True)
    sys.stdin.read()
"""


@contextmanager
def server_process(pki_dir: Path, nth: int):
    """tests/hostile.trickle_every in a process of its own: it holds every connection it accepted
    (and a thread per connection) until it stops, which would blur this process's counts."""
    code = SERVER.format(root=str(ROOT), pki=str(pki_dir), nth=nth)
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield int(child.stdout.readline())
    finally:
        child.stdin.close()
        child.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=15.0)
    parser.add_argument("--nth", type=int, default=7)
    args = parser.parse_args()
    from workers.tls.engine import PROBES_RESERVE_S, run_scan
    from workers.tls.warmup import warm_up

    warm_up()
    pki_dir = Path(tempfile.mkdtemp(prefix="deadline-leaks-")) / "pki"
    pki = TestPki(pki_dir)
    gc.collect()
    fds, threads, rss = len(open_fds()), threading.active_count(), rss_mb()
    print(f"before: {fds} fds, {threads} threads, RSS {rss:.0f} MB (sslyze imported, trust stores loaded)")
    with server_process(pki_dir, args.nth) as port:
        for index in range(args.audits):
            started = time.monotonic()
            outcome = run_scan("localhost", port, ip="127.0.0.1", ca_file=str(pki.ca_file), allow_private=True,
                               network_timeout=3, max_retries=1, deadline_s=args.deadline)
            total = time.monotonic() - started
            drain = outcome.timings.get("sslyze", 0) + outcome.timings.get("reachability", 0) - (
                args.deadline - PROBES_RESERVE_S)
            gc.collect()
            print(f"audit {index + 1}: {total:.1f} s, {outcome.error.code if outcome.error else 'done'}; sslyze "
                  f"ended {drain:+.2f} s after its phase deadline; {outcome.error.detail if outcome.error else ''}; "
                  f"{len(open_fds())} fds, {threading.active_count()} threads (sslyze's: {len(sslyze_threads())}), "
                  f"client sockets to the port {len(client_sockets_to(port))}, RSS {rss_mb():.0f} MB", flush=True)
    print(f"after:  {len(open_fds())} fds ({len(open_fds()) - fds:+d}), {threading.active_count()} threads "
          f"({threading.active_count() - threads:+d}), RSS {rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
