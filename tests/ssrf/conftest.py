"""SSRF fixtures: production mode, a local DNS server with tricky names, and the tricky targets.

Nothing here may reach beyond 127.0.0.0/8, so:
- every name that "resolves to a private address" resolves to 127.0.0.2 (a `trap` listener counts
  any connection that arrives), 10.0.0.7, 169.254.169.254 or ::1; the non-loopback ones are only
  used where nothing connects (form, target resolution, webhook URL check);
- "public" answers in the mixed names (93.184.215.14) sit *first*, so a guard that checked only the
  first address would let them through, and are never connected to: the names are refused as a
  whole before any connection (and the tests that do connect use only loopback answers);
- where a test needs a public server that really answers (a page that redirects, a webhook
  receiver, a scanned server), 127.0.0.1 stands in for it: either private targets are allowed for
  that test (pinning tests: which address is connected, whatever the policy) or the browser probe's
  address policy is the real one except that 127.0.0.1 counts as public (`STAND_IN_POLICY`).
"""

from __future__ import annotations

import pytest

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
}

# (what a user or an attacker types, words every refusal of it contains). 31 targets.
TRICKY_TARGETS = [
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
NUMERIC_FORMS = {"2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001", "017700000001", "0"}
TARGET_IDS = [text for text, _ in TRICKY_TARGETS]


def STAND_IN_POLICY(address):  # noqa: N802 — used like refused_kind, named as a constant
    """The real address policy, except that 127.0.0.1 stands for a public server."""
    return None if str(address) == "127.0.0.1" else refused_kind(address)


@pytest.fixture
def production(settings):
    """Private targets refused, as in production (tests run with TLSAUDIT_ALLOW_PRIVATE_TARGETS=1)."""
    settings.ALLOW_PRIVATE_TARGETS = False
    return settings


@pytest.fixture
def tricky_dns(settings):
    """The app asks the local DNS server (ZONE; NXDOMAIN for other names)."""
    with hostile.dns_server(ZONE) as dns:
        settings.DNS_RESOLVER = dns.address
        yield dns


REBIND = "rebind.hostile.test"


def rebinding(first: str, then: str):
    """Answers `first` to the first A query of a name and `then` to every later one (TTL 0)."""
    return lambda round_: [first] if round_ == 0 else [then]


@pytest.fixture
def rebinding_dns(settings):
    """ZONE plus REBIND, which answers 127.0.0.1 once, then 127.0.0.2 (a trap) for ever."""
    with hostile.dns_server({**ZONE, REBIND: rebinding("127.0.0.1", "127.0.0.2")}) as dns:
        settings.DNS_RESOLVER = dns.address
        yield dns


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


@pytest.fixture
def org(db):
    """An organization without members (the forms only need the organization; no password hashing)."""
    from tlsaudit.orgs.models import Organization

    return Organization.objects.create(name="Agency")
