"""Issue #17 items 5 and 7: bulk audits from the site list, rows told apart, host first, pasted lines with an IP.

Personas: alice owns Agency A, bob is its viewer, charlie owns Agency B."""

import html
import re

from django.urls import reverse
from django.utils import timezone

from tests.support.sites import added_site
from tlsaudit.audits.models import Audit
from tlsaudit.sites.models import Site


def text(response) -> str:
    return html.unescape(response.content.decode())


def lab_sites(org, user, count=3):
    """lab.test on several ports, all pinned to one address: the case where rows looked alike."""
    return [added_site(organization=org, hostname="lab.test", https_port=8443 + i, pinned_ip="127.0.0.1",
                                created_by=user) for i in range(count)]


def bulk(client, org, **data):
    return client.post(reverse("sites:audit_bulk", args=[org.slug]), data, follow=True)


# --- audit all / audit selected ----------------------------------------------------------------

def test_audit_selected_queues_one_audit_per_ticked_site_through_the_queue(
        login, alice, org_a, site_b, django_capture_on_commit_callbacks):
    first, second, third = lab_sites(org_a, alice)
    client = login(alice)
    with django_capture_on_commit_callbacks() as sent:
        # Charlie's site id rides along: it is not in Agency A, so it matches nothing.
        page = text(bulk(client, org_a, scope="selected", site=[first.pk, third.pk, site_b.pk]))
    queued = Audit.objects.filter(status="queued")
    assert sorted(queued.values_list("site_id", flat=True)) == sorted([first.pk, third.pk])
    assert len(sent) == 2, "each audit is sent by core.queue.enqueue once the transaction commits"
    assert all(a.requested_by == alice and a.trigger == "manual" for a in queued)
    assert "2 audits queued." in page
    assert not Audit.objects.filter(site=site_b).exists()


def test_audit_all_skips_running_audits_and_puts_the_rest_in_line_past_the_hourly_limit(login, alice, org_a,
                                                                                         settings):
    sites = lab_sites(org_a, alice, count=4)
    client = login(alice)
    settings.AUDIT_LIMIT_PER_ORG_HOUR = 3
    before = text(client.get(reverse("sites:list", args=[org_a.slug])))
    assert "starts at most 3 audits an hour on demand (nightly audits do not count): 3 left this hour" in before
    page = text(bulk(client, org_a, scope="all", site=[]))
    assert Audit.objects.filter(organization=org_a).count() == 3      # one click each would have stopped there too
    assert "3 audits queued." in page and "not started" not in page
    assert "1 audit waits for a free slot: it starts as the hour frees up (3 an hour" in page
    assert page.count('data-testid="audit-waiting"') == 1
    page = text(bulk(client, org_a, scope="all"))
    assert "4 already queued, running or waiting" in page and Audit.objects.count() == 3
    assert len(sites) == 4


def test_nothing_ticked_says_so(login, alice, org_a):
    lab_sites(org_a, alice, count=1)
    page = text(bulk(login(alice), org_a, scope="selected"))
    assert "Tick the sites to audit first" in page and not Audit.objects.exists()


def test_a_viewer_cannot_bulk_audit_and_sees_no_checkboxes(login, bob, alice, org_a):
    site, = lab_sites(org_a, alice, count=1)
    client = login(bob)
    assert client.post(reverse("sites:audit_bulk", args=[org_a.slug]), {"scope": "all"}).status_code == 403
    page = text(client.get(reverse("sites:list", args=[org_a.slug])))
    assert 'name="site"' not in page and "Audit all" not in page
    assert not Audit.objects.exists()


def test_an_unverified_user_cannot_bulk_audit(login, alice, org_a):
    lab_sites(org_a, alice, count=1)
    alice.email_verified = False
    alice.save()
    page = text(bulk(login(alice), org_a, scope="all"))
    assert "Verify your email address" in page and not Audit.objects.exists()


# --- clearer rows -----------------------------------------------------------------------------

def test_rows_on_one_address_show_port_pinned_ip_and_when_last_audited(login, alice, org_a):
    first, second, _ = lab_sites(org_a, alice)
    Site.objects.filter(pk=first.pk).update(last_audit_at=timezone.now() - timezone.timedelta(hours=3))
    page = text(login(alice).get(reverse("sites:list", args=[org_a.slug])))
    origins = re.findall(r'data-testid="site-origin"><a href="[^"]+">([^<]+)</a>', page)
    assert origins == ["lab.test:8443", "lab.test:8444", "lab.test:8445"]
    assert page.count("scanned at 127.0.0.1 (pinned)") == 3
    last = re.findall(r'data-testid="last-audited">(.*?)</td>', page)
    assert "3\xa0hours ago" in last[0] and last[1:] == ["never", "never"]
    assert f'name="site" value="{second.pk}" form="bulk-audit"' in page


def test_the_list_sorts_by_last_audited(login, alice, org_a):
    first, second, third = lab_sites(org_a, alice)
    Site.objects.filter(pk=second.pk).update(last_audit_at=timezone.now())
    Site.objects.filter(pk=third.pk).update(last_audit_at=timezone.now() - timezone.timedelta(days=2))
    page = text(login(alice).get(reverse("sites:list", args=[org_a.slug]) + "?sort=-audited"))
    assert re.findall(r'data-testid="site-origin"><a href="[^"]+">([^<]+)</a>', page) == [
        "lab.test:8444", "lab.test:8445", "lab.test:8443"]


# --- add-site form and pasted lists -------------------------------------------------------------

def test_the_add_form_asks_for_the_host_name_first(login, alice, org_a):
    page = text(login(alice).get(reverse("sites:add", args=[org_a.slug])))
    fields = re.findall(r'<(?:input|textarea|select)[^>]*name="(\w+)"', page)
    fields = [f for f in fields if f != "csrfmiddlewaretoken"]
    assert fields[0] == "address", fields
    assert fields.index("https_port") < fields.index("pinned_ip")


def test_a_pasted_list_carries_a_pinned_ip_per_line_and_keeps_rejected_lines(login, alice, org_a):
    pasted = "\n".join([
        "lab.test:8443 127.0.0.1",
        "lab.test:9443   127.0.0.1",          # any run of spaces
        "https://shop.lab.test/ 127.0.0.2",
        "plain.lab.test",
        "bad.lab.test 999.1.1.1",
        "two words here",
        "lab.test:8443 127.0.0.1",            # a duplicate of the first line
    ])
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]), {"lines": pasted})
    page = text(response)
    assert "4 added, 3 rejected" in page
    sites = set(Site.objects.filter(organization=org_a).values_list("hostname", "https_port", "pinned_ip"))
    assert sites == {("lab.test", 8443, "127.0.0.1"), ("lab.test", 9443, "127.0.0.1"),
                     ("shop.lab.test", 443, "127.0.0.2"), ("plain.lab.test", 443, None)}
    assert "Added lab.test:8443 (scanned at 127.0.0.1)." in page
    assert "'999.1.1.1' is not an IP address" in page
    assert "3 words: a line is host[:port], then optionally a space and the IP to scan" in page
    assert "lab.test:8443 is already in this organization" in page
    # The rejected lines, as typed, are back in the box; the added ones are not.
    box = re.search(r'<textarea name="lines"[^>]*>(.*?)</textarea>', page, re.S).group(1).strip()
    assert box.splitlines() == ["bad.lab.test 999.1.1.1", "two words here", "lab.test:8443 127.0.0.1"]


def test_a_pasted_private_ip_is_refused_in_production(login, alice, org_a, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    page = text(login(alice).post(reverse("sites:import", args=[org_a.slug]), {"lines": "lab.example 10.0.0.5"}))
    assert "0 added, 1 rejected" in page and "10.0.0.5 cannot be audited" in page
    assert not Site.objects.filter(organization=org_a).exists()
