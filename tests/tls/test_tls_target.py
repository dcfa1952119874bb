"""resolve_target: we resolve, we refuse non-public answers, we pin one address."""

import pytest

from workers.net.errors import TargetError
from workers.net.target import resolve_target


def test_it_resolves_names_through_the_system_resolver_and_prefers_ipv4():
    # "localhost" comes from /etc/hosts (nsswitch "files"): no DNS packet leaves the machine.
    target = resolve_target("LocalHost.", 8443, allow_private=True)
    assert (target.host, target.port, target.ip) == ("localhost", 8443, "127.0.0.1")
    assert target.all_ips[0] == "127.0.0.1"


def test_a_name_resolving_to_loopback_is_refused_by_default():
    with pytest.raises(TargetError) as caught:
        resolve_target("localhost", 443)
    assert caught.value.code == "private_target"
    assert caught.value.message.startswith("localhost resolves to 127.0.0.1, which is a loopback address")


@pytest.mark.parametrize("typed", ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[::1]", "::ffff:127.0.0.1"])
def test_hosts_typed_as_numbers_are_judged_as_the_address_they_mean(typed):
    with pytest.raises(TargetError) as caught:
        resolve_target(typed, 443)
    assert caught.value.code == "private_target"


def test_a_pinned_ip_is_used_as_is_and_still_checked():
    target = resolve_target("www.example.com", 443, pinned_ip="127.0.0.1", allow_private=True)
    assert (target.host, target.ip, target.all_ips) == ("www.example.com", "127.0.0.1", ("127.0.0.1",))
    with pytest.raises(TargetError) as caught:
        resolve_target("www.example.com", 443, pinned_ip="10.0.0.8")
    assert caught.value.code == "private_target" and "10.0.0.8" in caught.value.message


def test_a_pinned_public_ip_is_accepted_without_any_lookup():
    target = resolve_target("example.com", 443, pinned_ip="93.184.216.34")
    assert target.ip == "93.184.216.34"


def test_an_unresolvable_name_is_a_dns_error():
    with pytest.raises(TargetError) as caught:
        resolve_target("does-not-exist.invalid", 443)
    assert caught.value.code == "dns"
    assert caught.value.message == ("The name does-not-exist.invalid does not resolve: names under .invalid and .onion "
        "are never looked up in the DNS.")


@pytest.mark.parametrize("host,port", [("", 443), ("exa mple.com", 443), ("a/b", 443), ("example.com", 0),
                                       ("example.com", 70000)])
def test_garbage_is_an_invalid_target(host, port):
    with pytest.raises(TargetError) as caught:
        resolve_target(host, port)
    assert caught.value.code == "invalid_target"


def test_unicode_names_become_punycode():
    target = resolve_target("bücher.example", 443, pinned_ip="93.184.216.34")
    assert target.host == "xn--bcher-kva.example"
