"""workers/net/starttls.py, dialect by dialect: what we send, what counts as a go-ahead, and the
answers built to fool it. The server's whole side is written into a socket pair before we read."""

from __future__ import annotations

import socket

import pytest

from workers.net import starttls
from workers.net.starttls import StartTlsRefused, StartTlsStalled, negotiate

LDAP_OK = bytes.fromhex("300c02010178070a010004000400")
LDAP_UNAVAILABLE = bytes.fromhex("300c02010178070a013404000400")   # resultCode 52
# The same success as Active Directory writes it: every length in the 4-octet long form (outside review).
LDAP_OK_LONG_LENGTHS = bytes.fromhex("308400000010020101788400000007" "0a0100040004 00".replace(" ", ""))
XMPP_FEATURES = (b"<?xml version='1.0'?><stream:stream xmlns='jabber:client' id='1' version='1.0'>"
                 b"<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'><required/></starttls>"
                 b"</stream:features>")


def run_prelude(dialect: str, server_says: bytes, host: str = "mail.test") -> bytes:
    """Negotiate against `server_says`; return what we sent."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(server_says)
        negotiate(ours, dialect, host, timeout=0.5)
        theirs.settimeout(0.5)
        return theirs.recv(65536)


GO_AHEADS = [
    ("SMTP", b"220-mail.test ESMTP\r\n220 hello\r\n250-mail.test\r\n250-SIZE 1000\r\n250-STARTTLS\r\n"
             b"250 8BITMIME\r\n220 2.0.0 go ahead\r\n", b"EHLO tlsaudit.invalid\r\nSTARTTLS\r\n"),
    ("IMAP", b"* OK [CAPABILITY IMAP4rev1 STARTTLS] ready\r\n* CAPABILITY IMAP4rev1\r\na1 OK Begin TLS\r\n",
     b"a1 STARTTLS\r\n"),
    ("POP3", b"+OK POP3 ready\r\n+OK Begin TLS\r\n", b"STLS\r\n"),
    ("FTP", b"220-Welcome\r\n220-to the test\r\n220 ready\r\n234 Proceed\r\n", b"AUTH TLS\r\n"),
    ("XMPP", XMPP_FEATURES + b"<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>",
     b"to='mail.test'"),
    ("LDAP", LDAP_OK, starttls.LDAP_STARTTLS),
    ("LDAP", LDAP_OK_LONG_LENGTHS, starttls.LDAP_STARTTLS),
    ("XMPP", XMPP_FEATURES + b"<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'></proceed>",
     starttls.XMPP_STARTTLS),
    ("POSTGRES", b"S", starttls.POSTGRES_SSL_REQUEST),
]


@pytest.mark.parametrize("dialect, server_says, we_send", GO_AHEADS, ids=[g[0] for g in GO_AHEADS])
def test_it_reaches_the_go_ahead(dialect, server_says, we_send):
    assert we_send in run_prelude(dialect, server_says)


REFUSALS = [
    ("SMTP", b"554 no service\r\n", "greeting was 554"),
    ("SMTP", b"220 hi\r\n250-mail.test\r\n250 SIZE 1000\r\n", "did not offer STARTTLS"),
    ("SMTP", b"220 hi\r\n250-mail.test\r\n250-XSTARTTLSX\r\n250 HELP STARTTLS\r\n", "did not offer STARTTLS"),
    ("SMTP", b"220 hi\r\n250 STARTTLS\r\n454 TLS not available\r\n", "answered STARTTLS with 454"),
    ("SMTP", b"SSH-2.0-OpenSSH_9.2\r\n", "is not SMTP"),
    ("IMAP", b"* BYE go away\r\n", "greeting"),
    ("IMAP", b"* OK hi\r\na1 NO [PRIVACYREQUIRED] not now\r\n", "refused STARTTLS"),
    ("IMAP", b"* OK hi\r\nHTTP/1.1 400 Bad Request\r\n", "not IMAP"),
    ("POP3", b"+OK hi\r\n-ERR command not recognised\r\n", "refused STLS"),
    ("FTP", b"220 hi\r\n530 Please login with USER and PASS\r\n", "refused AUTH TLS"),
    ("XMPP", b"<stream:stream><stream:features><mechanisms/></stream:features>", "did not offer STARTTLS"),
    ("XMPP", b"<stream:stream><stream:error><host-unknown/></stream:error>", "closed our XMPP stream"),
    ("XMPP", XMPP_FEATURES + b"<failure xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>", "refused XMPP STARTTLS"),
    ("LDAP", LDAP_UNAVAILABLE, "result code 52"),
    ("LDAP", b"\x30\x84\xff\xff\xff\xff", "claims 4294967295 bytes"),
    ("LDAP", b"\x30\x85\x00\x00\x00\x00\x10", "impossible length"),
    ("LDAP", b"\x30\x05\x02\x01\x01\x78\x09", "truncated"),
    ("LDAP", b"\x30\x06\x02\x01\x01\x65\x01\x00", "not an LDAP extended response"),
    ("LDAP", b"HTTP/1.1 400", "not LDAP"),
    ("POSTGRES", b"N", "SSL turned off"),
    ("POSTGRES", b"E", "not PostgreSQL's"),
]


@pytest.mark.parametrize("dialect, server_says, words", REFUSALS)
def test_anything_but_a_go_ahead_is_refused_in_words(dialect, server_says, words):
    with pytest.raises(StartTlsRefused, match=words):
        run_prelude(dialect, server_says)


def test_a_server_that_closes_mid_exchange_is_refused():
    ours, theirs = socket.socketpair()
    with ours:
        theirs.sendall(b"220 hi\r\n")
        theirs.close()
        with pytest.raises(StartTlsRefused, match="closed the connection before we could send EHLO"):
            negotiate(ours, "SMTP", "mail.test", timeout=0.5)


def test_a_silent_server_stalls_the_prelude():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        with pytest.raises(StartTlsStalled, match="sent no greeting"):
            negotiate(ours, "IMAP", "mail.test", timeout=0.2)


def test_a_prelude_past_its_instant_stops_before_reading():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"* OK hi\r\n")
        with pytest.raises(StartTlsStalled, match="incomplete at the deadline"):
            negotiate(ours, "IMAP", "mail.test", timeout=5, until=0.0)


def test_the_xmpp_stream_names_the_host_escaped():
    sent = run_prelude("XMPP", XMPP_FEATURES + b"<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>",
                       host="a'b<c")
    assert b"to='a&apos;b&lt;c'" in sent


def test_implicit_tls_sends_nothing():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        negotiate(ours, None, "mail.test", timeout=0.2)
        theirs.setblocking(False)
        with pytest.raises(BlockingIOError):
            theirs.recv(1)


def test_an_unknown_dialect_is_a_programming_error():
    ours, theirs = socket.socketpair()
    with ours, theirs, pytest.raises(ValueError, match="RDP"):
        negotiate(ours, "RDP", "mail.test", timeout=0.2)
