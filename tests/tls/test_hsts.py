"""Our own Strict-Transport-Security parser (sslyze's breaks on a quoted max-age)."""

import pytest

from workers.tls.hsts import parse_hsts


@pytest.mark.parametrize("header,max_age,subdomains,preload", [
    ("max-age=31536000; includeSubDomains", 31536000, True, False),
    ('max-age="31536000"', 31536000, False, False),
    ("MAX-AGE=63072000;includesubdomains;PRELOAD", 63072000, True, True),
    ("  max-age = 0 ", 0, False, False),
    ("includeSubDomains; max-age=300;", 300, True, False),
    ('max-age=10; foo="bar;"', None, False, False),       # a ';' inside quotes is beyond this parser: invalid
])
def test_it_reads_the_directives(header, max_age, subdomains, preload):
    hsts = parse_hsts(header)
    assert hsts.header == header
    assert hsts.max_age == max_age
    assert hsts.valid is (max_age is not None)
    assert (hsts.include_subdomains, hsts.preload) == (subdomains, preload)


@pytest.mark.parametrize("header", ["includeSubDomains", "max-age=abc", "max-age=-5", "max-age=1; max-age=2",
                                    "max-age", "max-age=1 2", 'max-age="12'])
def test_a_header_without_a_usable_max_age_is_invalid(header):
    hsts = parse_hsts(header)
    assert hsts.valid is False and hsts.max_age is None and hsts.header == header


def test_no_header_means_no_hsts():
    assert parse_hsts(None) is None
