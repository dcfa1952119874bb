"""One proof per host, for all its ports (issue #17 item 6), and only inside the organization that made it.

Proving example.com once (the file or the DNS record) covers example.com:8443 in the same organization.
What must not follow: another organization's site on the same host, a site pinned to another address,
or load to an address that never served the file (the proof is address-bound, see
test_ownership_attacks.py). Real HTTP servers and a real DNS server on 127.0.0.0/8.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.hostile import closed_port
from tests.support.loadtests import http_server
from tests.support.sites import added_site
from tlsaudit.loadtests import checks, services
from tlsaudit.loadtests.verification import address_unproven_reason, check_now, host_proof, verification_for
from tlsaudit.sites.models import Site

pytestmark = pytest.mark.django_db
LOAD = {"requests": 2, "concurrency": 1}


def org_named(name):
    from tlsaudit.orgs.models import Organization

    return Organization.objects.create(name=name)


def site_on(org, https_port, http_port=1, hostname="localhost", pinned_ip="127.0.0.1"):
    return added_site(organization=org, hostname=hostname, https_port=https_port, http_port=http_port,
                               pinned_ip=pinned_ip)


def prove_by_file(site):
    """The owner serves the site's file on its HTTP port and presses "Check now"."""
    verification = verification_for(site)
    with http_server({verification.file_path: (200, {}, verification.file_content)}) as port:
        Site.objects.filter(pk=site.pk).update(http_port=port)
        site.refresh_from_db()
        assert check_now(site, "http").is_verified
    return site


def test_proving_a_host_on_one_port_covers_its_other_ports_in_the_organization():
    org = org_named("Agency A")
    main = site_on(org, https_port=closed_port())
    other_port = site_on(org, https_port=closed_port() + 1)
    with pytest.raises(checks.RunRefused):
        services.queue_run(other_port, "load", LOAD)      # before: not verified

    prove_by_file(main)

    proof = host_proof(other_port)
    assert proof.is_verified and proof.site_id == main.pk
    assert checks.unverified_reason(other_port) is None
    assert services.queue_run(other_port, "load", LOAD).status == "queued"
    assert not verification_for(other_port).is_verified   # its own row was not touched: the host's proof covers it


def test_another_organization_on_the_same_host_does_not_share_the_proof():
    """Charlie adds the host Alice proved, on the same pinned IP: he must prove it himself, with his own secret."""
    alice_org, charlie_org = org_named("Agency A"), org_named("Agency B")
    prove_by_file(site_on(alice_org, https_port=closed_port()))
    charlies = site_on(charlie_org, https_port=closed_port() + 1)

    assert not host_proof(charlies).is_verified
    with pytest.raises(checks.RunRefused) as refused:
        services.queue_run(charlies, "load", LOAD)
    assert refused.value.code == "unverified"
    assert host_proof(charlies).site_id == charlies.pk     # his own file to serve, with his own secret


def test_a_site_pinned_elsewhere_or_under_another_name_is_not_covered():
    org = org_named("Agency A")
    prove_by_file(site_on(org, https_port=closed_port()))
    elsewhere = site_on(org, https_port=closed_port() + 1, pinned_ip="127.0.0.2")
    unpinned = site_on(org, https_port=closed_port() + 2, pinned_ip=None)
    other_name = site_on(org, https_port=closed_port() + 3, hostname="shop.localhost")
    for site in (elsewhere, unpinned, other_name):
        assert not host_proof(site).is_verified, site
        assert checks.unverified_reason(site) is not None


def test_a_withdrawn_proof_withdraws_the_cover():
    """The proving site is repointed: its proof no longer holds, so it covers no sibling either."""
    org = org_named("Agency A")
    main = prove_by_file(site_on(org, https_port=closed_port()))
    sibling = site_on(org, https_port=closed_port() + 1)
    assert host_proof(sibling).is_verified
    main.pinned_ip = "127.0.0.9"
    main.save()
    assert not host_proof(sibling).is_verified


def test_a_sibling_covered_by_a_dns_proof_still_sends_load_only_where_the_file_is_served(settings):
    """DNS proves the name; the address the load would go to must have served the file, for every port."""
    from tests import hostile

    org = org_named("Agency A")
    with hostile.dns_server({"shop.example.com": ["127.0.0.1"]}) as dns:
        settings.DNS_RESOLVER = dns.address
        port = hostile.twin_port("127.0.0.2", "127.0.0.1")
        main = site_on(org, https_port=closed_port(), http_port=port, hostname="shop.example.com", pinned_ip=None)
        sibling = site_on(org, https_port=closed_port() + 1, hostname="shop.example.com", pinned_ip=None)
        proof = verification_for(main)
        proof.record_pass("dns", timezone.now())       # as check_now records a TXT pass
        proof.save()
        assert host_proof(sibling).site_id == main.pk
        with hostile.recording_http("127.0.0.2", port) as (_, victim):
            assert "did not serve the verification file" in address_unproven_reason(sibling, "127.0.0.2")
        assert verification_for(main).proved_ips == []
        with http_server({proof.file_path: (200, {}, proof.file_content)}, port=port):
            assert address_unproven_reason(sibling, "127.0.0.1") is None
        assert verification_for(main).proved_ips == ["127.0.0.1"]   # remembered on the host's proof


def test_the_pages_of_a_covered_port_say_which_proof_covers_it(login, alice, org_a):
    main = prove_by_file(site_on(org_a, https_port=closed_port()))
    sibling = site_on(org_a, https_port=closed_port() + 1)
    page = login(alice).get(reverse("loadtests:verification", args=[org_a.slug, sibling.pk])).content.decode()
    assert "✓ Verified by HTTP file" in page and f"for {main.display_origin}" in page
    assert "one proof covers every port of localhost" in page
    # "Check now" on the covered port re-checks the host's proof rather than asking for a second file.
    with http_server({}, port=main.http_port):           # the file is gone from the same server
        login(alice).post(reverse("loadtests:verification_check", args=[org_a.slug, sibling.pk]))
    assert not verification_for(main).is_verified and not host_proof(sibling).is_verified
