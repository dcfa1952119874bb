"""Every page, fetched by each persona, is served under the Content-Security-Policy and holds nothing
that policy would block: no inline script (json_script data blocks excepted), no on*= handler, no
style="" or <style>. Browser-side proof (charts drawn, no CSP violation in the console) is in tests/e2e.

ROUTES names a way to fill every URL of the app; a new URL without an entry fails
test_every_route_is_covered, so new pages join the check as they are written."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.security.htmlcheck import directives, inline_code
from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.alerts.services import unsubscribe_token
from tlsaudit.audits.models import Audit
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.orgs.models import Invitation
from tlsaudit.probes.models import Probe
from tlsaudit.reports.models import Report

pytestmark = pytest.mark.django_db

# Not HTML of ours: the JSON API (its docs UIs are third-party pages, see test_api_docs_pages_have_no_inline_script)
# and Django's admin (staff only, Django's own templates; checked in test_the_admin_is_under_the_policy_too).
SKIPPED_PREFIXES = ("api/", "admin/")
# Third-party documentation UIs that inject <style> themselves; scripts are still checked.
STYLE_EXEMPT = ("api:docs",)


def all_routes():
    def walk(patterns, prefix="", namespace=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
                yield from walk(p.url_patterns, prefix + str(p.pattern), ns)
            elif isinstance(p, URLPattern) and p.name:
                yield prefix + str(p.pattern), namespace + p.name
    return list(walk(get_resolver().url_patterns))


@pytest.fixture
def world(alice, bob, org_a, site_a, done_audit):
    """Agency A with one of everything a page can show."""
    audit = done_audit(site_a)
    failed = Audit.objects.create(site=site_a, organization=org_a, status="failed", error_code="connect_refused",
                                  error_message="The server refused the connection.")
    probe = Probe.objects.create(site=site_a, organization=org_a, status="running", loads_total=8, loads_done=3,
                                 params={"path": "/", "runs": 2, "variants": ["https", "http"]})
    run = PerfRun.objects.create(site=site_a, organization=org_a, kind="load", status="running", work_total=100,
                                 work_done=40, params={"scheme": "https", "requests": 100, "concurrency": 2})
    report = Report.objects.create(organization=org_a, site=site_a, kind="site", status="queued")
    hook = Webhook.objects.create(organization=org_a, url="https://hooks.example.com/tlsaudit")
    delivery = WebhookDelivery.objects.create(webhook=hook, status=WebhookDelivery.Status.FAILED)
    invitation = Invitation.objects.create(organization=org_a, email="eve@agency-a.test", invited_by=alice)
    membership = org_a.memberships.get(user=bob)
    return {"org": org_a, "site": site_a, "audit": audit, "failed": failed, "probe": probe, "run": run,
            "report": report, "hook": hook, "delivery": delivery, "invitation": invitation, "membership": membership}


def site_kwargs(w, **extra):
    return {"org": w["org"].slug, "pk": w["site"].pk, **extra}


def org_kwargs(w, **extra):
    return {"org": w["org"].slug, **extra}


# route name -> kwargs from the world (None: no kwargs)
ROUTES = {
    "home": None, "healthz": None, "signup": None, "login": None, "logout": None,
    "verify_email": lambda w: {"token": "not-a-valid-token"},
    "resend_verification": None, "password_change": None, "password_change_done": None, "password_reset": None,
    "password_reset_done": None, "password_reset_complete": None,
    "password_reset_confirm": lambda w: {"uidb64": "MQ", "token": "set-password"},
    "orgs:create": None,
    "orgs:accept": lambda w: {"token": w["invitation"].token},
    "orgs:settings": org_kwargs, "orgs:invite": org_kwargs,
    "orgs:revoke_invitation": lambda w: org_kwargs(w, pk=w["invitation"].pk),
    "orgs:change_role": lambda w: org_kwargs(w, pk=w["membership"].pk),
    "orgs:remove_member": lambda w: org_kwargs(w, pk=w["membership"].pk),
    "sites:list": org_kwargs, "sites:add": org_kwargs, "sites:import": org_kwargs, "sites:audit_bulk": org_kwargs,
    "sites:audit_cancel_waiting": org_kwargs,
    "sites:detail": site_kwargs, "sites:edit": site_kwargs, "sites:delete": site_kwargs,
    "audits:run": site_kwargs,
    "audits:detail": lambda w: site_kwargs(w, audit_id=w["audit"].pk),
    "audits:retry": lambda w: site_kwargs(w, audit_id=w["failed"].pk),
    "loadtests:overview": site_kwargs, "loadtests:verification": site_kwargs,
    "loadtests:verification_check": site_kwargs, "loadtests:start": site_kwargs,
    "loadtests:run": lambda w: site_kwargs(w, run_id=w["run"].pk),
    "loadtests:stop": lambda w: site_kwargs(w, run_id=w["run"].pk),
    "loadtests:csv": lambda w: site_kwargs(w, run_id=w["run"].pk, table="summary"),
    "probes:overview": site_kwargs, "probes:start": site_kwargs,
    "probes:detail": lambda w: site_kwargs(w, probe_id=w["probe"].pk),
    "probes:csv": lambda w: site_kwargs(w, probe_id=w["probe"].pk, table="loads"),
    "alerts:settings": org_kwargs, "alerts:add_webhook": org_kwargs,
    "alerts:delete_webhook": lambda w: org_kwargs(w, pk=w["hook"].pk),
    "alerts:test_webhook": lambda w: org_kwargs(w, pk=w["hook"].pk),
    "alerts:redeliver": lambda w: org_kwargs(w, pk=w["delivery"].pk),
    "alerts:unsubscribe": lambda w: org_kwargs(w, token=unsubscribe_token("ops@agency-a.test", w["org"].pk)),
    "reports:request_portfolio": org_kwargs, "reports:request_site": site_kwargs, "reports:branding": org_kwargs,
    "reports:digests": org_kwargs, "reports:digest_send_now": org_kwargs,
    "reports:detail": lambda w: org_kwargs(w, report_id=w["report"].pk),
    "reports:download": lambda w: org_kwargs(w, report_id=w["report"].pk),
    "audit_log": org_kwargs,
    "monitoring:history": site_kwargs, "monitoring:schedule": site_kwargs,
    "monitoring:portfolio": org_kwargs, "monitoring:window": org_kwargs, "monitoring:run_next_now": org_kwargs,
    "api_keys:list": org_kwargs, "api_keys:create": org_kwargs,
    "api_keys:revoke": lambda w: org_kwargs(w, pk=1),
}
# Partials htmx polls or swaps in; fetched again with HX-Request.
HTMX_ROUTES = ["sites:list", "audits:detail", "probes:detail", "loadtests:run", "reports:detail"]


def ours():
    return [(route, name) for route, name in all_routes() if not route.startswith(SKIPPED_PREFIXES)]


def url_of(name, world):
    kwargs = ROUTES[name]
    return reverse(name, kwargs=kwargs(world) if kwargs else None)


def assert_policy(response, where):
    header = response.get("Content-Security-Policy")
    assert header, f"{where}: no Content-Security-Policy header"
    policy = directives(header)
    assert policy["script-src"] == ["'self'"], f"{where}: script-src {policy['script-src']}"
    assert policy["style-src"] == ["'self'"], f"{where}: style-src {policy['style-src']}"
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["default-src"] == ["'self'"]
    assert "'unsafe-inline'" not in header and "'unsafe-eval'" not in header


def assert_no_inline_code(response, where, allow_styles=False):
    if "text/html" not in response.get("Content-Type", ""):
        return
    problems = inline_code(response.content.decode(), allow_styles=allow_styles)
    assert not problems, f"{where}: {problems}"


def test_every_route_is_covered():
    missing = [name for _, name in ours() if name not in ROUTES]
    assert not missing, f"add these URL names to ROUTES in {__file__}: {missing}"


@pytest.mark.parametrize("persona", ["alice", "bob", "anonymous"])
def test_every_page_is_served_under_the_policy_with_no_inline_code(client, login, world, persona, request):
    if persona != "anonymous":
        client = login(request.getfixturevalue(persona))
    seen = 0
    for _, name in ours():
        url = url_of(name, world)
        response = client.get(url)
        where = f"{persona} GET {url} ({name}) -> {response.status_code}"
        assert response.status_code < 500, where
        assert_policy(response, where)
        assert_no_inline_code(response, where)
        seen += response.status_code == 200 and "text/html" in response.get("Content-Type", "")
    # The page count guards the guard: a broken world fixture would otherwise check only error pages.
    assert seen >= {"alice": 26, "bob": 21, "anonymous": 9}[persona], f"only {seen} HTML pages were checked"


def test_htmx_partials_have_no_inline_code(login, alice, world):
    client = login(alice)
    for name in HTMX_ROUTES:
        url = url_of(name, world)
        response = client.get(url, HTTP_HX_REQUEST="true")
        assert response.status_code == 200, url
        assert_no_inline_code(response, f"htmx GET {url}")


def test_pages_after_a_post_have_no_inline_code(login, alice, world, webhook_receiver):
    """The pages only a POST renders: a form with errors, the one-time webhook secret."""
    client = login(alice)
    org = world["org"].slug
    for url, data in [(reverse("sites:add", args=[org]), {"hostname": "not a host!"}),
                      (reverse("orgs:invite", args=[org]), {"email": "nope", "role": "boss"}),
                      (reverse("alerts:add_webhook", args=[org]), {"url": webhook_receiver.url}),
                      (reverse("orgs:settings", args=[org]), {"name": "", "custom_ca_pem": "junk"})]:
        response = client.post(url, data)
        assert response.status_code in (200, 400), (url, response.status_code)
        assert_policy(response, f"POST {url}")
        assert_no_inline_code(response, f"POST {url}")


def test_error_pages_are_under_the_policy(client, login, bob, world):
    not_found = client.get("/no/such/page/")
    forbidden = login(bob).post(reverse("sites:delete", args=[world["org"].slug, world["site"].pk]))
    for response in (not_found, forbidden):
        assert response.status_code in (403, 404)
        assert_policy(response, response.request["PATH_INFO"])
        assert_no_inline_code(response, response.request["PATH_INFO"])


def test_the_500_page_has_no_inline_code():
    from django.template.loader import render_to_string

    assert inline_code(render_to_string("500.html")) == []


def test_the_admin_is_under_the_policy_too(client, world):
    from django.contrib import admin

    from tests.support.personas import make_user

    client.force_login(make_user("root@tlsaudit.test", is_staff=True, is_superuser=True))
    urls = [reverse("admin:index")] + [reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist")
                                       for m in admin.site._registry]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert_policy(response, url)
        assert_no_inline_code(response, url)


def test_api_docs_pages_have_no_inline_script(client):
    for _, name in all_routes():
        if name in STYLE_EXEMPT:
            response = client.get(reverse(name))
            assert response.status_code == 200, name
            assert response.get("Content-Security-Policy"), name
            assert_no_inline_code(response, name, allow_styles=True)


def test_base_configures_htmx_for_the_policy(client, db):
    html = client.get(reverse("login")).content.decode()
    assert '<meta name="htmx-config" content=\'{"includeIndicatorStyles": false, "allowEval": false}\'>' in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


@pytest.mark.parametrize("html, problem", [
    ("<script>alert(1)</script>", "inline script <script>"),
    ('<script type="text/javascript" id="x">1</script>', "inline script <script id=x>"),
    ('<script type="module">1</script>', "inline script <script>"),
    ('<button onclick="go()">', "event handler onclick= on <button>"),
    ('<img src=x onerror=alert(1)>', "event handler onerror= on <img>"),
    ('<div style="width: 3%">', "style= attribute on <div>"),
    ("<style>p{}</style>", "<style> element <style>"),
    ('<a href=" JavaScript:alert(1)">', "javascript: URL in href= on <a>"),
    ('<div hx-on:click="x()">', "hx-on:click= (htmx eval) on <div>"),
])
def test_the_checker_finds_what_the_policy_blocks(html, problem):
    assert inline_code(html) == [problem]


def test_the_checker_lets_data_blocks_and_static_scripts_through():
    html = ('<script src="/static/js/app.js" defer></script><script id="d" type="application/json">{"a": 1}'
            '</script><progress value="3" max="100"></progress><a href="/x">x</a>')
    assert inline_code(html) == []
