"""Every tricky target of conftest.py (counted, door by door, in test_spellings.py), refused in
production mode where a site is typed (the site form, which the API reuses), where a target is
resolved (the engines' resolve_target), and where work is queued for a site that slipped past the
form (a bulk import skips the DNS check; an admin may pin any IP)."""

from __future__ import annotations

import pytest

from tests import hostile
from tests.support import waiting
from tests.support.loadtests import verify
from tests.support.sites import added_site
from tests.support.ssrf import NUMERIC_FORMS, TARGET_IDS, TRICKY_TARGETS
from tlsaudit.sites.forms import SiteForm
from tlsaudit.sites.models import Site
from workers.net.errors import TargetError
from workers.net.target import resolve_target

PUBLIC_ONLY = "TLS Audit only scans servers on the public internet."


@pytest.mark.django_db
@pytest.mark.parametrize("text, words", TRICKY_TARGETS, ids=TARGET_IDS)
def test_the_site_form_refuses_every_tricky_target(production, tricky_dns, org, text, words):
    form = SiteForm(data={"address": text, "name": "x"}, org=org)

    assert not form.is_valid()
    [error] = form.errors["address"]
    if text in NUMERIC_FORMS:
        # Not a name we accept at all: a host typed as a bare number is a trick, not a site.
        assert "not a full domain name" in error or "is not a valid one" in error, error
    else:
        assert all(word in error for word in words) and error.endswith(PUBLIC_ONLY), error
    assert not Site.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("pinned", ["127.0.0.1", "0.0.0.0", "::1", "::ffff:127.0.0.1", "169.254.169.254", "fd00::1",
                                    "100.64.0.1", "10.0.0.1", "fe80::1", "64:ff9b::7f00:1", "2130706433"])
def test_the_site_form_refuses_a_private_pinned_ip(production, tricky_dns, org, pinned):
    form = SiteForm(data={"address": "shop.hostile.test", "pinned_ip": pinned}, org=org)

    assert not form.is_valid()
    [error] = form.errors["pinned_ip"]
    expected = "Enter a valid IPv4 or IPv6 address." if pinned == "2130706433" else f"{pinned} cannot be audited"
    assert error.startswith(expected), error
    assert not Site.objects.exists()


@pytest.mark.parametrize("text, words", TRICKY_TARGETS, ids=TARGET_IDS)
def test_target_resolution_refuses_every_tricky_target(tricky_dns, text, words):
    """The engines' own check (audit, load test, probe task, verification, AIA): whatever got stored."""
    with pytest.raises(TargetError) as refused:
        resolve_target(text, 443, allow_private=False, resolver=tricky_dns.address)

    assert refused.value.code == "private_target"
    assert all(word in refused.value.message for word in words), refused.value.message
    assert refused.value.message.endswith(PUBLIC_ONLY)


def test_a_name_with_a_public_and_a_private_address_is_refused_whichever_comes_first(tricky_dns):
    with pytest.raises(TargetError) as refused:
        resolve_target("mixed.hostile.test", 443, allow_private=False, resolver=tricky_dns.address)

    assert "addresses: 93.184.215.14, 10.0.0.7" in refused.value.detail   # the public one was first


def test_localhost_is_loopback_without_asking_dns(tricky_dns):
    with pytest.raises(TargetError):
        resolve_target("app.localhost", 443, allow_private=False, resolver=tricky_dns.address)

    assert tricky_dns.queries == []


# --- sites that slipped past the form --------------------------------------------------------------

def queue(path: str, site, user):
    if path == "audit":
        from tlsaudit.audits.services import queue_audit

        return queue_audit(site, user=user)[0]
    if path == "load":
        from tlsaudit.loadtests.services import queue_run

        verify(site)
        return queue_run(site, "load", {"requests": 2, "concurrency": 1}, user=user)
    from tlsaudit.probes.services import queue_probe

    return queue_probe(site, {"runs": 1, "variants": ["https"]}, user=user)


def wait_finished(row, timeout=60.0):
    return waiting.wait_finished(row, timeout, interval=0.1)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path, queue_name", [("audit", "scan"), ("load", "load"), ("probe", "browser")])
def test_a_site_that_slipped_past_the_form_is_refused_by_the_worker_before_any_connection(
        production, tricky_dns, start_worker_on, alice, org_a, path, queue_name):
    from workers.browser.host import HOST

    launches = HOST.launches
    with hostile.trap("127.0.0.2") as (port, trap):
        # Given sites saved without the form's checks: a bulk import (no DNS check) and an admin's pin
        imported = SiteForm(data={"address": f"loopback.hostile.test:{port}"}, org=org_a, check_dns=False)
        assert imported.is_valid(), imported.errors
        named = imported.save()
        pinned = added_site(organization=org_a, hostname="shop.hostile.test", https_port=port,
                                     http_port=port, pinned_ip="127.0.0.2")
        # When the worker takes their audit, load test or probe
        start_worker_on((queue_name,), concurrency=1)
        rows = [wait_finished(queue(path, site, alice)) for site in (named, pinned)]
    # Then each ends refused with the reason, and nothing ever connected to the private address
    assert [(r.status, r.error_code) for r in rows] == [("failed", "private_target")] * 2, \
        [r.error_message for r in rows]
    assert all(r.error_message.startswith(f"{r.site.hostname} resolves to 127.0.0.2, which is a loopback address")
               for r in rows), [r.error_message for r in rows]
    assert trap.accepted == 0
    assert HOST.launches == launches, "no browser is launched for a refused probe"
