"""What removing WebRTC (chromium.NO_WEBRTC_SCRIPT, added to every probe context) costs a probe: the
local probe site's front page over HTTPS (8 requests) in one browser, a fresh context per load pair
(cold load, then warm reload, as a probe does), alternating in each round:
- with: `ProbeBrowser.new_context()`, the probe's own (the init script runs in every new document);
- without: the same context options through Playwright directly, no init script.

    .venv/bin/python bench/probe_webrtc_cost.py [--rounds 15]

Prints medians of: context + page set-up (the init script is one more CDP command there), the cold and
warm load event (Navigation Timing, ms from navigation start), and the script's own run time in a
loaded page (performance.now() around it). Launch flags are the same in both settings (a pref switch
and one disabled feature: nothing runs at launch), so launch time is not compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from tests.support.probe_site import start_probe_site  # noqa: E402
from workers.browser.chromium import NO_WEBRTC_SCRIPT, ProbeBrowser  # noqa: E402
from workers.browser.probe import NAVIGATION_ENTRY  # noqa: E402

SETTINGS = ("with", "without")


def open_tab(browser: ProbeBrowser, setting: str):
    if setting == "with":
        context = browser.new_context()
    else:
        context = browser.browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    return context, context.new_page()


def load_pair(browser: ProbeBrowser, setting: str, url: str, samples: dict) -> None:
    started = time.perf_counter()
    context, page = open_tab(browser, setting)
    samples.setdefault((setting, "set-up"), []).append((time.perf_counter() - started) * 1000)
    try:
        page.goto(url, wait_until="load")
        samples.setdefault((setting, "cold load"), []).append(page.evaluate(NAVIGATION_ENTRY)["loadEventEnd"])
        assert page.evaluate("typeof RTCPeerConnection") == ("undefined" if setting == "with" else "function")
        page.reload(wait_until="load")
        samples.setdefault((setting, "warm load"), []).append(page.evaluate(NAVIGATION_ENTRY)["loadEventEnd"])
        if setting == "without":
            timed = f"() => {{ const t = performance.now(); {NO_WEBRTC_SCRIPT} return performance.now() - t; }}"
            samples.setdefault(("script", "run"), []).append(page.evaluate(timed))
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="load pairs per setting")
    args = parser.parse_args()
    samples: dict = {}
    with start_probe_site() as site:
        url = site.url("https")
        print(f"bench/probe_webrtc_cost.py --rounds {args.rounds}; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.2f}")
        with ProbeBrowser(site.ca_pem, {site.host: site.ip}) as browser:
            load_pair(browser, "without", url, {})  # warm-up: first renderer, disk cache directory
            for round_ in range(args.rounds):
                for setting in SETTINGS if round_ % 2 == 0 else tuple(reversed(SETTINGS)):
                    load_pair(browser, setting, url, samples)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print(f"{'measure':10} {'with':>8} {'without':>8} {'cost':>8}   (ms, medians of {args.rounds})")
    for measure in ("set-up", "cold load", "warm load"):
        with_, without = (statistics.median(samples[(s, measure)]) for s in SETTINGS)
        print(f"{measure:10} {with_:8.1f} {without:8.1f} {with_ - without:+8.1f}")
    runs = samples[("script", "run")]
    print(f"the script itself, in a loaded page: median {statistics.median(runs):.2f} ms, max {max(runs):.2f} ms")


if __name__ == "__main__":
    main()
