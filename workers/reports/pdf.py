"""HTML -> PDF with the same Debian Chromium the browser probes use (workers/browser/chromium.py).

The report page draws its charts with Chart.js and then sets `window.__reportReady = true`; we
print only after that flag, so every chart is on paper. The HTML is self-contained (CSS, Chart.js
and images inlined): the page needs no network, so no request ever leaves the browser.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from workers.browser.chromium import ProbeBrowser

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


def render_pdf(html: str, *, base_url: str | None = None, timeout_s: float = 30, browser=None,
               footer: str = "") -> bytes:
    """The PDF of `html` (A4, backgrounds printed). `browser` is a launched ProbeBrowser to reuse;
    without one, a short-lived one is launched and closed (with every process it started)."""
    return render(html, base_url=base_url, timeout_s=timeout_s, browser=browser, footer=footer).pdf


def render(html: str, *, base_url=None, timeout_s: float = 30, browser=None, footer: str = "") -> Rendered:
    started = time.monotonic()
    if browser is None:
        with ProbeBrowser() as own:
            pdf = print_page(own, html, base_url, timeout_s, footer)
    else:
        pdf = print_page(browser, html, base_url, timeout_s, footer)
    return Rendered(pdf, round(time.monotonic() - started, 3))


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
