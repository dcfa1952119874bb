"""PDF reports of a site or an organization's portfolio.

Decision: the PDF is the report page printed by the same headless Debian Chromium the
browser probes use (workers/reports/pdf.py, Playwright page.pdf), not WeasyPrint: the charts are
the dashboard's Chart.js charts drawn for real, with no second chart renderer to keep in step.
The HTML is self-contained (print CSS, Chart.js and the logo inlined), so printing needs no
server and no network; inline <script> is fine there because the page is never served under the
app's CSP. The render task launches its own short-lived Chromium (see workers/tasks/reports.py).
"""
