"""The SSRF tests' targets and tools: the tricky addresses and names, the stand-in address policy, a rebinding
answer and a route handler for Chromium. Nothing here may reach beyond 127.0.0.0/8 (tests/ssrf/conftest.py
says how)."""

from __future__ import annotations

from tests import hostile
from tlsaudit.domain.netguard import refused_kind

PUBLIC = "93.184.215.14"          # never connected to: only in answers of names that are refused anyway


ZONE = {
    "private.hostile.test": ["10.0.0.7"],
    "loopback.hostile.test": ["127.0.0.2"],
    "metadata.hostile.test": ["169.254.169.254"],
    "cgnat.hostile.test": ["100.64.0.9"],
    "ula.hostile.test": ["fd00::7"],
    "mixed.hostile.test": [PUBLIC, "10.0.0.7"],
    "mixed6.hostile.test": [PUBLIC, "::1"],
    "public.hostile.test": [PUBLIC],
    # AAAA answers that carry a private IPv4 address in each IPv6 form
    "translated.hostile.test": ["::ffff:0:7f00:1"],
    "nat64.hostile.test": ["64:ff9b::a00:1"],
    "sixtofour.hostile.test": ["2002:a9fe:a9fe::"],
    "teredo.hostile.test": ["2001:0:4136:e378:8000:63bf:80ff:fffe"],
    "isatap.hostile.test": ["2606:4700::5efe:a00:1"],
    "compat.hostile.test": ["::a00:1"],
    "mapped.hostile.test": ["::ffff:a9fe:a9fe"],
    "mixed64.hostile.test": [PUBLIC, "2606:4700::1111", "::ffff:0:a00:1"],
}


# (what a user or an attacker types, words every refusal of it contains), by family.
FIRST_ROUND = [   # the 31 targets of the first SSRF review
    ("127.0.0.1", ("127.0.0.1", "loopback")),
    ("0.0.0.0", ("0.0.0.0", "unspecified")),
    ("::1", ("::1", "loopback")),
    ("[::1]", ("::1", "loopback")),
    ("2130706433", ("127.0.0.1", "loopback")),          # decimal
    ("0177.0.0.1", ("127.0.0.1", "loopback")),          # octal
    ("0x7f.1", ("127.0.0.1", "loopback")),              # hex, short form
    ("127.1", ("127.0.0.1", "loopback")),               # short form
    ("0x7f000001", ("127.0.0.1", "loopback")),
    ("017700000001", ("127.0.0.1", "loopback")),
    ("0", ("0.0.0.0", "unspecified")),
    ("::ffff:127.0.0.1", ("IPv6 form of 127.0.0.1", "loopback")),   # IPv4-mapped
    ("::127.0.0.1", ("IPv6 form of 127.0.0.1", "loopback")),        # IPv4-compatible
    ("64:ff9b::7f00:1", ("IPv6 form of 127.0.0.1", "loopback")),    # NAT64
    ("2002:7f00:1::", ("IPv6 form of 127.0.0.1", "loopback")),      # 6to4
    ("169.254.169.254", ("169.254.169.254", "cloud metadata")),
    ("fd00::1", ("fd00::1", "unique local")),
    ("100.64.0.1", ("100.64.0.1", "carrier-grade NAT")),
    ("10.0.0.1", ("10.0.0.1", "RFC 1918")),
    ("172.16.0.1", ("172.16.0.1", "RFC 1918")),
    ("192.168.1.1", ("192.168.1.1", "RFC 1918")),
    ("fe80::1", ("fe80::1", "link-local")),
    ("localhost", ("127.0.0.1", "loopback")),
    ("foo.localhost", ("127.0.0.1", "loopback")),
    ("private.hostile.test", ("10.0.0.7", "RFC 1918")),
    ("loopback.hostile.test", ("127.0.0.2", "loopback")),
    ("metadata.hostile.test", ("169.254.169.254", "cloud metadata")),
    ("cgnat.hostile.test", ("100.64.0.9", "carrier-grade NAT")),
    ("ula.hostile.test", ("fd00::7", "unique local")),
    ("mixed.hostile.test", ("10.0.0.7", "RFC 1918")),    # public AND private: refused
    ("mixed6.hostile.test", ("::1", "loopback")),
]


IPV4_TRANSLATED = [   # ::ffff:0:0:0/96 (issue 14: accepted before the allow-list)
    ("::ffff:0:7f00:1", ("IPv6 form of 127.0.0.1", "IPv4-translated", "loopback")),
    ("[::ffff:0:7f00:1]", ("IPv6 form of 127.0.0.1", "IPv4-translated", "loopback")),
    ("::ffff:0:127.0.0.1", ("IPv6 form of 127.0.0.1", "IPv4-translated", "loopback")),
    ("0:0:0:0:ffff:0:7f00:1", ("IPv6 form of 127.0.0.1", "IPv4-translated", "loopback")),
    ("::FFFF:0:7F00:1", ("IPv6 form of 127.0.0.1", "IPv4-translated", "loopback")),
    ("::ffff:0:a00:1", ("IPv6 form of 10.0.0.1", "RFC 1918")),
    ("::ffff:0:a9fe:a9fe", ("IPv6 form of 169.254.169.254", "cloud metadata")),
    ("::ffff:0:0:0", ("IPv6 form of 0.0.0.0", "unspecified")),
    ("::ffff:0:6440:1", ("IPv6 form of 100.64.0.1", "carrier-grade NAT")),
]


IPV4_MAPPED = [   # ::ffff:0:0/96
    ("::ffff:a00:1", ("IPv6 form of 10.0.0.1", "IPv4-mapped", "RFC 1918")),
    ("::ffff:169.254.169.254", ("IPv6 form of 169.254.169.254", "cloud metadata")),
    ("0:0:0:0:0:ffff:7f00:1", ("IPv6 form of 127.0.0.1", "loopback")),
    ("::ffff:0.0.0.0", ("IPv6 form of 0.0.0.0", "unspecified")),
    ("[::ffff:127.0.0.1]", ("IPv6 form of 127.0.0.1", "loopback")),
]


NAT64 = [   # 64:ff9b::/96 judged by the IPv4 address; local-use 64:ff9b:1::/48 refused whatever it carries
    ("64:ff9b::a00:1", ("IPv6 form of 10.0.0.1", "NAT64", "RFC 1918")),
    ("64:ff9b::127.0.0.1", ("IPv6 form of 127.0.0.1", "NAT64", "loopback")),
    ("64:ff9b::a9fe:a9fe", ("IPv6 form of 169.254.169.254", "cloud metadata")),
    ("64:ff9b::c0a8:101", ("IPv6 form of 192.168.1.1", "RFC 1918")),
    ("64:ff9b::ac10:1", ("IPv6 form of 172.16.0.1", "RFC 1918")),
    ("64:ff9b::", ("IPv6 form of 0.0.0.0", "unspecified")),
    ("64:ff9b:1::7f00:1", ("local-use NAT64", "64:ff9b:1::/48")),            # /96 place
    ("64:ff9b:1:7f00:0:100::", ("local-use NAT64", "64:ff9b:1::/48")),       # /48 place of 127.0.0.1
    ("64:ff9b:1:a00:0:100::", ("local-use NAT64", "64:ff9b:1::/48")),        # /48 place of 10.0.0.1
    ("64:ff9b:1:0:a9:fea9:fe00:0", ("local-use NAT64", "64:ff9b:1::/48")),   # /64 place of 169.254.169.254
    ("64:ff9b:1:a00:0:100:808:808", ("local-use NAT64", "64:ff9b:1::/48")),  # /48 place of 10.0.0.1, 8.8.8.8 at /96
    ("64:ff9b:1:0:a:0:100:808", ("local-use NAT64", "64:ff9b:1::/48")),      # /64 place of 10.0.0.1, 1.0.8.8 at /96
    ("64:ff9b::1:a00:1", ("64:ff9b::1:a00:1", "outside 2000::/3")),          # beside the /96, not in it
]


IPV4_COMPATIBLE = [   # ::/96, deprecated
    ("::a00:1", ("IPv6 form of 10.0.0.1", "IPv4-compatible", "RFC 1918")),
    ("::169.254.169.254", ("IPv6 form of 169.254.169.254", "cloud metadata")),
    ("::7f00:1", ("IPv6 form of 127.0.0.1", "loopback")),
    ("::c0a8:101", ("IPv6 form of 192.168.1.1", "RFC 1918")),
]


SIX_TO_FOUR = [   # 2002::/16
    ("2002:a00:1::", ("IPv6 form of 10.0.0.1", "6to4", "RFC 1918")),
    ("2002:a9fe:a9fe::1", ("IPv6 form of 169.254.169.254", "6to4", "cloud metadata")),
    ("2002:c0a8:101::", ("IPv6 form of 192.168.1.1", "RFC 1918")),
    ("2002:6440:1::", ("IPv6 form of 100.64.0.1", "carrier-grade NAT")),
    ("2002::", ("IPv6 form of 0.0.0.0", "unspecified")),
    ("2002:7f00:1::1", ("IPv6 form of 127.0.0.1", "loopback")),
]


TEREDO = [   # 2001::/32: the server address, and the client address stored inverted
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", ("IPv6 form of 127.0.0.1", "Teredo client", "loopback")),
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", ("IPv6 form of 10.0.0.1", "Teredo client", "RFC 1918")),
    ("2001:0:4136:e378:8000:63bf:5601:5601", ("IPv6 form of 169.254.169.254", "Teredo client", "cloud metadata")),
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", ("IPv6 form of 10.0.0.1", "Teredo server", "RFC 1918")),
]


ISATAP = [   # a global prefix whose interface id names an IPv4 address (::0:5efe:a.b.c.d, ::200:5efe:a.b.c.d)
    ("2606:4700::5efe:a00:1", ("IPv6 form of 10.0.0.1", "ISATAP", "RFC 1918")),
    ("2606:4700::200:5efe:7f00:1", ("IPv6 form of 127.0.0.1", "ISATAP", "loopback")),
    ("2606:4700::5efe:169.254.169.254", ("IPv6 form of 169.254.169.254", "ISATAP", "cloud metadata")),
    ("2002:808:808::5efe:c0a8:101", ("IPv6 form of 192.168.1.1", "ISATAP", "RFC 1918")),   # inside public 6to4
]


IPV6_NOT_GLOBAL = [   # outside 2000::/3, or a special range inside it
    ("0:0:0:0:0:0:0:1", ("::1", "loopback")),
    ("0000:0000:0000:0000:0000:0000:0000:0001", ("::1", "loopback")),
    ("::1%lo", ("::1", "loopback")),
    ("fc00::1", ("fc00::1", "unique local")),
    ("fd12:3456:789a::1", ("fd12:3456:789a::1", "unique local")),
    ("fec0::1", ("fec0::1", "site-local")),
    ("ff05::1", ("ff05::1", "multicast")),
    ("ff02::1:ff00:1", ("ff02::1:ff00:1", "multicast")),
    ("fe80::5efe:a00:1", ("fe80::5efe:a00:1", "link-local")),
    ("100::1", ("100::1", "discard-only")),
    ("100:0:0:1::1", ("100:0:0:1::1", "dummy-prefix")),
    ("2001:db8::1", ("2001:db8::1", "documentation")),
    ("3fff::1", ("3fff::1", "documentation")),
    ("2001:2::1", ("2001:2::1", "benchmarking")),
    ("2001:10::1", ("2001:10::1", "IETF protocol assignment")),
    ("2001:20::1", ("2001:20::1", "IETF protocol assignment")),
    ("4000::1", ("4000::1", "outside 2000::/3")),
    ("5f00::1", ("5f00::1", "outside 2000::/3")),
    ("e000::1", ("e000::1", "outside 2000::/3")),
]


IPV4_MORE = [   # more IPv4 spellings and special ranges
    ("127.0.0.2", ("127.0.0.2", "loopback")),
    ("127.255.255.254", ("127.255.255.254", "loopback")),
    ("127.0.0.1.", ("127.0.0.1", "loopback")),                # trailing dot
    ("0x7f.0.0.1", ("127.0.0.1", "loopback")),
    ("0x7f.0x0.0x0.0x1", ("127.0.0.1", "loopback")),          # the last label is not all digits
    ("127.0.0.0x1", ("127.0.0.1", "loopback")),
    ("0177.0.0.01", ("127.0.0.1", "loopback")),
    ("127.0.1", ("127.0.0.1", "loopback")),
    ("167772161", ("10.0.0.1", "RFC 1918")),
    ("012.0.0.1", ("10.0.0.1", "RFC 1918")),
    ("0xa.0.0.1", ("10.0.0.1", "RFC 1918")),
    ("10.1", ("10.0.0.1", "RFC 1918")),
    ("2852039166", ("169.254.169.254", "cloud metadata")),
    ("0xa9fea9fe", ("169.254.169.254", "cloud metadata")),
    ("0251.0376.0251.0376", ("169.254.169.254", "cloud metadata")),
    ("169.254.43518", ("169.254.169.254", "cloud metadata")),
    ("0xa9.0xfe.0xa9.0xfe", ("169.254.169.254", "cloud metadata")),
    ("0x0", ("0.0.0.0", "unspecified")),
    ("3232235521", ("192.168.0.1", "RFC 1918")),
    ("0.1.2.3", ("0.1.2.3", "'this network'")),
    ("169.254.0.1", ("169.254.0.1", "link-local")),
    ("172.31.255.255", ("172.31.255.255", "RFC 1918")),
    ("100.127.255.254", ("100.127.255.254", "carrier-grade NAT")),
    ("192.0.0.8", ("192.0.0.8", "IETF protocol assignment")),
    ("192.0.0.170", ("192.0.0.170", "IETF protocol assignment")),
    ("192.88.99.1", ("192.88.99.1", "6to4 relay")),
    ("198.19.255.255", ("198.19.255.255", "benchmarking")),
    ("198.51.100.1", ("198.51.100.1", "documentation")),
    ("203.0.113.1", ("203.0.113.1", "documentation")),
    ("224.0.0.251", ("224.0.0.251", "multicast")),
    ("239.255.255.250", ("239.255.255.250", "multicast")),
    ("240.0.0.1", ("240.0.0.1", "reserved")),
    ("255.255.255.255", ("255.255.255.255", "broadcast")),
]


NAMES_MORE = [   # names: localhost spellings, and AAAA answers in every IPv6 form
    ("localhost.", ("127.0.0.1", "loopback")),
    ("LOCALHOST", ("127.0.0.1", "loopback")),
    ("Foo.LocalHost", ("127.0.0.1", "loopback")),
    ("translated.hostile.test", ("IPv6 form of 127.0.0.1", "IPv4-translated")),
    ("nat64.hostile.test", ("IPv6 form of 10.0.0.1", "NAT64")),
    ("sixtofour.hostile.test", ("IPv6 form of 169.254.169.254", "6to4")),
    ("teredo.hostile.test", ("IPv6 form of 127.0.0.1", "Teredo client")),
    ("isatap.hostile.test", ("IPv6 form of 10.0.0.1", "ISATAP")),
    ("compat.hostile.test", ("IPv6 form of 10.0.0.1", "IPv4-compatible")),
    ("mapped.hostile.test", ("IPv6 form of 169.254.169.254", "cloud metadata")),
    ("mixed64.hostile.test", ("IPv6 form of 10.0.0.1", "IPv4-translated")),   # public v4 and v6 first
]


TRICKY_TARGETS = (FIRST_ROUND + IPV4_TRANSLATED + IPV4_MAPPED + NAT64 + IPV4_COMPATIBLE + SIX_TO_FOUR + TEREDO
                  + ISATAP + IPV6_NOT_GLOBAL + IPV4_MORE + NAMES_MORE)


# Hosts typed as a bare number, or ending in an all-digit label: the site form refuses them as names.
NUMERIC_FORMS = {"2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001", "017700000001", "0", "0x7f.0.0.1",
                 "0177.0.0.01", "127.0.1", "167772161", "012.0.0.1", "0xa.0.0.1", "10.1", "2852039166",
                 "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "0x0", "3232235521"}


TARGET_IDS = [text for text, _ in TRICKY_TARGETS]


def STAND_IN_POLICY(address):  # noqa: N802 — used like refused_kind, named as a constant
    """The real address policy, except that 127.0.0.1 stands for a public server."""
    return None if str(address) == "127.0.0.1" else refused_kind(address)


REBIND = "rebind.hostile.test"


def rebinding(first: str, then: str):
    """Answers `first` to the first A query of a name and `then` to every later one (TTL 0)."""
    return lambda round_: [first] if round_ == 0 else [then]


def route_handler(routes: dict[str, tuple[int, dict[str, str], bytes]]):
    """A hostile.serve handler answering GET path -> (status, headers, body), one request per
    connection; the raw requests land in `listener.requests`."""
    def handle(conn, state):
        request = hostile.read_request(conn)
        state.requests.append(request)
        path = request.split(b" ", 2)[1].decode() if request.count(b" ") >= 2 else "/"
        status, headers, body = routes.get(path.split("?")[0], (404, {}, b"not found"))
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        conn.sendall(f"HTTP/1.1 {status} X\r\n{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                     .encode() + body)

    return handle
