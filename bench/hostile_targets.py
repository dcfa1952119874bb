"""How long each hostile target (tests/hostile.py) takes to end as an explained failure, per path,
when the engines run the way the worker tasks run them (no Celery, no database):

- audit: `run_scan` (its pre-flight, then sslyze) with the task's settings;
- load:  the task's pre-flight (`reach.check_tls`), then one agent's `run_load` (n=1, c=1) if it passed;
- probe: the task's pre-flight, then `run_probe` (1 run, HTTPS) in one kept browser if it passed.

    .venv/bin/python bench/hostile_targets.py [--network-timeout 3] [--page-timeout 30]

Prints one row per target: seconds and the error code per path. The worker-path matrix with its
60 s bound, leak and fd counts is tests/hostile_targets/test_matrix.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from tests import hostile  # noqa: E402
from tests.hostile_targets.conftest import TARGETS  # noqa: E402
from tests.support.pki import TestPki  # noqa: E402
from workers.tls import reach  # noqa: E402
from workers.tls.errors import TargetError, reach_error  # noqa: E402
from workers.tls.target import resolve_target  # noqa: E402


def servers(pki, directory: Path) -> dict:
    return {"tarpit": hostile.tarpit, "reset": hostile.reset, "plain_http": hostile.plain_http,
            "garbage": hostile.garbage, "drip": hostile.drip, "blackhole": hostile.blackhole,
            "big_chain": lambda: hostile.big_chain(pki, directory), "wrong_sni": lambda: hostile.wrong_sni(pki),
            "handshake_then_hang": lambda: hostile.handshake_then_hang(pki)}


def audit(host, port, ip, args, ca_file, resolver) -> str:
    from workers.tls.engine import run_scan

    outcome = run_scan(host, port, ip=ip, ca_file=ca_file, allow_private=True, network_timeout=args.network_timeout,
                       max_retries=1, resolver=resolver)
    return outcome.error.code if outcome.error else "done"


def preflight(host, port, ip, args, resolver) -> tuple[str | None, str | None]:
    """(checked ip, error code): what the load and probe tasks do before their engine."""
    try:
        ip = resolve_target(host, port, pinned_ip=ip, allow_private=True, resolver=resolver).ip
    except TargetError as exc:
        return None, exc.code
    outcome = reach.check_tls(ip, port, host, args.network_timeout)
    if outcome.outcome in (reach.OK, reach.REFUSED):
        return ip, None
    return None, reach_error(outcome, host).code


def load(host, port, ip, args, resolver) -> str:
    from workers.load.client import run_load
    from workers.load.spec import LoadSpec

    ip, code = preflight(host, port, ip, args, resolver)
    if code:
        return code
    spec = LoadSpec(scheme="https", host=host, port=port, ip=ip, requests=1, concurrency=1,
                    timeout_s=args.load_timeout)
    # Its own thread, as on a worker: sync Playwright keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(run_load, spec).result()
    return "done" if result.counters.complete else "no_response"


def probe(host, port, ip, args, resolver, browser, ca_pem) -> str:
    from workers.browser.probe import run_probe
    from workers.browser.spec import ProbeSpec

    ip, code = preflight(host, port, ip, args, resolver)
    if code:
        return code
    spec = ProbeSpec(host=host, https_port=port, http_port=port, ip=ip, ca_pem=ca_pem, runs=1,
                     variants=("https",), timeout_s=args.page_timeout)
    result = run_probe(spec, browser=browser, allow_private=True)
    return result["error"]["code"] if result["error"] else "done"


def timed(call) -> tuple[float, str]:
    started = time.monotonic()
    code = call()
    return time.monotonic() - started, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network-timeout", type=float, default=3.0, help="SCAN_NETWORK_TIMEOUT (s)")
    parser.add_argument("--page-timeout", type=float, default=30.0, help="PROBE_LOAD_TIMEOUT (s)")
    parser.add_argument("--load-timeout", type=float, default=10.0, help="a load test's timeout_s")
    args = parser.parse_args()
    from workers.browser.chromium import ProbeBrowser

    directory = Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    pki = TestPki(directory / "pki")
    ca_pem = pki.ca_file.read_text()
    print(f"{'target':22} {'audit s':>8} {'code':22} {'load s':>7} {'code':22} {'probe s':>8} code")
    with ProbeBrowser(ca_pem, {"localhost": "127.0.0.1"}) as browser, hostile.dns_server({}) as dns:
        for name in TARGETS:
            if name == "nxdomain":
                host, port, ip, resolver, context = "nxdomain.hostile.test", 443, None, dns.address, None
            else:
                host, ip, resolver, context = "localhost", "127.0.0.1", None, servers(pki, directory)[name]()
            with context or _nothing() as port_or_none:
                port = port_or_none or port
                row = [timed(lambda: audit(host, port, ip, args, str(pki.ca_file), resolver)),
                       timed(lambda: load(host, port, ip, args, resolver)),
                       timed(lambda: probe(host, port, ip, args, resolver, browser, ca_pem))]
            print(f"{name:22} " + " ".join(f"{s:8.1f} {code:22}" for s, code in row), flush=True)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
