"""The PDF print page carries its own Content-Security-Policy (a <meta>): only our two inline scripts
run (by hash), and the worker's Chromium fetches nothing. Markup that slipped into a report (a bug in
escaping, a hostile site name) can then neither run code nor reach an internal address."""

import re
import threading
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.security.htmlcheck import directives
from tests.support.audits import done_audit
from tests.support.pdf import pdf_text
from tlsaudit.reports import services
from workers.reports.pdf import render_pdf

pytestmark = pytest.mark.django_db


@pytest.fixture
def listener():
    """An HTTP server on 127.0.0.1 that records every request path: it must stay empty."""
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", hits
    server.shutdown()
    server.server_close()


def report_html(site):
    done_audit(site)
    return services.site_html(site)


def test_the_print_page_allows_exactly_its_two_scripts_and_no_network(site_a):
    html = report_html(site_a)
    content = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    policy = directives(unescape(content))  # the template escapes the quotes; the browser reads them back

    assert policy["default-src"] == ["'none'"] and policy["connect-src"] == ["'none'"]
    assert policy["img-src"] == ["data:"] and policy["base-uri"] == ["'none'"]
    assert len(policy["script-src"]) == 2 and all(h.startswith("'sha256-") for h in policy["script-src"])
    assert "'unsafe-inline'" not in policy["script-src"]


def test_charts_still_draw_and_injected_markup_neither_runs_nor_fetches(site_a, listener, no_chromium_left):
    url, hits = listener
    injected = (f'<img src="{url}/img"><link rel="stylesheet" href="{url}/css">'
                f'<script>document.body.append("INLINE SCRIPT RAN"); fetch("{url}/inline-script");</script>'
                f'<script src="{url}/external-script.js"></script><iframe src="{url}/frame"></iframe>'
                '<p>injected paragraph</p>')
    html = report_html(site_a).replace("</body>", injected + "</body>")

    pdf = render_pdf(html, timeout_s=30)  # waits for window.__reportReady: the real charts were drawn

    text = pdf_text(pdf)
    assert pdf.startswith(b"%PDF-") and "injected paragraph" in text
    assert "INLINE SCRIPT RAN" not in text
    assert hits == [], f"the print page fetched {hits}"
