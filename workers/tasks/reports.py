"""The PDF report task: thin glue between the Report row and the PDF engine (workers/reports).

Named under `workers.tasks.browser.*` so it runs on the `browser` queue, on the workers that
have Chromium. It launches its own short-lived Chromium rather than borrowing BrowserHost's:
that browser is owned by one thread that only runs probe specs, and may be relaunched with an
organization's CA or host pins; a report needs neither, and a launch costs ~0.5 s next to a render.
"""

from __future__ import annotations

import logging

from django.conf import settings

from tlsaudit.reports import services
from tlsaudit.reports.models import Report
from workers.celery import app
from workers.reports.pdf import PdfError, render

log = logging.getLogger(__name__)
RENDER_TIMEOUT_S = 60


@app.task(name="workers.tasks.browser.render_report", acks_late=True, soft_time_limit=180, time_limit=240)
def render_report(report_id: int) -> str:
    """1. load the queued report, 2. claim it atomically, 3. build its HTML from the database,
    4. print it in Chromium, 5. store the PDF on the row (or the error)."""
    report = Report.objects.select_related("organization", "site").filter(pk=report_id).first()
    if report is None or report.status != Report.Status.QUEUED or not services.claim(report_id):
        return "skipped"  # deleted with its site, or another delivery already rendered it
    try:
        rendered = render(services.report_html(report), timeout_s=RENDER_TIMEOUT_S, footer=services.footer_of(report),
                          memory_mb=settings.REPORT_RENDER_MEMORY_MB)
    except PdfError as exc:
        services.fail(report, f"The PDF could not be printed: {exc}")
        return "failed"
    except Exception as exc:
        log.exception("report %s crashed", report_id)
        services.fail(report, f"The report stopped unexpectedly ({type(exc).__name__}: {exc}). Please retry.")
        return "failed"
    services.store_pdf(report, rendered.pdf, rendered.seconds)
    return "done"
