"""Proving control of a site: the HTTP file against a local HTTP server, the DNS TXT record against
a local DNS server (real sockets and packets), the page and its "Check now" button."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.hostile import closed_port
from tests.support.loadtests import dns_server, http_server
from tests.support.sites import added_site
from tlsaudit.loadtests import checks
from tlsaudit.loadtests.verification import check_now, verification_for
from tlsaudit.sites.models import Site

pytestmark = pytest.mark.django_db


def local_site(org, http_port, https_port=None, hostname="localhost", pinned_ip="127.0.0.1"):
    return added_site(organization=org, hostname=hostname, http_port=http_port,
                               https_port=https_port or closed_port(), pinned_ip=pinned_ip)


def file_routes(site, body: bytes, status=200, headers=None):
    return {verification_for(site).file_path: (status, headers or {"Content-Type": "text/plain"}, body)}


def test_it_verifies_a_site_serving_the_verification_file(org_a):
    site = local_site(org_a, http_port=1)
    verification = verification_for(site)
    with http_server(file_routes(site, f"{verification.file_content}\n".encode())) as port:
        site.http_port = port
        site.save()
        verification = check_now(site, "http")
    assert verification.is_verified and verification.method == "http"
    assert verification.last_error == "" and verification.last_checked_at is not None
    # The file is named by the public id; the secret is only in its content.
    assert verification.file_name == f"tlsaudit-{verification.public_id}.txt" and len(verification.public_id) == 16
    assert verification.file_content == f"tlsaudit-verification={verification.secret}" and len(verification.secret) == 32
    assert verification.secret not in verification.file_path


def test_the_id_and_secret_are_stable_per_site_and_differ_between_sites(org_a, org_b):
    site = local_site(org_a, http_port=1)
    again = verification_for(Site.objects.get(pk=site.pk))
    assert (verification_for(site).public_id, verification_for(site).secret) == (again.public_id, again.secret)
    other = verification_for(local_site(org_b, http_port=1))
    assert other.public_id != again.public_id and other.secret != again.secret


@pytest.mark.parametrize("status, body, headers, message", [
    (200, b"somebody-else's-token", {}, "line 1 is not a verification line"),
    (404, b"not found", {}, "answered HTTP 404"),
    (200, b"x" * 10_000, {}, "must be at most 4096 bytes"),
    (302, b"", {"Location": "http://elsewhere.example/.well-known/x.txt"}, "redirects to http://elsewhere.example"),
])
def test_it_refuses_a_wrong_file_and_says_why(org_a, settings, status, body, headers, message):
    site = local_site(org_a, http_port=1)
    with http_server(file_routes(site, body, status, headers)) as port, dns_server({}) as (dns_port, _):
        site.http_port = port
        site.save()
        settings.DNS_RESOLVER = ("127.0.0.1", dns_port)
        verification = check_now(site)
    assert not verification.is_verified
    assert message in verification.last_error
    # HTTPS was tried too (nothing listens on its port), and DNS, each with its own reason.
    assert "connection refused" in verification.last_error
    assert "DNS: localhost is pinned to 127.0.0.1" in verification.last_error


def test_it_follows_a_redirect_that_stays_on_the_site(org_a):
    site = local_site(org_a, http_port=1)
    verification = verification_for(site)
    moved = "/moved/token.txt"
    routes = {verification.file_path: (301, {"Location": moved}, b""),
              moved: (200, {}, verification.file_content.encode())}
    with http_server(routes) as port:
        site.http_port = port
        site.save()
        assert check_now(site, "http").is_verified


def test_a_failed_recheck_withdraws_the_verification(org_a):
    site = local_site(org_a, http_port=1)
    with http_server(file_routes(site, verification_for(site).file_content.encode())) as port:
        site.http_port = port
        site.save()
        assert check_now(site, "http").is_verified
    verification = check_now(site, "http")   # the server is gone
    assert not verification.is_verified and "connection refused" in verification.last_error


def test_it_verifies_a_dns_txt_record(org_a, settings):
    site = local_site(org_a, http_port=closed_port(), hostname="shop.example.com", pinned_ip=None)
    verification = verification_for(site)
    records = {"_tlsaudit.shop.example.com": ["v=spf1 -all", verification.txt_value]}
    with dns_server(records) as (port, queries):
        settings.DNS_RESOLVER = ("127.0.0.1", port)
        verification = check_now(site, "dns")
    assert verification.is_verified and verification.method == "dns"
    assert queries == ["_tlsaudit.shop.example.com"]


@pytest.mark.parametrize("records, message", [
    ({}, "_tlsaudit.shop.example.com does not exist"),
    ({"_tlsaudit.shop.example.com": []}, "has no TXT record"),
    ({"_tlsaudit.shop.example.com": ["tlsaudit-verification=wrong"]},
     "its TXT records ('tlsaudit-verification=wrong') do not include one that is exactly tlsaudit-verification="),
])
def test_it_refuses_a_missing_or_wrong_txt_record(org_a, settings, records, message):
    site = local_site(org_a, http_port=closed_port(), hostname="shop.example.com", pinned_ip=None)
    with dns_server(records) as (port, _):
        settings.DNS_RESOLVER = ("127.0.0.1", port)
        verification = check_now(site, "dns")
    assert not verification.is_verified
    assert message in verification.last_error


def test_a_stale_verification_is_rechecked_before_a_run(org_a, settings):
    site = local_site(org_a, http_port=closed_port(), hostname="shop.example.com", pinned_ip=None)
    verification = verification_for(site)
    long_ago = timezone.now() - timedelta(days=settings.VERIFICATION_MAX_AGE_DAYS + 1)
    verification.record_pass("dns", long_ago)
    verification.save()
    with dns_server({}) as (port, queries):   # the record was removed since
        settings.DNS_RESOLVER = ("127.0.0.1", port)
        with pytest.raises(checks.RunRefused) as refused:
            checks.ensure_verified(site)
    assert refused.value.code == "unverified" and "expired and the re-check failed" in refused.value.message
    assert queries == ["_tlsaudit.shop.example.com"]
    assert not verification_for(site).is_verified


def test_the_page_explains_both_methods_and_check_now_updates_the_state(login, alice, org_a):
    site = local_site(org_a, http_port=1, pinned_ip=None)
    verification = verification_for(site)
    client = login(alice)
    page = client.get(reverse("loadtests:verification", args=[org_a.slug, site.pk])).content.decode()
    assert verification.file_path in page and verification.file_content in page
    assert "_tlsaudit.localhost" in page and verification.txt_value in page
    assert "must hold nothing but lines like it" in page and "exactly" in page
    assert 'data-testid="check-now"' in page and "Not verified" in page
    with http_server(file_routes(site, verification.file_content.encode())) as port:
        site.http_port = port
        site.save()
        response = client.post(reverse("loadtests:verification_check", args=[org_a.slug, site.pk]),
                               {"method": "http"}, HTTP_HX_REQUEST="true")
    partial = response.content.decode()
    assert response.status_code == 200 and "Verified by HTTP file" in partial
    assert "<html" not in partial  # only the state card, swapped in by htmx


def test_a_pinned_site_is_told_to_serve_the_file(login, alice, org_a):
    site = local_site(org_a, http_port=1, pinned_ip="127.0.0.1")
    page = login(alice).get(reverse("loadtests:verification", args=[org_a.slug, site.pk])).content.decode()
    assert 'data-testid="verification-dns-pinned"' in page and "pinned to 127.0.0.1" in page
    assert 'data-testid="verification-txt-value"' not in page


def test_check_now_without_htmx_redirects_with_the_reason(login, alice, org_a):
    site = local_site(org_a, http_port=closed_port())
    client = login(alice)
    response = client.post(reverse("loadtests:verification_check", args=[org_a.slug, site.pk]), {"method": "http"},
                           follow=True)
    assert "Not verified yet" in response.content.decode() and "connection refused" in response.content.decode()


def test_the_verification_page_does_not_link_to_itself(login, alice, org_a):
    """#30 item 11: "Verify lab.test" on the page that verifies it linked to that page."""
    site = local_site(org_a, http_port=closed_port())
    client = login(alice)
    url = reverse("loadtests:verification", args=[org_a.slug, site.pk])
    assert f'href="{url}"' not in client.get(url).content.decode()
    overview = client.get(reverse("loadtests:overview", args=[org_a.slug, site.pk])).content.decode()
    assert f'href="{url}"' in overview
