"""The SSRF figure of docs/security.md: every tricky spelling (tests/support/ssrf.py) through every door
an address comes in by, counted. Production mode; names are answered by the local DNS server.

Doors for every spelling: the site form's host, the API's site host (which reuses the form), target
resolution (what every worker task calls), the webhook URL check and the webhook form, the browser
probe's guard for a subresource URL. Doors for the spellings that are addresses: the site form's and
the API's pinned IP, and target resolution with that pin (a site pinned without the form).

    make test PYTEST_ARGS="tests/ssrf/test_spellings.py -s"     # prints "SSRF spellings refused N/M"
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ssrf.test_webhooks import hook_url
from tests.support.api import client_with, make_key
from tests.support.ssrf import PUBLIC, TRICKY_TARGETS
from tlsaudit.domain.netguard import parse_ip_literal

SITES = "/api/v1/sites/"
# Controls: every door must let these through, or its count would mean nothing.
PUBLIC_NAME, PUBLIC_ADDRESS = "public.hostile.test", PUBLIC
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "ssrf-spellings.txt"


class Doors:
    """Each door answers whether it refused `text` (True) or let it through (False)."""

    def __init__(self, org, dns, api):
        self.org, self.dns, self.api = org, dns, api

    def site_form_host(self, text: str) -> bool:
        from tlsaudit.sites.forms import SiteForm

        form = SiteForm(data={"address": text}, org=self.org)
        return not form.is_valid() and "address" in form.errors

    def site_form_pinned_ip(self, text: str) -> bool:
        from tlsaudit.sites.forms import SiteForm

        form = SiteForm(data={"address": "shop.hostile.test", "pinned_ip": text}, org=self.org)
        return not form.is_valid() and "pinned_ip" in form.errors

    def api_site_host(self, text: str) -> bool:
        return self._api_refuses({"hostname": text}, "hostname")

    def api_pinned_ip(self, text: str) -> bool:
        return self._api_refuses({"hostname": "shop.hostile.test", "pinned_ip": text}, "pinned_ip")

    def _api_refuses(self, body: dict, field: str) -> bool:
        from tlsaudit.sites.models import Site

        response = self.api.post(SITES, body, format="json")
        assert response.status_code in (201, 422), response.content   # not throttled, not another error
        created = Site.objects.filter(organization=self.org).delete()[0]
        return response.status_code == 422 and field in response.json()["error"]["fields"] and not created

    def target_resolution(self, text: str) -> bool:
        return self._resolve(text, None)

    def target_resolution_pinned_ip(self, text: str) -> bool:
        return self._resolve("shop.hostile.test", text)

    def _resolve(self, host: str, pinned_ip: str | None) -> bool:
        from workers.net.errors import TargetError
        from workers.net.target import resolve_target

        try:
            resolve_target(host, 443, pinned_ip=pinned_ip, allow_private=False, resolver=self.dns.address)
        except TargetError:
            return True
        return False

    def webhook_url_check(self, text: str) -> bool:
        from tlsaudit.alerts import webhooks

        try:
            webhooks.check_url(hook_url(text))
        except webhooks.UnsafeURL:
            return True
        return False

    def webhook_form(self, text: str) -> bool:
        from tlsaudit.alerts.forms import WebhookForm

        form = WebhookForm(data={"url": hook_url(text)}, org=self.org)
        return not form.is_valid() and "url" in form.errors

    def browser_subresource(self, text: str) -> bool:
        from workers.browser.guard import AddressGuard

        guard = AddressGuard(allow_private=False, resolver=self.dns.address)
        return guard.blocked_reason(hook_url(text, path="/pixel.png")) is not None


EVERY_SPELLING = ["site_form_host", "api_site_host", "target_resolution", "webhook_url_check", "webhook_form",
                  "browser_subresource"]
ADDRESSES_ONLY = ["site_form_pinned_ip", "api_pinned_ip", "target_resolution_pinned_ip"]


def count(doors: Doors) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """({door: (refused, tried)}, ["door: spelling" let through])."""
    spellings = [text for text, _ in TRICKY_TARGETS]
    addresses = [text for text in spellings if parse_ip_literal(text) is not None]
    tally, through = {}, []
    for door, texts in [(d, spellings) for d in EVERY_SPELLING] + [(d, addresses) for d in ADDRESSES_ONLY]:
        refuses: Callable[[str], bool] = getattr(doors, door)
        let_through = [text for text in texts if not refuses(text)]
        through += [f"{door}: {text}" for text in let_through]
        tally[door] = (len(texts) - len(let_through), len(texts))
    return tally, through


def summary(tally: dict[str, tuple[int, int]]) -> str:
    refused, tried = (sum(pair[i] for pair in tally.values()) for i in (0, 1))
    spellings = len(TRICKY_TARGETS)
    addresses = sum(parse_ip_literal(text) is not None for text, _ in TRICKY_TARGETS)
    lines = [f"SSRF spellings refused {refused}/{tried} ({spellings} spellings, {addresses} of them addresses; "
             f"{len(EVERY_SPELLING)} doors for every spelling, {len(ADDRESSES_ONLY)} more for addresses)"]
    lines += [f"  {door.replace('_', ' ')}: {r}/{t}" for door, (r, t) in tally.items()]
    return "\n".join(lines)


@pytest.mark.django_db
def test_every_spelling_is_refused_at_every_door(production, tricky_dns, org_a):
    doors = Doors(org_a, tricky_dns, client_with(make_key(org_a)[1]))

    assert [door for door in EVERY_SPELLING if getattr(doors, door)(PUBLIC_NAME)] == []
    assert [door for door in EVERY_SPELLING + ADDRESSES_ONLY if getattr(doors, door)(PUBLIC_ADDRESS)] == []

    tally, through = count(doors)

    report = summary(tally)
    print("\n" + report)
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(report + "\n" + "".join(f"  let through: {line}\n" for line in through))
    assert through == [], "\n".join(through)
