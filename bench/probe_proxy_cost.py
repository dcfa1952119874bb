"""What the guarded probe's SOCKS5 proxy (workers/browser/proxy.py) costs in the measured timings:
the local probe site (8 requests a page, HTTPS h2 and HTTP) probed in one browser, in turn:
- direct: private targets allowed, no guard at all (dev and tests);
- documents: guarded without the proxy (only the CDP pause of each document request, as before #8);
- proxied: guarded as in production (the document pause and every connection through the proxy).

    .venv/bin/python bench/probe_proxy_cost.py [--runs 5] [--rounds 3]

Guarded here means the real address policy except that 127.0.0.1 counts as public (the site runs on
loopback). Prints the median of each phase per variant and mode in each setting; the proxy's own
cost is proxied - documents.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from unittest import mock  # noqa: E402

from tests.support.probe_site import start_probe_site  # noqa: E402
from tlsaudit.domain.netguard import refused_kind  # noqa: E402
from workers.browser.chromium import ProbeBrowser  # noqa: E402
from workers.browser.guard import AddressGuard  # noqa: E402
from workers.browser.probe import run_probe  # noqa: E402
from workers.browser.spec import ProbeSpec  # noqa: E402

PHASES = ("connect", "tls", "ttfb", "load")


def stand_in(address):
    return None if str(address) == "127.0.0.1" else refused_kind(address)


def collect(samples: dict, result: dict) -> None:
    assert result["error"] is None, result["error"]
    for load in result["loads"]:
        for phase in PHASES:
            samples.setdefault((load["variant"], load["mode"], phase), []).append(load["timings_ms"][phase])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="K of each probe")
    parser.add_argument("--rounds", type=int, default=3, help="direct/guarded probe pairs")
    args = parser.parse_args()
    samples = {"direct": {}, "documents": {}, "proxied": {}}
    with start_probe_site() as site:
        spec = ProbeSpec(host=site.host, https_port=site.https_port, http_port=site.http_port, ip=site.ip,
                         ca_pem=site.ca_pem, runs=args.runs)
        print(f"bench/probe_proxy_cost.py --runs {args.runs} --rounds {args.rounds}; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.2f}")
        with ProbeBrowser(spec.ca_pem, {site.host: site.ip}) as browser:
            run_probe(spec, browser=browser, allow_private=True)  # warm-up: first renderer, disk cache dir

            def guard():
                return AddressGuard(allow_private=False, ip_map=browser.ip_map, refuse=stand_in)

            for _ in range(args.rounds):
                collect(samples["direct"], run_probe(spec, browser=browser, allow_private=True))
                with mock.patch("workers.browser.probe.GuardedProxy", lambda *a, **k: None):  # measurement only
                    collect(samples["documents"], run_probe(spec, browser=browser, guard=guard()))
                collect(samples["proxied"], run_probe(spec, browser=browser, guard=guard()))
    print(f"{'variant mode':14} {'phase':8} {'direct':>8} {'documents':>10} {'proxied':>8} {'proxy':>8}   "
          f"(ms, medians of {args.runs * args.rounds} loads each)")
    for key in sorted(samples["direct"]):
        a, b, c = (statistics.median(samples[name][key]) for name in ("direct", "documents", "proxied"))
        print(f"{key[0] + ' ' + key[1]:14} {key[2]:8} {a:8.1f} {b:10.1f} {c:8.1f} {c - b:+8.1f}")


if __name__ == "__main__":
    main()
