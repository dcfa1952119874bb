"""run_probe(spec) -> dict: real Chromium page loads of one site over HTTPS and HTTP, cold and warm.

1. Guard: check the target (and pin it) unless private targets are allowed; see guard.py. A guarded
   probe's contexts connect only through the guard's SOCKS5 proxy (proxy.py); `refused` lists the
   requests it turned away (a subresource on a private address does not fail the page).
2. Get a browser that trusts `spec.ca_pem` and pins the target (reuse the caller's if it fits).
3. A discarded cold load per variant (warm-up), then round after round (run 0..K-1): open a fresh context per
   variant and load the page in it (cold: empty cache, new connections, new TLS handshake); then
   `page.reload()` in each (warm: conditional requests,
   304s, cache hits). The variant order alternates per run (https first, then http first), so
   neither variant always goes first. With `spec.seconds` the probe is sized by time, as `ab -t`:
   after MIN_ROUNDS rounds, another starts only while it fits in the seconds left (judged by the
   longest round so far), up to K; without it, K rounds.
4. Per load: Navigation Timing Level 2 phases of the main document, CDP network counts (recorder.py).
5. The first load of a variant that fails skips that variant's remaining loads. The probe `error` is
   set when the HTTPS variant failed or no variant loaded; an HTTP-only failure (a site without
   port 80) stays in `variant_errors`. A failed HTTPS variant ends the probe at once: it has failed,
   and a hostile server would only make each further load wait out its timeout.
6. Summary and increase % (tlsaudit.domain.probe_stats).
7. The path's RTT, measured apart (`measure_rtt`: a few plain TCP connects to the address Chromium
   uses), so the page can say how many round trips each phase holds. Chromium's own connect phase
   cannot give it: on a cold navigation Chromium opens the socket a few ms before the request's
   timing origin (seen at 50 ms RTT: the SYN left 3-35 ms before `requestTime`), so its TCP phase
   reads short.

Every load's timeout is a deadline for the whole navigation (Playwright's), so a page or a
subresource that trickles cannot stretch it; `spec.deadline_s` bounds the probe: each load gets at
most what is left of it, and none starts after it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from tlsaudit.domain.probe_stats import increase, increase_pct, summarize
from tlsaudit.domain.round_trips import estimate_rtt_ms
from workers.browser.chromium import ProbeBrowser
from workers.browser.errors import CANCELLED, classify_load_error
from workers.browser.guard import AddressGuard
from workers.browser.proxy import GuardedProxy
from workers.browser.recorder import Recorder
from workers.browser.spec import MIN_ROUNDS, MODES, VARIANTS, ProbeSpec
from workers.net.errors import INVALID_TARGET, TIMEOUT, TargetError

NAVIGATION_ENTRY = """() => new Promise(resolve => {
  const poll = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    if (nav && nav.loadEventEnd > 0) resolve(nav.toJSON()); else setTimeout(poll, 5);
  };
  poll();
})"""


RTT_CONNECTS = 5                 # TCP connects that measure the path's RTT before the loads (measure_rtt)
RTT_CONNECT_TIMEOUT_S = 5.0


def page_url(spec: ProbeSpec, variant: str) -> str:
    port = spec.https_port if variant == "https" else spec.http_port
    default = 443 if variant == "https" else 80
    host = f"[{spec.host}]" if ":" in spec.host else spec.host
    netloc = host if port == default else f"{host}:{port}"
    return f"{variant}://{netloc}{spec.path}"


def check_spec(spec: ProbeSpec) -> None:
    if not spec.host or any(c.isspace() or c in "/?#@" for c in spec.host):
        raise TargetError(INVALID_TARGET, f"{spec.host!r} is not a hostname.")
    for port in (spec.https_port, spec.http_port):
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise TargetError(INVALID_TARGET, f"{port!r} is not a TCP port (1-65535).")
    if not spec.path.startswith("/"):
        raise TargetError(INVALID_TARGET, f"The path {spec.path!r} must start with '/'.")
    if not 1 <= spec.runs <= 100:
        raise TargetError(INVALID_TARGET, f"runs must be between 1 and 100, got {spec.runs}.")
    if not 0 < spec.timeout_s <= 300:
        raise TargetError(INVALID_TARGET, f"timeout_s must be between 0 and 300 s, got {spec.timeout_s}.")
    if spec.seconds is not None and not 0 < spec.seconds <= 3600:
        raise TargetError(INVALID_TARGET, f"seconds must be between 0 and 3600, got {spec.seconds}.")
    if spec.deadline_s is not None and not 0 < spec.deadline_s <= 3600:
        raise TargetError(INVALID_TARGET, f"deadline_s must be between 0 and 3600 s, got {spec.deadline_s}.")
    unknown = [v for v in spec.variants if v not in VARIANTS]
    if unknown or not spec.variants:
        raise TargetError(INVALID_TARGET, f"variants must be among {VARIANTS}, got {spec.variants}.")


def run_probe(spec: ProbeSpec, *, browser: ProbeBrowser | None = None, cancel: Callable[[], bool] | None = None,
              on_progress: Callable[[int, int, dict], None] | None = None, allow_private: bool = False,
              guard: AddressGuard | None = None, resolver: tuple[str, int] | None = None) -> dict:
    """Probe one site; never raises for a site's failure (see `error`). `browser` is reused when it fits,
    relaunched otherwise (`ProbeBrowser.ensure`); without one, a browser is launched and closed here.
    `on_progress(done, total, load)` after each load; `cancel()` is asked before each load.
    `guard` replaces the default AddressGuard(allow_private) (a custom address policy); `resolver`
    (ip, port) is the DNS server the guard asks (None: the system's)."""
    started = time.monotonic()
    result = {"spec": spec.to_dict(), "loads": [], "summary": {}, "increase_pct": {"cold": {}, "warm": {}},
              "increase": {"cold": {}, "warm": {}},
              "variant_errors": {}, "refused": [], "browser": {"version": ""}, "duration_s": 0.0, "error": None,
              "rtt": None}
    owned = browser is None
    proxy = None
    try:
        check_spec(spec)
        guard = guard or AddressGuard(allow_private, ip_map=browser.ip_map if browser else None, resolver=resolver)
        pinned = guard.check_target(spec.host, spec.ip)
        ip_map = {spec.host: pinned} if pinned else {}
        guard.ip_map.update(ip_map)
        browser = browser.ensure(spec.ca_pem, ip_map) if browser else ProbeBrowser(spec.ca_pem, ip_map)
        result["browser"]["version"] = browser.version
        proxy = None if guard.allow_private else GuardedProxy(guard, connect_timeout_s=spec.timeout_s)
        result["rtt"] = measure_rtt(guard, spec)
        deadline = started + spec.deadline_s if spec.deadline_s else None
        Session(spec, browser, guard, result, cancel, on_progress, proxy, deadline).run()
    except TargetError as exc:
        result["error"] = exc.to_dict()
    finally:
        if proxy is not None:
            proxy.close()
            result["refused"] = list(proxy.refusals)
        if owned and browser is not None:
            browser.close()
    ok_loads = [load for load in result["loads"] if load["ok"]]
    result["summary"] = summarize(ok_loads)
    result["increase"] = increase(ok_loads)
    result["increase_pct"] = increase_pct(result["summary"], result["increase"])
    if result["error"] is None:
        failed = result["variant_errors"]
        if "https" in failed or not ok_loads:
            result["error"] = failed.get("https") or next(iter(failed.values()), None)
    result["duration_s"] = round(time.monotonic() - started, 3)
    return result


def measure_rtt(guard: AddressGuard, spec: ProbeSpec, count: int = RTT_CONNECTS) -> dict:
    """{"rtt_ms", "samples_ms", "address", "port", "error"}: `count` TCP connects (closed at once) to the
    address the guard gives Chromium for spec.host, on the first variant's port. The first failure
    stops it (at most one connect timeout) and leaves rtt_ms None with the reason; the loads go on
    and report their own errors."""
    port = spec.https_port if spec.variants[0] == "https" else spec.http_port
    outcome = {"rtt_ms": None, "samples_ms": [], "address": None, "port": port, "error": None}
    try:
        address = guard.checked_address(spec.host)
    except TargetError as exc:
        outcome["error"] = exc.message
        return outcome
    outcome["address"] = address
    for _ in range(count):
        started = time.perf_counter()
        try:
            socket.create_connection((address, port), timeout=min(RTT_CONNECT_TIMEOUT_S, spec.timeout_s)).close()
        except OSError as exc:
            outcome["error"] = f"TCP connect to {address}:{port} failed ({type(exc).__name__})"
            break
        outcome["samples_ms"].append(round((time.perf_counter() - started) * 1000, 3))
    outcome["rtt_ms"] = estimate_rtt_ms(outcome["samples_ms"])
    return outcome


class Session:
    """The loads of one probe: fresh contexts, interleaved variants, per-variant failure."""

    def __init__(self, spec, browser, guard, result, cancel, on_progress, proxy=None, deadline: float | None = None):
        self.spec, self.browser, self.guard, self.result = spec, browser, guard, result
        self.cancel, self.on_progress, self.proxy = cancel, on_progress, proxy
        self.deadline = deadline    # time.monotonic() instant, or None
        self.total = spec.runs * len(spec.variants) * len(MODES)
        self.done = 0

    def run(self) -> None:
        self.warm_up()
        started, longest = time.monotonic(), 0.0
        for run in range(self.spec.runs):
            if not self.round_fits(run, time.monotonic() - started, longest):
                self.result["rounds_stopped_by"] = "seconds"
                break
            round_started = time.monotonic()
            self.result.setdefault("round_starts_s", []).append(round(round_started - started, 3))
            if self.run_round(run) is False:
                break
            longest = max(longest, time.monotonic() - round_started)
        self.result["rounds_s"] = round(time.monotonic() - started, 3)

    def round_fits(self, run: int, elapsed_s: float, longest_s: float) -> bool:
        """Whether round `run` may start: always the first MIN_ROUNDS, then while it fits the time."""
        if self.deadline is not None and run >= MIN_ROUNDS and time.monotonic() + longest_s > self.deadline:
            return False   # a round that cannot end by the deadline is not started: the probe keeps what it has
        if self.spec.seconds is None or run < MIN_ROUNDS:
            return True
        return elapsed_s + longest_s <= self.spec.seconds

    def run_round(self, run: int) -> bool:
        """Round `run`: a fresh context per live variant, its cold load then its warm reload. False when
        the probe has failed (HTTPS failed, or nothing left to load)."""
        order = self.spec.variants if run % 2 == 0 else tuple(reversed(self.spec.variants))
        live = [v for v in order if v not in self.result["variant_errors"]]
        if not live or "https" in self.result["variant_errors"]:
            return False
        tabs = {}
        try:
            for mode in MODES:
                for variant in live:
                    if self.cancel and self.cancel():
                        raise TargetError(CANCELLED, "The probe was cancelled.")
                    if variant in self.result["variant_errors"]:
                        continue
                    if "https" in self.result["variant_errors"]:
                        return False
                    timeout_s = self.time_for_a_load()
                    if mode == "cold":
                        tabs[variant] = Tab(self.browser, self.guard, self.proxy)
                    self.record(tabs[variant].load(self.spec, variant, mode, run, timeout_s))
        finally:
            for tab in tabs.values():
                tab.close()
        return True

    def warm_up(self) -> None:
        """One discarded cold load per variant first: the browser's first navigation to a site pays for
        its own start-up (DNS, the network service, the proxy's first connection) and would land in
        whichever variant ran first. A warm-up that fails is recorded as that variant's failure (its
        remaining loads are skipped, as after any first failure), so a broken site costs no extra wait."""
        for variant in self.spec.variants:
            if self.cancel and self.cancel():
                raise TargetError(CANCELLED, "The probe was cancelled.")
            if "https" in self.result["variant_errors"]:
                return   # the probe has failed: a hostile server would only make the next warm-up wait
            timeout_s = self.time_for_a_load()
            tab = Tab(self.browser, self.guard, self.proxy)
            try:
                load = tab.load(self.spec, variant, "cold", 0, timeout_s)
            finally:
                tab.close()
            if not load["ok"]:
                self.record({**load, "warmup": True})

    def time_for_a_load(self) -> float:
        """The next load's timeout: the spec's, or what is left of the probe's deadline (none left: fail)."""
        if self.deadline is None:
            return self.spec.timeout_s
        left = self.deadline - time.monotonic()
        if left < 0.5:
            raise TargetError(TIMEOUT, f"The probe did not finish within its {self.spec.deadline_s:g} s deadline "
                                       f"({self.done} of {self.total} page loads done): the pages load too slowly.")
        return min(self.spec.timeout_s, left)

    def record(self, load: dict) -> None:
        self.result["loads"].append(load)
        if not load["ok"]:
            self.result["variant_errors"].setdefault(load["variant"], load.pop("_error"))
        load.pop("_error", None)
        self.done += 1
        if self.on_progress:
            self.on_progress(self.done, self.total, load)


class Tab:
    """One browser context + page + CDP session: the cold load, then the warm reload."""

    def __init__(self, browser: ProbeBrowser, guard: AddressGuard, proxy: GuardedProxy | None = None):
        self.guard = guard
        self.proxy = proxy
        self.blocked: str | None = None
        self.context = browser.new_context(proxy=proxy.playwright_proxy if proxy else None)
        self.page = self.context.new_page()
        self.cdp = self.context.new_cdp_session(self.page)
        self.recorder = Recorder()
        self.recorder.attach(self.cdp, self.page)
        self.cdp.send("Network.enable")
        self.cdp.send("Audits.enable")
        if not guard.allow_private:
            # Documents only (every connection goes through the proxy anyway): the guard's reason
            # for a refused navigation or redirect, instead of the proxy's bare SOCKS error.
            self.cdp.on("Fetch.requestPaused", self.on_paused)
            self.cdp.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "resourceType": "Document",
                                                         "requestStage": "Request"}]})

    def on_paused(self, event: dict) -> None:
        reason = self.guard.blocked_reason(event["request"]["url"])
        if reason:
            self.blocked = reason
            self.cdp.send("Fetch.failRequest", {"requestId": event["requestId"], "errorReason": "BlockedByClient"})
        else:
            self.cdp.send("Fetch.continueRequest", {"requestId": event["requestId"]})

    def load(self, spec: ProbeSpec, variant: str, mode: str, run: int, timeout_s: float | None = None) -> dict:
        url = page_url(spec, variant)
        self.recorder.reset()
        self.blocked = None
        timeout_s = spec.timeout_s if timeout_s is None else timeout_s
        timeout_ms = timeout_s * 1000
        try:
            if mode == "cold":
                self.page.goto(url, wait_until="load", timeout=timeout_ms)
            else:
                self.page.reload(wait_until="load", timeout=timeout_ms)
            nav = self.page.evaluate(NAVIGATION_ENTRY)
        except Exception as exc:  # noqa: BLE001 — Playwright's Error/TimeoutError: classified below
            parts = urlsplit(url)
            port = parts.port or (443 if variant == "https" else 80)
            error = classify_load_error(self.unproxied(f"{type(exc).__name__}: {exc}", spec.host, port),
                                        host=spec.host, port=port,
                                        timeout_s=timeout_s, hops=len(self.recorder.redirect_chain()),
                                        blocked=self.blocked)
            return self.failed_load(url, variant, mode, run, error)
        self.recorder.settle(self.page)
        return self.measured_load(url, variant, mode, run, nav)

    def unproxied(self, text: str, host: str, port: int) -> str:
        """Chromium reports any failed proxied connection as a SOCKS error: name the proxy's real outcome."""
        upstream = self.proxy.net_error_for(host, port) if self.proxy else None
        return text.replace("ERR_SOCKS_CONNECTION_FAILED", upstream) if upstream else text

    def measured_load(self, url, variant, mode, run, nav: dict) -> dict:
        recorder = self.recorder
        timings = navigation_phases(nav)
        timings["redirect"] = max(timings["redirect"], recorder.redirect_ms())
        final_url = recorder.redirect_chain()[-1] if recorder.redirect_chain() else self.page.url
        tls = recorder.main_tls()
        return {
            "variant": variant, "mode": mode, "run": run, "ok": True, "error": "",
            "url": url, "final_url": final_url, "redirect_chain": recorder.redirect_chain(),
            "timings_ms": timings,
            "no_connect_phase": no_connect_phase(nav, variant, mode, final_url),
            "protocol": nav.get("nextHopProtocol") or (recorder.main_response or {}).get("protocol", ""),
            "tls": tls, **recorder.counts(), "mixed_content": list(recorder.mixed),
            "waterfall": recorder.waterfall(), "status": nav.get("responseStatus"),
        }

    def failed_load(self, url, variant, mode, run, error: TargetError) -> dict:
        recorder = self.recorder
        return {
            "variant": variant, "mode": mode, "run": run, "ok": False, "error": error.message, "_error": error.to_dict(),
            "url": url, "final_url": "", "redirect_chain": recorder.redirect_chain(), "timings_ms": {},
            "no_connect_phase": False, "protocol": "", "tls": None, **recorder.counts(),
            "mixed_content": list(recorder.mixed), "waterfall": recorder.waterfall(), "status": None,
        }

    def close(self) -> None:
        try:
            self.context.close()
        except Exception:  # noqa: BLE001 — a dead browser is reaped by ProbeBrowser.close
            pass


def navigation_phases(nav: dict) -> dict:
    """Navigation Timing Level 2 phases in ms (see loadgen-notes §6); TLS is 0 on plain HTTP or a reused connection."""
    def span(start: str, end: str) -> float:
        a, b = nav.get(start) or 0.0, nav.get(end) or 0.0
        return round(max(0.0, b - a), 1) if a and b else 0.0

    secure = nav.get("secureConnectionStart") or 0.0
    return {
        "redirect": span("redirectStart", "redirectEnd"),
        "dns": span("domainLookupStart", "domainLookupEnd"),
        "connect": round(max(0.0, (secure or nav.get("connectEnd", 0.0)) - nav.get("connectStart", 0.0)), 1),
        "tls": span("secureConnectionStart", "connectEnd") if secure else 0.0,
        "ttfb": span("requestStart", "responseStart"),
        "download": span("responseStart", "responseEnd"),
        "dom_interactive": round(nav.get("domInteractive", 0.0), 1),
        "dom_content_loaded": round(nav.get("domContentLoadedEventEnd", 0.0), 1),
        "load": round(nav.get("loadEventEnd", 0.0), 1),
    }


def no_connect_phase(nav: dict, variant: str, mode: str, final_url: str) -> bool:
    """Chromium's cold-load artifact: a new HTTPS connection reported with connectStart == connectEnd."""
    if mode != "cold" or not final_url.startswith("https:"):
        return False
    return (nav.get("connectEnd") or 0.0) <= (nav.get("secureConnectionStart") or 0.0)
