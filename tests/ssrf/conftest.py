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
from tests.support.ssrf import (
    REBIND,
    ZONE,
    rebinding,
)


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


@pytest.fixture
def rebinding_dns(settings):
    """ZONE plus REBIND, which answers 127.0.0.1 once, then 127.0.0.2 (a trap) for ever."""
    with hostile.dns_server({**ZONE, REBIND: rebinding("127.0.0.1", "127.0.0.2")}) as dns:
        settings.DNS_RESOLVER = dns.address
        yield dns


@pytest.fixture
def org(db):
    """An organization without members (the forms only need the organization; no password hashing)."""
    from tlsaudit.orgs.models import Organization

    return Organization.objects.create(name="Agency")
