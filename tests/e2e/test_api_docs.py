"""The API reference pages work in a real Chromium under the app's CSP: Swagger UI loads
from our own static files (no CDN: this machine has no internet) and list the operations."""

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_swagger_ui_lists_the_operations_without_csp_violations(page):
    # The `page` fixture fails the test on any CSP violation or JavaScript error.
    page.goto("/api/v1/docs/")
    page.wait_for_selector(".opblock-summary-path", timeout=30000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/sites/" in paths and "/api/v1/audits/{id}/" in paths

