"""The PDF engine (workers/reports/pdf.py): HTML in, PDF bytes out, printed by Debian's Chromium
only once the page says its charts are drawn."""

import time

import pytest

from tests.support.pdf import ink_of_first_page, pdf_pages, pdf_text
from workers.reports.pdf import PdfError, render_pdf

READY_PAGE = """<!DOCTYPE html><html><body style="background:#fff">
<h1 style="color:#b42318">Hello PDF</h1><p id="late"></p>
<script>setTimeout(() => { document.getElementById("late").textContent = "drawn late";
  window.__reportReady = true; }, 300);</script></body></html>"""


def test_it_prints_only_after_the_page_says_it_is_ready(tmp_path, no_chromium_left):
    pdf = render_pdf(READY_PAGE, timeout_s=20)
    assert pdf.startswith(b"%PDF-")
    text = pdf_text(pdf)
    assert "Hello PDF" in text and "drawn late" in text  # printed after the delayed flag, not at load
    assert pdf_pages(pdf) == 1
    non_white, coloured = ink_of_first_page(pdf, tmp_path)
    assert non_white > 100 and coloured > 20


def test_a_page_that_never_gets_ready_fails_with_a_clear_error(no_chromium_left):
    with pytest.raises(PdfError, match="Timeout"):
        render_pdf("<html><body>never ready</body></html>", timeout_s=1.5)


def test_it_reuses_a_launched_browser(no_chromium_left):
    from workers.browser.chromium import ProbeBrowser

    with ProbeBrowser() as browser:
        first = render_pdf(READY_PAGE, browser=browser)
        second = render_pdf(READY_PAGE.replace("Hello", "Again"), browser=browser)
        assert browser.browser.is_connected()
    assert "Hello PDF" in pdf_text(first) and "Again PDF" in pdf_text(second)


HUNGRY_PAGE = """<!DOCTYPE html><html><body><p>growing</p><script>
const kept = [];
function grow() { for (let i = 0; i < 4; i++) { const block = new Uint8Array(32 << 20); block.fill(7); kept.push(block); }
  if (kept.length < 400) setTimeout(grow, 0); else window.__reportReady = true; }
grow();</script></body></html>"""


def test_a_page_that_takes_more_memory_than_the_cap_is_stopped_and_says_so(no_chromium_left):
    """#30 item 12: whatever a report holds (an image or a page built to exhaust the worker), its Chromium
    is killed once its processes pass the cap, and the error says why; no process is left behind."""
    from workers.reports.pdf import render

    started = time.monotonic()
    with pytest.raises(PdfError, match=r"printing needed more than 512 MB of memory"):
        render(HUNGRY_PAGE, timeout_s=60, memory_mb=512)
    assert time.monotonic() - started < 30      # stopped while growing, long before the 60 s print bound


def test_a_normal_report_prints_well_within_the_default_memory_cap(no_chromium_left):
    from django.conf import settings

    from workers.reports.pdf import render

    rendered = render(READY_PAGE, timeout_s=20, memory_mb=settings.REPORT_RENDER_MEMORY_MB)
    assert rendered.pdf.startswith(b"%PDF-")
    assert 20 < rendered.peak_mb < settings.REPORT_RENDER_MEMORY_MB / 2, rendered.peak_mb
