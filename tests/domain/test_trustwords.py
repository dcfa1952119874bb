"""A trust store's refusal, in words: cryptography's verifier messages carry Python reprs."""

import pytest

from tlsaudit.domain.scanfacts import TrustResult
from tlsaudit.domain.trustwords import has_repr, trust_error_words, trust_summary

EXPIRED = ("validation failed: cert is not valid at validation time (encountered processing "
           "<Certificate(subject=<Name(O=TLS Audit test lab,CN=localhost)>, ...)>)")
UNKNOWN = "validation failed: candidates exhausted: all candidates exhausted with no interior errors"
NAME = ("validation failed: leaf certificate has no matching subjectAltName (encountered processing "
        "<Certificate(subject=<Name(CN=www.example.org)>, ...)>)")


@pytest.mark.parametrize("raw, words", [
    (EXPIRED, "a certificate is outside its validity dates"),
    (UNKNOWN, "no chain to a root this store trusts"),
    (NAME, "the certificate does not cover the host name"),
    ("validation failed: something new (encountered processing <Certificate(subject=<Name(CN=a.example)>, ...)>)",
     "something new (encountered processing CN=a.example)"),
    ("odd <Thing(x=1)> here", "odd a certificate here"),
    ("", ""),
])
def test_it_says_why_in_words_without_a_repr(raw, words):
    assert trust_error_words(raw) == words
    assert not has_repr(trust_error_words(raw))


def test_stores_refusing_for_the_same_reason_are_named_once():
    results = [TrustResult("Mozilla", False, UNKNOWN), TrustResult("Apple", False, UNKNOWN),
               TrustResult("Custom CA", True)]
    assert trust_summary(results) == ("trusted by Custom CA; not trusted by Mozilla, Apple: "
                                      "no chain to a root this store trusts")
    assert trust_summary([TrustResult("Custom CA", False, EXPIRED, dates_only=True)]) == (
        "not trusted by Custom CA: a certificate is outside its validity dates (trusted apart from the dates)")


def test_the_dates_are_said_once_even_in_an_audit_stored_with_them_twice():
    """#30 item 4: "… a certificate is outside its validity dates, and a certificate is outside its
    validity dates" (an issuer's dates failed too, when the chain was tried again inside the leaf's)."""
    from workers.tls.certs import and_the_dates

    dates = "a certificate is outside its validity dates"
    assert and_the_dates(dates) == and_the_dates("") == dates
    assert and_the_dates("no chain to a root this store trusts") == f"no chain to a root this store trusts, and {dates}"
    stored = [TrustResult("Mozilla", False, error=f"no chain to a root this store trusts, and {dates}"),
              TrustResult("Custom CA", False, error=f"{dates}, and {dates}", dates_only=True)]
    assert trust_summary(stored) == (f"not trusted by Mozilla: no chain to a root this store trusts, and {dates}; "
                                     f"not trusted by Custom CA: {dates} (trusted apart from the dates)")
