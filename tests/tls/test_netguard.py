"""SSRF guard: every address a typed host can smuggle in must be refused, public ones allowed."""

import pytest

from tlsaudit.domain.netguard import ALLOW_PRIVATE_ENV, is_refused, parse_ip_literal, refusal_reason

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("2130706433", "loopback"),            # decimal form of 127.0.0.1
    ("0177.0.0.1", "loopback"),            # octal
    ("0x7f.1", "loopback"),                # hex, short form
    ("127.1", "loopback"),                 # short form
    ("::ffff:127.0.0.1", "loopback"),      # IPv4-mapped
    ("::ffff:7f00:1", "loopback"),         # IPv4-mapped, hex
    ("::127.0.0.1", "loopback"),           # IPv4-compatible (deprecated)
    ("64:ff9b::7f00:1", "loopback"),       # NAT64 well-known prefix
    ("2002:7f00:1::", "loopback"),         # 6to4
    ("169.254.169.254", "metadata"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fd00::1", "private"),
    ("100.64.1.1", "carrier-grade NAT"),
    ("10.0.0.1", "private"),
    ("172.16.5.4", "private"),
    ("192.168.1.1", "private"),
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("2001:db8::1", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("::ffff:10.1.2.3", "private"),
    ("[::1]", "loopback"),
    ("fe80::1%eth0", "link-local"),
    # issue 14: IPv4-translated and the other IPv6 forms that carry an IPv4 address
    ("::ffff:0:7f00:1", "IPv6 form of 127.0.0.1 (IPv4-translated), which is a loopback"),
    ("::ffff:0:a00:1", "IPv6 form of 10.0.0.1 (IPv4-translated), which is a private"),
    ("64:ff9b::a00:1", "IPv6 form of 10.0.0.1 (NAT64), which is a private"),
    ("64:ff9b:1::7f00:1", "local-use NAT64"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "IPv6 form of 127.0.0.1 (Teredo client)"),
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", "IPv6 form of 10.0.0.1 (Teredo server)"),
    ("2606:4700::5efe:a00:1", "IPv6 form of 10.0.0.1 (ISATAP interface id)"),
    ("2606:4700::200:5efe:7f00:1", "IPv6 form of 127.0.0.1 (ISATAP interface id)"),
    ("::a00:1", "IPv6 form of 10.0.0.1 (IPv4-compatible)"),
    ("2002:a00:1::", "IPv6 form of 10.0.0.1 (6to4)"),
    # forms no public server uses, refused whatever they carry
    ("::ffff:0:808:808", "deprecated IPv4-translated"),
    ("::808:808", "deprecated IPv4-compatible"),
    ("64:ff9b:1::808:808", "local-use NAT64"),
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "Teredo tunnel"),
    # the allow-list: IPv6 outside global unicast, and special ranges inside it
    ("4000::1", "not a global unicast address (outside 2000::/3)"),
    ("5f00::1", "outside 2000::/3"),
    ("100:0:0:1::1", "dummy-prefix"),
    ("3fff::1", "documentation"),
    ("2001:20::1", "IETF protocol assignment"),
    ("192.0.0.170", "IETF protocol assignment"),
    ("192.88.99.1", "6to4 relay anycast"),
]

PUBLIC = ["93.184.216.34", "2606:4700::1111", "8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::808:808", "1.1.1.1",
          "2a00:1450:4001:800::200e", "2002:808:808::1", "2606:4700::200:5efe:808:808", "2620:4f:8000::1",
          "192.31.196.1", "192.52.193.1"]


@pytest.mark.parametrize("text,kind", REFUSED)
def test_it_refuses_non_public_addresses_with_a_plain_reason(text, kind):
    reason = refusal_reason(text)
    assert reason is not None and kind in reason
    assert is_refused(text)


@pytest.mark.parametrize("text", PUBLIC)
def test_it_allows_public_addresses(text):
    assert refusal_reason(text) is None


@pytest.mark.parametrize("text,expected", [
    ("2130706433", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"), ("10.1", "10.0.0.1"), ("192.168.257", "192.168.1.1"), ("[::1]", "::1"),
    ("93.184.216.34", "93.184.216.34"), ("0", "0.0.0.0"),
])
def test_it_reads_host_numbers_the_way_inet_aton_does(text, expected):
    assert str(parse_ip_literal(text)) == expected


@pytest.mark.parametrize("text", ["example.com", "08.1.1.1", "1.2.3.4.5", "256.1.1.1", "0x", "127.0.0.1 x",
                                  "", "localhost", "1.2.3.0x1g"])
def test_names_and_malformed_numbers_are_not_addresses(text):
    assert parse_ip_literal(text) is None


def test_text_that_is_not_an_address_is_refused():
    assert "not an IP address" in refusal_reason("example.com")


def test_the_opt_in_env_var_name_is_fixed():
    assert ALLOW_PRIVATE_ENV == "TLSAUDIT_ALLOW_PRIVATE_TARGETS"


@pytest.mark.parametrize("top", range(0, 0x10000, 0x100), ids=lambda top: f"{top:x}::/8")
def test_only_global_unicast_ipv6_is_allowed(top):
    """An allow-list: a plain address (no IPv4 address carried) in every /8 of the IPv6 space."""
    address = f"{top:x}:1234:5678::9"
    allowed = refusal_reason(address) is None
    assert allowed == (0x2000 <= top < 0x4000), address
