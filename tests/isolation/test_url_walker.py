"""Tenant isolation, proved by walking every URL pattern of the app (web and API).

Every pattern must be classified below, so a new URL fails this test until someone decides how
it is protected. For each organization-scoped pattern, filled with Agency A's objects:
  - Charlie (Agency B's owner) gets 404, through Agency A's slug and through his own slug;
  - Agency B's API key gets 404 for every method;
  - Bob (Agency A's viewer) cannot write: POST answers 403 (or 405 where the URL only reads);
  - Agency A's read-only key cannot write: 403 (or 405);
  - anonymous visitors are sent to log in (web) or get 401 (API);
and afterwards Agency A's data is exactly as it was.
"""

from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support.api import client_with, make_key
from tlsaudit.api import keys

# Patterns that belong to no organization (or take a signed token), with why they are safe.
PUBLIC = {
    "home", "healthz", "signup", "login", "logout", "verify_email", "resend_verification", "password_change",
    "password_change_done", "password_reset", "password_reset_done", "password_reset_confirm",
    "password_reset_complete", "orgs:create",
    "orgs:accept",            # a 64-character invitation token, checked against the signed-in email
    "alerts:unsubscribe",     # an HMAC-signed token naming the address and organization
    "api:schema", "api:docs",
}
# Organization-wide API collections: scoped by the key, no object id to swap.
API_COLLECTIONS = {"api:organization", "api:portfolio", "api:site-list", "api:site-bulk", "api:audit-list", "api:audit-bulk",
                   "api:loadtest-list", "api:probe-list", "api:report-list", "api:webhook-list",
                   "api:custom-ca", "api:sites_csv", "api:audits_csv", "api:reports_csv", "api:webhooks_csv",
                   "api:digests", "api:digest-send", "api:nightly-run-now"}
WRITE_METHODS = ("post", "put", "patch", "delete")
# Pages that answer a POST as if it were a GET (they render, change nothing: the snapshot proves it).
RENDERS_ON_POST = {"audits:detail", "loadtests:overview", "loadtests:run", "loadtests:verification",
                   "monitoring:history", "monitoring:portfolio", "probes:detail", "probes:overview",
                   "reports:detail", "sites:detail", "sites:list"}
# Downloads that exist only once a run/probe/report has produced them; their own tests cover them
# with real results. Everywhere else the owner's control request proves the ids are real.
NEEDS_RESULTS = {"loadtests:csv", "probes:csv", "reports:download", "api:report-pdf"}
# What a viewer may start: a PDF of what they can see (#37 item 11). Its test is the one below that counts it.
VIEWER_MAY_ASK = {"reports:request_portfolio", "reports:request_site"}


def kwargs_for(name: str, o: dict) -> dict | None:
    """URL kwargs of pattern `name` filled with Agency A's objects (None: unclassified)."""
    site, audit = {"pk": o["site"].pk}, o["audit"].pk
    table = {
        "orgs:settings": {}, "orgs:invite": {},
        "orgs:revoke_invitation": {"pk": o["invitation"].pk},
        "orgs:change_role": {"pk": o["membership"].pk}, "orgs:remove_member": {"pk": o["membership"].pk},
        "sites:list": {}, "sites:add": {}, "sites:import": {}, "sites:audit_bulk": {}, "sites:audit_cancel_waiting": {},
        "sites:detail": site, "sites:edit": site, "sites:delete": site,
        "audits:run": site, "audits:detail": {**site, "audit_id": audit}, "audits:retry": {**site, "audit_id": audit},
        "loadtests:overview": site, "loadtests:verification": site, "loadtests:verification_check": site,
        "loadtests:start": site, "loadtests:run": {**site, "run_id": o["run"].pk},
        "loadtests:stop": {**site, "run_id": o["run"].pk},
        "loadtests:csv": {**site, "run_id": o["run"].pk, "table": "results"},
        "probes:overview": site, "probes:start": site, "probes:detail": {**site, "probe_id": o["probe"].pk},
        "probes:csv": {**site, "probe_id": o["probe"].pk, "table": "loads"},
        "alerts:settings": {}, "alerts:add_webhook": {},
        "alerts:delete_webhook": {"pk": o["webhook"].pk}, "alerts:test_webhook": {"pk": o["webhook"].pk},
        "alerts:redeliver": {"pk": o["delivery"].pk},
        "reports:request_portfolio": {}, "reports:request_site": site, "reports:branding": {},
        "reports:digests": {}, "reports:digest_send_now": {}, "monitoring:run_next_now": {},
        "reports:detail": {"report_id": o["report"].pk}, "reports:download": {"report_id": o["report"].pk},
        "audit_log": {},
        "monitoring:history": site, "monitoring:schedule": site, "monitoring:portfolio": {},
        "monitoring:window": {},
        "api_keys:list": {}, "api_keys:create": {}, "api_keys:revoke": {"pk": o["key"].pk},
        "api:site-detail": site, "api:site-renewals": site, "api:site-audits": site,
        "api:audit-detail": {"pk": audit},
        "api:audit-diff": {"pk": audit},
        "api:site-loadtests": site, "api:site-handshakes": site, "api:loadtest-detail": {"pk": o["run"].pk},
        "api:loadtest-stop": {"pk": o["run"].pk},
        "api:site-probes": site, "api:probe-detail": {"pk": o["probe"].pk},
        "api:report-detail": {"pk": o["report"].pk}, "api:report-pdf": {"pk": o["report"].pk},
        "api:webhook-detail": {"pk": o["webhook"].pk}, "api:webhook-test": {"pk": o["webhook"].pk},
        "api:webhook-deliveries": {"pk": o["webhook"].pk},
        "api:webhook-redeliver": {"pk": o["webhook"].pk, "delivery_pk": o["delivery"].pk},
        "api:sites_audits_csv": site, "api:sites_loadtests_csv": site, "api:sites_handshakes_csv": site,
        "api:sites_probes_csv": site, "api:webhooks_deliveries_csv": {"pk": o["webhook"].pk},
    }
    if name in API_COLLECTIONS:
        return {}
    return table.get(name)


def patterns(resolvers=None, namespace=""):
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin":
                continue   # Django's admin: staff only, tested by Django
            yield from patterns(entry.url_patterns, namespace + (f"{entry.namespace}:" if entry.namespace else ""))
        elif isinstance(entry, URLPattern) and entry.name:
            yield namespace + entry.name


def org_scoped():
    return sorted({name for name in patterns() if name not in PUBLIC})


@pytest.fixture
def agency_a(org_a, bob, site_a, alice):
    """One object of every kind in Agency A."""
    from tlsaudit.alerts.models import Webhook, WebhookDelivery
    from tlsaudit.audits.models import Audit
    from tlsaudit.loadtests.models import PerfRun
    from tlsaudit.orgs.models import Invitation, Membership
    from tlsaudit.probes.models import Probe
    from tlsaudit.reports.models import Report

    now = timezone.now()
    # Failed audits render without a stored report; the walker is about who may see them.
    audit = Audit.objects.create(site=site_a, organization=org_a, status="failed", error_code="refused",
                                 error_message="Connection refused.", finished_at=now)
    Audit.objects.create(site=site_a, organization=org_a, status="failed", error_code="refused",
                         error_message="Connection refused.", finished_at=now - timedelta(days=1))
    webhook = Webhook.objects.create(organization=org_a, url="https://hooks.example.com/a", secret="s" * 32)
    return {
        "site": site_a, "audit": audit,
        "run": PerfRun.objects.create(site=site_a, organization=org_a, kind="load", status="done"),
        "probe": Probe.objects.create(site=site_a, organization=org_a, status="done"),
        "report": Report.objects.create(organization=org_a, site=site_a, kind="site", status="done"),
        "webhook": webhook,
        "delivery": WebhookDelivery.objects.create(webhook=webhook, status=WebhookDelivery.Status.FAILED),
        "invitation": Invitation.objects.create(organization=org_a, email="new@agency-a.test", invited_by=alice),
        # The owner's membership: a viewer may leave (remove themselves) but not touch others.
        "membership": Membership.objects.get(organization=org_a, user=alice),
        "key": make_key(org_a, keys.READ_WRITE, "a-key")[0],
    }


def snapshot(org) -> dict:
    """Row counts (and names of sites) of everything that belongs to the organization."""
    counts = {}
    for model in apps.get_models():
        field = next((f for f in model._meta.fields if f.name == "organization"), None)
        if field is not None:
            counts[model._meta.label] = model.objects.filter(organization=org).count()
    from tlsaudit.orgs.models import Membership

    counts["roles"] = sorted(Membership.objects.filter(organization=org).values_list("role", flat=True))
    return counts


def url_of(name: str, kwargs: dict, org_slug: str) -> str:
    if name.startswith("api:"):
        return reverse(name, kwargs=kwargs)
    return reverse(name, kwargs={"org": org_slug, **kwargs})


def test_every_url_pattern_is_classified(agency_a):
    unclassified = [name for name in org_scoped() if kwargs_for(name, agency_a) is None]
    assert not unclassified, f"classify these URL patterns in {__file__}: {unclassified}"


def test_the_owner_reaches_every_url_so_the_404s_below_mean_something(client, alice, agency_a):
    org = agency_a["site"].organization
    client.force_login(alice)
    api = client_with(make_key(org, keys.READ_WRITE, "control")[1])
    missing = []
    for name in org_scoped():
        kwargs = kwargs_for(name, agency_a)
        if kwargs is None or name in NEEDS_RESULTS:
            continue
        url = url_of(name, kwargs, org.slug)
        status = (api if name.startswith("api:") else client).get(url).status_code
        if status == 404:
            missing.append(f"GET {url} ({name}) -> 404")
    assert not missing, "\n".join(missing)


def test_another_organization_gets_404_for_everything_of_agency_a(client, charlie, org_b, agency_a):
    before = snapshot(agency_a["site"].organization)
    client.force_login(charlie)
    leaks = []
    for name in org_scoped():
        kwargs = kwargs_for(name, agency_a)
        if kwargs is None or name.startswith("api:"):
            continue
        slugs = [agency_a["site"].organization.slug] + ([org_b.slug] if kwargs else [])
        for slug in slugs:
            url = url_of(name, kwargs, slug)
            for method in ("get", "post"):
                status = getattr(client, method)(url).status_code
                if status not in (404, 405):
                    leaks.append(f"{method.upper()} {url} ({name}) -> {status}")
    assert not leaks, "\n".join(leaks)
    assert snapshot(agency_a["site"].organization) == before


def test_another_organizations_key_gets_404_for_every_object(org_b, agency_a):
    before = snapshot(agency_a["site"].organization)
    api_b = client_with(make_key(org_b, keys.READ_WRITE, "b-key")[1])
    leaks, checked = [], 0
    for name in org_scoped():
        kwargs = kwargs_for(name, agency_a)
        if not name.startswith("api:") or not kwargs:
            continue
        url = url_of(name, kwargs, "")
        for method in ("get", *WRITE_METHODS):
            status = getattr(api_b, method)(url, {}, format="json").status_code
            checked += 1
            if status not in (404, 405):
                leaks.append(f"{method.upper()} {url} ({name}) -> {status}")
    assert not leaks, "\n".join(leaks)
    assert checked >= 20
    assert snapshot(agency_a["site"].organization) == before


def test_a_viewer_cannot_write_anywhere(client, bob, agency_a):
    org = agency_a["site"].organization
    client.force_login(bob)
    for name in org_scoped():   # reads may create default settings rows; reads are allowed
        kwargs = kwargs_for(name, agency_a)
        if kwargs is not None and not name.startswith("api:"):
            client.get(url_of(name, kwargs, org.slug))
    before = snapshot(org)
    wrote = []
    for name in org_scoped():
        kwargs = kwargs_for(name, agency_a)
        if kwargs is None or name.startswith("api:") or name in VIEWER_MAY_ASK:
            continue
        url = url_of(name, kwargs, org.slug)
        status = client.post(url, {"name": "x", "email": "x@x.test", "role": "owner", "url": "https://x.test/"}).status_code
        if status not in (403, 405) and not (status == 200 and name in RENDERS_ON_POST) \
                and not (status == 404 and name in NEEDS_RESULTS):
            wrote.append(f"POST {url} ({name}) -> {status}")
    assert not wrote, "\n".join(wrote)
    assert snapshot(org) == before


def test_a_viewer_may_ask_for_pdfs_and_nothing_else_changes(client, bob, agency_a):
    org = agency_a["site"].organization
    client.force_login(bob)
    before = snapshot(org)
    for name in sorted(VIEWER_MAY_ASK):
        assert client.post(url_of(name, kwargs_for(name, agency_a), org.slug)).status_code == 302, name
    after = snapshot(org)
    assert after.pop("reports.Report") == before.pop("reports.Report") + 2
    assert after == before


def test_a_read_only_key_cannot_write_anywhere(agency_a):
    org = agency_a["site"].organization
    before = snapshot(org)
    api_ro = client_with(make_key(org, keys.READ_ONLY, "ro")[1])
    before["api.ApiKey"] += 1
    wrote = []
    for name in org_scoped():
        kwargs = kwargs_for(name, agency_a)
        if not name.startswith("api:") or kwargs is None:
            continue
        for method in WRITE_METHODS:
            status = getattr(api_ro, method)(url_of(name, kwargs, ""), {}, format="json").status_code
            if status not in (403, 405):
                wrote.append(f"{method.upper()} {url_of(name, kwargs, '')} ({name}) -> {status}")
    assert not wrote, "\n".join(wrote)
    assert snapshot(org) == before


def test_anonymous_visitors_are_sent_to_log_in_or_get_401(client, agency_a):
    org = agency_a["site"].organization
    wrong = []
    for name in org_scoped():
        kwargs = kwargs_for(name, agency_a)
        if kwargs is None:
            continue
        url = url_of(name, kwargs, org.slug)
        if name.startswith("api:"):
            status = APIClient().get(url).status_code
            ok = status == 401
        else:
            response = client.get(url)
            status = response.status_code
            ok = status == 302 and reverse("login") in response["Location"] or status == 405
        if not ok:
            wrong.append(f"GET {url} ({name}) -> {status}")
    assert not wrong, "\n".join(wrong)
