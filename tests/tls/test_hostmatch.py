"""Our SAN matcher: browser rules, since sslyze 6 has no hostname-match boolean."""

import pki
import pytest

from tlsaudit.domain.hostmatch import hostname_matches
from workers.tls.certs import leaf_matches

SANS = ("example.com", "*.example.com", "Www.Example.ORG.")


@pytest.mark.parametrize("host,expected", [
    ("example.com", True), ("EXAMPLE.com.", True), ("www.example.com", True), ("a.b.example.com", False),
    ("example.org", False), ("www.example.org", True), ("xexample.com", False), (".example.com", False),
    ("", False),
])
def test_dns_names_and_single_label_wildcards(host, expected):
    assert hostname_matches(host, SANS) is expected


@pytest.mark.parametrize("pattern,host", [("*.com", "example.com"), ("w*.example.com", "www.example.com"),
                                          ("*.*.example.com", "a.b.example.com")])
def test_it_does_not_honour_over_broad_or_partial_wildcards(pattern, host):
    assert not hostname_matches(host, (pattern,))


def test_ip_hosts_match_ip_sans_only():
    assert hostname_matches("127.0.0.1", ("127.0.0.1",), ("127.0.0.1",))
    assert not hostname_matches("127.0.0.1", ("127.0.0.1",), ())        # a DNS SAN spelled like an IP is not an IP SAN
    assert hostname_matches("::1", (), ("0:0:0:0:0:0:0:1",))


def test_unicode_hosts_are_compared_in_punycode():
    assert hostname_matches("bücher.example", ("xn--bcher-kva.example",))


def test_leaf_matches_reads_the_real_certificate_san_and_ignores_the_cn():
    ca = pki.make_ca()
    leaf = pki.issue_leaf(ca, dns=("localhost", "*.apps.test"), ips=("127.0.0.1",), key="ec256")
    assert leaf_matches(leaf.cert, "localhost")
    assert leaf_matches(leaf.cert, "shop.apps.test")
    assert leaf_matches(leaf.cert, "127.0.0.1")
    assert not leaf_matches(leaf.cert, "wrong.example")
    # the CA's CN is "TLS Audit Test Root" and it has no SAN: no CN fallback
    assert not leaf_matches(ca.cert, "TLS Audit Test Root")
