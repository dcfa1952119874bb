"""#28 item 6: an 826-day certificate from a private root. The 398-day limit binds publicly trusted CAs;
Chromium, trusting the private root, loads the site, and the report no longer calls it a high finding
("issued after 2020-09-01, so Apple and Chrome reject it")."""

import subprocess
from datetime import datetime, timedelta, timezone

import pki
import pytest

from tests.tls.test_real_clients import CHROMIUM, browser_env, trusting_nss_db
from tlsaudit.domain.findings import derive_findings
from workers.tls.engine import run_scan

pytestmark = [pytest.mark.browser]
DAYS = 826


@pytest.fixture(scope="module")
def long_lived_port(test_pki, tmp_path_factory):
    from tests.support.gotls import GoTlsServers, build_server

    folder = tmp_path_factory.mktemp("long-lived")
    leaf = pki.issue_leaf(test_pki.intermediate, days=DAYS,
                          not_before=datetime.now(timezone.utc) - timedelta(days=1))
    servers = GoTlsServers(build_server(), pki.write_pem(folder / "chain.pem", leaf, test_pki.intermediate),
                           pki.write_key(folder / "leaf.key", leaf))
    yield servers()
    servers.stop()


def chromium_loads(url: str, ca_file, home) -> str:
    trusting_nss_db(home / ".pki" / "nssdb", ca_file)
    done = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", f"--user-data-dir={home / 'profile'}",
                           "--virtual-time-budget=10000", "--dump-dom", url],
                          env=browser_env(home), capture_output=True, text=True, timeout=120)
    return done.stdout


def test_an_826_day_leaf_of_a_private_root_loads_in_chromium_and_is_no_high_finding(long_lived_port, test_pki,
                                                                                       tmp_path):
    assert "tls audit go test server" in chromium_loads(f"https://localhost:{long_lived_port}/",
                                                        test_pki.root_file, tmp_path / "home")
    outcome = run_scan("localhost", long_lived_port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    lifetime = {f.id: f for f in derive_findings(outcome.facts)}["cert.lifetime"]
    assert (lifetime.status, lifetime.severity) == ("info", "info")
    assert lifetime.evidence.startswith(f"valid for {DAYS} days")
    assert "this chain ends at a private root, which browsers exempt" in lifetime.evidence
