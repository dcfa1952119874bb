"""HTML -> PDF with the same Debian Chromium the browser probes use (workers/browser/chromium.py).

The report page draws its charts with Chart.js and then sets `window.__reportReady = true`; we
print only after that flag, so every chart is on paper. The HTML is self-contained (CSS, Chart.js
and images inlined): the page needs no network, so no request ever leaves the browser.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass

from workers.browser.chromium import ProbeBrowser, marked_pids

log = logging.getLogger(__name__)
READY = "window.__reportReady === true"
MARGIN = {"top": "14mm", "bottom": "16mm", "left": "12mm", "right": "12mm"}
FOOTER = ('<div style="font-size:8px;color:#666;width:100%;padding:0 12mm;display:flex;justify-content:space-between">'
          '<span>{label}</span><span><span class="pageNumber"></span> / <span class="totalPages"></span></span></div>')


class PdfError(Exception):
    """The page could not be printed: Chromium failed, or the charts never reported ready."""


@dataclass(frozen=True)
class Rendered:
    pdf: bytes
    seconds: float
    peak_mb: float = 0.0    # the browser's summed proportional set size, sampled while it printed (0: not watched)


def render_pdf(html: str, *, base_url: str | None = None, timeout_s: float = 30, browser=None,
               footer: str = "") -> bytes:
    """The PDF of `html` (A4, backgrounds printed). `browser` is a launched ProbeBrowser to reuse;
    without one, a short-lived one is launched and closed (with every process it started)."""
    return render(html, base_url=base_url, timeout_s=timeout_s, browser=browser, footer=footer).pdf


def render(html: str, *, base_url=None, timeout_s: float = 30, browser=None, footer: str = "",
           memory_mb: int | None = None) -> Rendered:
    """`memory_mb`: the most the browser's processes may use together while printing; past it they are
    killed and PdfError says so (a short-lived browser only: a shared one would die for another's page)."""
    started = time.monotonic()
    if browser is None:
        with ProbeBrowser() as own, MemoryGuard(own.token, memory_mb) as guard:
            pdf = guarded_print(guard, own, html, base_url, timeout_s, footer)
        return Rendered(pdf, round(time.monotonic() - started, 3), round(guard.peak_mb, 1))
    pdf = print_page(browser, html, base_url, timeout_s, footer)
    return Rendered(pdf, round(time.monotonic() - started, 3))


def guarded_print(guard: MemoryGuard, browser: ProbeBrowser, html: str, base_url, timeout_s: float,
                  footer: str) -> bytes:
    from playwright.sync_api import Error

    try:
        return print_page(browser, html, base_url, timeout_s, footer)
    except (PdfError, Error):   # Error: closing a context whose browser the guard killed can raise too
        if guard.tripped:
            raise PdfError(f"printing needed more than {guard.cap_mb} MB of memory (the report holds a page or "
                           "image too large to print), so it was stopped") from None
        raise


class MemoryGuard:
    """While a page prints, samples the summed proportional set size of the browser's processes (PSS: a
    page shared by processes counts once in total) every `interval_s`; past `cap_mb` it kills them all,
    so the print fails at once instead of taking the worker's memory. cap_mb None: measures only."""

    def __init__(self, token: str, cap_mb: int | None, interval_s: float = 0.1):
        self.token, self.cap_mb, self.interval_s = token, cap_mb, interval_s
        self.peak_mb, self.tripped = 0.0, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="pdf-memory-guard", daemon=True)

    def __enter__(self) -> MemoryGuard:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if self._over_cap():
                    return
            except Exception:  # noqa: BLE001 — a failed sample is retried; the watch must not end silently
                log.exception("PDF memory guard: a sample failed")

    def _over_cap(self) -> bool:
        pids = marked_pids(self.token)
        used = sum(map(pss_mb, pids))
        self.peak_mb = max(self.peak_mb, used)
        if self.cap_mb is None or used <= self.cap_mb:
            return False
        self.tripped = True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return True


def pss_mb(pid: int) -> float:
    """A process's proportional set size in MB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def print_page(browser: ProbeBrowser, html: str, base_url, timeout_s: float, footer: str) -> bytes:
    """1. a fresh context (no state shared with probes), 2. load the HTML (at `base_url` when
    given, so relative URLs resolve), 3. wait for the charts, 4. print with print CSS."""
    from playwright.sync_api import Error

    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(timeout_s * 1000)
        try:
            if base_url:
                page.route(base_url, lambda route: route.fulfill(body=html, content_type="text/html; charset=utf-8"))
                page.goto(base_url, wait_until="load")
            else:
                page.set_content(html, wait_until="load")
            page.wait_for_function(READY, timeout=timeout_s * 1000)
            page.emulate_media(media="print")
            return page.pdf(format="A4", print_background=True, margin=MARGIN, display_header_footer=bool(footer),
                            header_template="<span></span>",
                            footer_template=FOOTER.format(label=escape(footer)) if footer else "<span></span>")
        except Error as exc:
            raise PdfError(first_line(str(exc))) from exc
    finally:
        context.close()


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def first_line(text: str) -> str:
    return (text.strip().splitlines() or ["Chromium failed"])[0][:300]
