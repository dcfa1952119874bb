"""Redirects and fetched URLs that point inside: the audit's HTTP headers fetch (HSTS), the AIA
certificate download and the ownership-proof fetch never follow a site to a private address."""

from __future__ import annotations

import pytest

from tests import hostile
from tests.support.sites import added_site
from tests.support.ssrf import route_handler
from workers.net.errors import TargetError

SITE = "www.hostile.test"


@pytest.mark.parametrize("elsewhere", ["https://loopback.hostile.test:{port}/", "https://127.0.0.2:{port}/",
                                       "https://2130706434:{port}/", "https://[::ffff:127.0.0.2]:{port}/"])
def test_the_headers_fetch_follows_a_redirect_on_the_site_but_never_one_that_leaves_it(tricky_dns, tls_lab,
                                                                                     elsewhere):
    """fetch_hsts_header connects to the site's checked address only: a redirect to another host (a
    private name, a private address in any spelling) ends the fetch; that host is not even looked up."""
    from workers.tls.probes import Endpoint, fetch_hsts_header

    port = hostile.twin_port()
    routes = {"/": (301, {"Location": f"https://{SITE}:{port}/next"}, b""),
              "/next": (302, {"Location": elsewhere.format(port=port)}, b"")}
    context = hostile.server_context(hostile.issue_identity(tls_lab.pki, "redirects", names=(SITE,)))
    with hostile.trap("127.0.0.2", port) as (_, trap), \
            hostile.serve_tls(context, route_handler(routes), port=port):
        answer = fetch_hsts_header(Endpoint(host=SITE, ip="127.0.0.1", port=port, timeout=3))

    assert (answer.status, answer.path, answer.hsts_header) == (302, "/next", None)
    assert trap.accepted == 0
    assert tricky_dns.queries == []


def test_the_aia_download_refuses_a_private_url(production, tricky_dns):
    from workers.tls.aia import fetch_certificate

    with hostile.trap("127.0.0.2") as (port, trap):
        for url in (f"http://loopback.hostile.test:{port}/ca.der", f"http://127.0.0.2:{port}/ca.der",
                    f"http://2130706434:{port}/ca.der"):
            with pytest.raises(TargetError) as refused:
                fetch_certificate(url, allow_private=False, timeout=3, resolver=tricky_dns.address)
            assert refused.value.code == "private_target" and "127.0.0.2" in refused.value.message

    assert trap.accepted == 0


@pytest.mark.django_db
def test_the_ownership_proof_fetch_refuses_a_site_that_resolves_inside(production, tricky_dns, org):
    from tlsaudit.loadtests.verification import check_now

    with hostile.trap("127.0.0.2") as (port, trap):
        site = added_site(organization=org, hostname="loopback.hostile.test", http_port=port,
                                   https_port=port)
        verification = check_now(site, "http")

    assert not verification.is_verified
    assert "loopback.hostile.test resolves to 127.0.0.2, which is a loopback address" in verification.last_error
    assert trap.accepted == 0
