"""Issue #18: the client-simulation table and the post-quantum verdict on the audit page and in the
site report (the PDF's HTML)."""

import pytest
from django.urls import reverse

from tests.support.sites import added_site
from tlsaudit.domain.scanfacts import OK, Check, ClientHandshake, PostQuantum
from tlsaudit.reports.services import site_html

pytestmark = pytest.mark.django_db

SIMULATION = [
    ClientHandshake("chromium", "Chromium 156 (Debian 12)", "TLSv1.3", "TLS_AES_128_GCM_SHA256", "X25519MLKEM768"),
    ClientHandshake("java", "Java 17 (OpenJDK)", error="no protocol version in common"),
    ClientHandshake("ie11_win7", "IE 11 on Windows 7", "TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "secp256r1",
                    recorded=False, modern=False),
]
PQ = PostQuantum(Check(OK), accepted=("X25519MLKEM768",), prefers_pq=True, browser_choice="X25519MLKEM768")


def test_the_audit_page_and_the_site_report_show_the_clients_and_pq(login, alice, org_a, done_audit):
    site = added_site(organization=org_a, hostname="pq.example")
    audit = done_audit(site, client_simulation=SIMULATION, post_quantum=PQ)
    page = login(alice).get(reverse("audits:detail", args=[org_a.slug, site.pk, audit.pk])).content.decode()
    for html in (page, site_html(site)):
        assert 'data-testid="client-simulation"' in html
        assert "Chromium 156 (Debian 12)" in html and "X25519MLKEM768" in html
        assert "fails: no protocol version in common" in html
        # a client that cannot run here is replayed from its published lists, and says so
        assert 'IE 11 on Windows 7 <span class="muted">(from published lists)</span>' in html
        assert "Chromium 156 (Debian 12) <span" not in html
        assert "Post-quantum ready" in html and "prefers X25519MLKEM768 over X25519" in html


def test_an_audit_from_before_the_simulation_says_not_simulated(login, alice, org_a, done_audit):
    site = added_site(organization=org_a, hostname="old.example")
    audit = done_audit(site)
    page = login(alice).get(reverse("audits:detail", args=[org_a.slug, site.pk, audit.pk])).content.decode()
    assert "Not simulated" in page and "Post-quantum" in page and "Not tested" in page
