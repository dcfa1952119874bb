"""The TLS services a site can be (#18) and how their addresses parse."""

import pytest

from tlsaudit.domain.hostnames import AddressError, parse_address
from tlsaudit.domain.scanfacts import NOT_APPLICABLE, NOT_TESTED, OK, Check
from tlsaudit.domain.services import SERVICES, UnknownService, is_http, service_named


@pytest.mark.parametrize("text, scheme, port", [
    ("smtp://mail.example.com", "smtp", None),
    ("SMTP://Mail.Example.com:587", "smtp", 587),
    ("submission://mail.example.com", "smtp", 587),
    ("imaps://mail.example.com", "imaps", None),
    ("postgresql://db.example.com:6543", "postgres", 6543),
    ("ldap://[2001:db8::1]:389", "ldap", 389),
    ("https://example.com/", "https", None),
])
def test_service_addresses_parse_when_services_are_allowed(text, scheme, port):
    address = parse_address(text, services=True)
    assert (address.scheme, address.port) == (scheme, port)


def test_http_tools_still_refuse_other_schemes():
    with pytest.raises(AddressError, match="Only http:// and https://"):
        parse_address("smtp://mail.example.com")


@pytest.mark.parametrize("text, words", [
    ("gopher://example.com", "gopher:// is not a TLS service we audit"),
    ("smtp://user:pw@mail.example.com", "user name and password"),
    ("imap://mail.example.com/INBOX", "without a path"),
    ("smtp://mail.example.com:0", "Port 0 is out of range"),
])
def test_bad_service_addresses_say_why(text, words):
    with pytest.raises(AddressError, match=words):
        parse_address(text, services=True)


def test_each_service_has_one_dialect_or_implicit_tls():
    assert service_named("https").implicit_tls and is_http("https")
    assert [s.scheme for s in SERVICES.values() if s.http] == ["https"]
    assert {s.starttls for s in SERVICES.values() if s.starttls} == {
        "SMTP", "IMAP", "POP3", "FTP", "XMPP", "LDAP", "POSTGRES"}
    assert service_named("smtps").implicit_tls and service_named("smtps").default_port == 465
    with pytest.raises(UnknownService):
        service_named("telnet")


def test_not_applicable_is_neither_tested_nor_a_gap():
    check = Check(NOT_APPLICABLE, reason="HSTS is an HTTP header; an SMTP server sends none.")
    assert not check.tested and not check.applicable
    assert Check(NOT_TESTED).applicable and Check(OK).tested
