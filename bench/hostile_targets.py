"""How long each hostile target (tests/hostile.py) takes to end as an explained failure, per path,
when the engines run the way the worker tasks run them, with the app's default settings (no Celery,
no database):

- audit:      `run_scan` (its pre-flight, then sslyze, then our probes) with AUDIT_DEADLINE_SECONDS;
- load:       the tasks' pre-flight (`reach.engine_preflight`), then one agent's `run_load` (n=100, c=2,
              the form's 10 s timeout, the stall bound LOAD_STALL_SECONDS, the run's max duration);
- handshakes: the pre-flight, then `handshake_matrix` (TLS 1.2 and 1.3, 10 agents x 10, as the preset's
              first level) with the stall bound and the run's max duration (LOAD_MAX_DURATION_S);
- probe:      the pre-flight, then `run_probe` (1 run, HTTPS) in one kept browser, PROBE_LOAD_TIMEOUT.

    .venv/bin/python bench/hostile_targets.py [--targets drip,slow_http] [--paths audit,load]

Prints one row per target (seconds and the outcome per path: an error code, or "done"), then the
figure "hostile targets ended <= 60 s: N/M". The worker-path matrix with its 60 s bound, leak and fd
counts is tests/hostile_targets/test_matrix.py; the one-target commands: bench/hostile_cli.py.
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
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tlsaudit.settings")
os.environ.setdefault("TLSAUDIT_DEV", "1")  # a bench on loopback: the development settings

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from tests import hostile  # noqa: E402
from tests.support.hostile_targets import TARGETS  # noqa: E402
from tests.support.pki import TestPki  # noqa: E402
from workers.net.errors import TargetError  # noqa: E402
from workers.net.reach import engine_preflight  # noqa: E402
from workers.net.target import resolve_target  # noqa: E402

BOUND_S = 60
PATHS = ("audit", "load", "handshakes", "probe")
LOAD_TIMEOUT_S = 10.0      # the load form's default timeout_s


def servers(pki, directory: Path) -> dict:
    return {"tarpit": hostile.tarpit, "reset": hostile.reset, "plain_http": hostile.plain_http,
            "garbage": hostile.garbage, "drip": hostile.drip, "drip_record": hostile.drip_record,
            "drip_noise": hostile.drip_noise, "drip_server_hello": hostile.drip_server_hello,
            "trickle_every": lambda: hostile.trickle_every(pki), "slow_http": lambda: hostile.slow_http(pki),
            "slow_subresource": lambda: hostile.slow_subresource(pki), "blackhole": hostile.blackhole,
            "big_chain": lambda: hostile.big_chain(pki, directory), "wrong_sni": lambda: hostile.wrong_sni(pki),
            "handshake_then_hang": lambda: hostile.handshake_then_hang(pki)}


def audit(host, port, ip, ca_file, resolver) -> str:
    from workers.tls.engine import run_scan

    outcome = run_scan(host, port, ip=ip, ca_file=ca_file, allow_private=True,
                       network_timeout=settings.SCAN_NETWORK_TIMEOUT, max_retries=1, resolver=resolver,
                       deadline_s=settings.AUDIT_DEADLINE_SECONDS)
    return outcome.error.code if outcome.error else "done"


def preflight(host, port, ip, resolver) -> tuple[str | None, str | None]:
    """(checked ip, error code): what the load and probe tasks do before their engine."""
    try:
        ip = resolve_target(host, port, pinned_ip=ip, allow_private=True, resolver=resolver).ip
    except TargetError as exc:
        return None, exc.code
    problem = engine_preflight(ip, port, host, settings.SCAN_NETWORK_TIMEOUT)
    return (None, problem.code) if problem else (ip, None)


def load(host, port, ip, resolver) -> str:
    from workers.load.client import run_load
    from workers.load.spec import LoadSpec

    ip, code = preflight(host, port, ip, resolver)
    if code:
        return code
    spec = LoadSpec(scheme="https", host=host, port=port, ip=ip, requests=100, concurrency=2,
                    timeout_s=LOAD_TIMEOUT_S, time_limit_s=settings.LOAD_MAX_DURATION_S,
                    stall_s=max(settings.LOAD_STALL_SECONDS, LOAD_TIMEOUT_S + 5))
    # Its own thread, as on a worker: sync Playwright keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(run_load, spec).result()
    if result.stalled:
        return "stalled"
    if result.counters.complete == 0:
        return "no_response"
    return "done" if result.counters.complete + result.counters.failed >= spec.requests else "max_duration"


def handshakes(host, port, ip, resolver) -> str:
    from workers.load.handshake import handshake_matrix

    ip, code = preflight(host, port, ip, resolver)
    if code:
        return code
    with ThreadPoolExecutor(1) as pool:
        cells = pool.submit(lambda: handshake_matrix(
            host, port, ip=ip, agents_levels=(10,), per_agent=10, deadline_s=settings.LOAD_MAX_DURATION_S,
            stall_s=max(settings.LOAD_STALL_SECONDS, 15))).result()
    if any(c.get("stalled") for c in cells):
        return "stalled"
    if any(c.get("cancelled") for c in cells):
        return "max_duration"
    return "done" if any(c.get("count") for c in cells) else "handshake_failed"


def probe(host, port, ip, resolver, browser, ca_pem) -> str:
    from workers.browser.probe import run_probe
    from workers.browser.spec import ProbeSpec

    ip, code = preflight(host, port, ip, resolver)
    if code:
        return code
    spec = ProbeSpec(host=host, https_port=port, http_port=port, ip=ip, ca_pem=ca_pem, runs=1,
                     variants=("https",), timeout_s=settings.PROBE_LOAD_TIMEOUT)
    result = run_probe(spec, browser=browser, allow_private=True)
    return result["error"]["code"] if result["error"] else "done"


def timed(call) -> tuple[float, str]:
    started = time.monotonic()
    code = call()
    return time.monotonic() - started, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--paths", default=",".join(PATHS))
    args = parser.parse_args()
    from workers.browser.chromium import ProbeBrowser

    paths = args.paths.split(",")
    directory = Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    pki = TestPki(directory / "pki")
    ca_pem = pki.ca_file.read_text()
    ended = total = 0
    print(f"{'target':20} " + " ".join(f"{path + ' s':>8} {'outcome':18}" for path in paths))
    with ProbeBrowser(ca_pem, {"localhost": "127.0.0.1"}) as browser, hostile.dns_server({}) as dns:
        for name in args.targets.split(","):
            if name == "nxdomain":
                host, port, ip, resolver, context = "nxdomain.hostile.test", 443, None, dns.address, None
            else:
                host, ip, resolver, context = "localhost", "127.0.0.1", None, servers(pki, directory)[name]()
            calls = {"audit": lambda: audit(host, port, ip, str(pki.ca_file), resolver),
                     "load": lambda: load(host, port, ip, resolver),
                     "handshakes": lambda: handshakes(host, port, ip, resolver),
                     "probe": lambda: probe(host, port, ip, resolver, browser, ca_pem)}
            with context or _nothing() as port_or_none:
                port = port_or_none or port
                row = [timed(calls[path]) for path in paths]
            ended += sum(seconds <= BOUND_S for seconds, _ in row)
            total += len(row)
            print(f"{name:20} " + " ".join(f"{s:8.1f} {code:18}" for s, code in row), flush=True)
    print(f"\nhostile targets ended <= {BOUND_S} s (engines as the tasks run them, default settings, "
          f"{','.join(paths)}): {ended}/{total}")


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
