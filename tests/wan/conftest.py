"""The latency lab's tests: the probe site too (the browser probe's round trips are checked here)."""

import pytest

from tests.support.probe_site import start_probe_site
from tests.support.sites import added_site
from tests.support.tls_servers import require_nginx


@pytest.fixture(scope="module")
def probe_site():
    require_nginx()
    with start_probe_site() as site:
        yield site


@pytest.fixture
def lab_site(org_a, tls_lab):
    """localhost on the TLS lab's no-resumption server: the site whose stored runs the pages render."""

    name = "load_no_resumption"
    return added_site(organization=org_a, hostname="localhost", https_port=tls_lab.port(name),
                               http_port=tls_lab.http_port(name), pinned_ip="127.0.0.1", name="Lab")
