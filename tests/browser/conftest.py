"""Browser-probe fixtures: the local probe site (nginx, test CA) and one shared probe browser.

Chromium processes are counted by tests/support/chromium_count.py.
"""

import os

import pytest

from tests.support.probe_site import HOST, INTERNAL_HOST, start_probe_site
from tests.support.tls_servers import require_nginx

# Playwright's sync API runs an event loop in the test thread; Django would refuse ORM calls there.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
PINS = {HOST: "127.0.0.1", INTERNAL_HOST: "127.0.0.2"}


@pytest.fixture(scope="session")
def probe_site():
    require_nginx()
    with start_probe_site() as site:
        yield site


@pytest.fixture(scope="package")
def probe_browser(probe_site):
    """One Chromium trusting the site's CA, with the site and the 'internal' host pinned (like a worker's).
    Package-scoped: a started sync Playwright keeps an asyncio loop running in this thread, which
    later tests that run their own loop here (the load engine) must not inherit."""
    from workers.browser.chromium import ProbeBrowser

    with ProbeBrowser(probe_site.ca_pem, PINS) as browser:
        yield browser


@pytest.fixture
def site_spec(probe_site):
    """ProbeSpec keyword arguments for the probe site's front page."""
    return {"host": probe_site.host, "https_port": probe_site.https_port, "http_port": probe_site.http_port,
            "ip": probe_site.ip, "ca_pem": probe_site.ca_pem}
