"""#28 in the browser: a site whose chain has a 1024-bit RSA intermediate under the organization's own root.
Alice audits it from the site page; the report grades it as browsers see it (not T), names the weak
intermediate with its key size, tells her what to ask the CA for, and the client table shows curl
refusing the chain as the real curl does."""

import datetime
import re

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from playwright.sync_api import expect

from tests.e2e.test_audit_flow import AUDIT_TIMEOUT_MS, log_in
from tests.support import pki
from tests.support.sites import added_site

pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def weak_chain_port(tls_lab, tmp_path_factory):
    """A Go crypto/tls server sending a leaf and a 1024-bit intermediate issued by the lab's root."""
    from tests.support.gotls import GoTlsServers, build_server

    lab = tls_lab.pki
    far = pki.now() + datetime.timedelta(days=3650)
    weak_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    weak = pki.build_ca("Weak Issuing CA", weak_key, lab.root.subject, lab.root_key, path_length=0, not_after=far)
    leaf_key = pki.make_key("rsa2048")
    leaf = pki.build_leaf(leaf_key, ("localhost",), ("127.0.0.1",), pki.now() - datetime.timedelta(days=1),
                          pki.now() + datetime.timedelta(days=90), weak, weak_key, None)
    folder = tmp_path_factory.mktemp("weak-chain")
    chain = pki.write_file(folder / "chain.pem", pki.pem_of_cert(leaf) + pki.pem_of_cert(weak))
    key = pki.write_file(folder / "leaf.key", pki.pem_of_key(leaf_key), mode=0o600)
    servers = GoTlsServers(build_server(), chain, key)
    yield servers()
    servers.stop()


def test_a_weak_intermediate_is_named_and_trusted_as_browsers_judge_it(page, start_audit_worker, alice, lab_org,
                                                                        weak_chain_port, screenshot_dir):
    site = added_site(organization=lab_org, hostname="localhost", pinned_ip="127.0.0.1",
                               https_port=weak_chain_port, name="Old intranet", created_by=alice)
    start_audit_worker()
    log_in(page, alice)
    page.goto(site.get_absolute_url())
    page.get_by_test_id("audit-now").click()
    expect(page).to_have_url(re.compile(rf"/o/{lab_org.slug}/sites/{site.pk}/audits/\d+/$"))

    # The chain is trusted as browsers judge it: no T, no trust issue
    grade = page.get_by_test_id("audit-grade")
    expect(grade).not_to_have_text("", timeout=AUDIT_TIMEOUT_MS)
    expect(page.locator("#audit-body")).to_have_attribute("data-testid", "audit-done", timeout=AUDIT_TIMEOUT_MS)
    assert grade.inner_text() not in ("T", "M", "F")
    expect(page.get_by_test_id("certificates")).to_contain_text("CN=Weak Issuing CA")
    expect(page.get_by_test_id("certificates")).to_contain_text("RSA 1024")

    # The weak intermediate is a finding of its own, with its key size, and the fix names it
    findings = page.get_by_test_id("findings")
    weak = findings.locator("tr", has=page.get_by_text("Weak key in the certificate chain", exact=True))
    expect(weak).to_have_count(1)
    expect(weak).to_contain_text("CN=Weak Issuing CA,O=TLS Audit test lab has a 1024-bit RSA key")
    expect(weak).to_contain_text("browsers accept the chain; OpenSSL clients at security level 2 refuse it")
    expect(page.get_by_test_id("recommendations")).to_contain_text("its intermediate CN=Weak Issuing CA")
    trusted = findings.locator("tr", has=page.get_by_text("Certificate trusted", exact=True))
    expect(trusted).to_contain_text("as browsers judge it")
    weak.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "audit-weak-intermediate.png")
