"""Issue #16 item 3: a suite pick read from the server's first flight (probes.server_flight_cipher, one
round trip less before TLS 1.3) is the pick of the full handshake it replaced, failures included, on
every server of the TLS lab and every protocol the preference probes offer with Python's OpenSSL."""

import ssl

import pytest

from tests.support.tls_servers import FIXTURES
from workers.tls import probes

PROTOCOLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2")


def outcome(pick):
    try:
        return pick()
    except (OSError, ssl.SSLError, ValueError):
        return "refused"


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_first_flight_gives_the_full_handshakes_pick(tls_lab, name):
    endpoint = probes.Endpoint(host="localhost", ip="127.0.0.1", port=tls_lab.port(name), timeout=3.0)
    seen = []
    for protocol in PROTOCOLS:
        for order in (probes.offer_order(protocol), tuple(reversed(probes.offer_order(protocol)))):
            context = probes.make_context(protocol, ciphers=":".join(order) + ":@SECLEVEL=0")
            full = outcome(lambda: probes.handshake(endpoint, context).cipher)
            assert outcome(lambda: probes.server_flight_cipher(endpoint, context)) == full, (protocol, order[0])
            seen.append(full)
    if set(FIXTURES[name].protocols) & set(PROTOCOLS):     # the comparison saw real picks, not only refusals
        assert any(pick != "refused" for pick in seen)
