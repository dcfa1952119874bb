"""The latency lab's tests: the probe site too (the browser probe's round trips are checked here)."""

import pytest

from tests.support.probe_site import start_probe_site
from tests.support.tls_servers import require_nginx


@pytest.fixture(scope="module")
def probe_site():
    require_nginx()
    with start_probe_site() as site:
        yield site
