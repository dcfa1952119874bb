"""Attacks on the ownership proof (issue 14): a site that does not serve our file must stay unverified
however it answers. Real servers on 127.0.0.1: soft-404s that echo what they are asked (the path, the
query, the whole request, in text, HTML or a header), look-alike files, redirects off the site,
look-alike TXT records, and sites edited after their proof. Each table ends with controls that pass.
"""

from __future__ import annotations

import re
from html import escape

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.hostile import closed_port
from tests.support.loadtests import dns_server, http_server
from tests.support.sites import added_site
from tlsaudit.loadtests import checks, services
from tlsaudit.loadtests.models import new_secret
from tlsaudit.loadtests.verification import check_now, verification_for
from tlsaudit.sites.models import Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def org(db):
    """An organization without members: these tests need no login (and no password hashing)."""
    from tlsaudit.orgs.models import Organization

    return Organization.objects.create(name="Agency A")


def another_value() -> str:
    """What another organization proving the same host publishes."""
    return f"tlsaudit-verification={new_secret()}"


def local_site(org, http_port=1, hostname="localhost", pinned_ip="127.0.0.1"):
    return added_site(organization=org, hostname=hostname, http_port=http_port, https_port=closed_port(),
                               pinned_ip=pinned_ip)


def check_http(site, routes, fallback=None, requests=None):
    with http_server(routes, fallback, requests) as port:
        site.http_port = port
        site.save()
        return check_now(site, "http")


# --- soft-404s that echo the request ----------------------------------------------------------

def name_id(request) -> str:
    """What a server that answers every /.well-known/tlsaudit-<id>.txt with "its own" token would send."""
    found = re.search(r"tlsaudit-([^/?]+)\.txt", request.path)
    return found.group(1) if found else ""


def search_page(request):
    query = request.path.partition("?q=")[2]
    return (200, {"Content-Type": "text/plain"}, query) if query else \
        (302, {"Location": f"/search?q={request.path}"}, b"")


ECHOES = {
    "path in a text soft-404": lambda r: (200, {"Content-Type": "text/plain"}, f"Not found: {r.path}\n"),
    "the path alone": lambda r: (200, {}, r.path),
    "each path segment on a line": lambda r: (200, {}, "\n".join(r.path.split("/"))),
    "the file name's id alone": lambda r: (200, {}, name_id(r)),
    "the file name's id as a verification line": lambda r: (200, {}, f"tlsaudit-verification={name_id(r)}"),
    "path in an HTML soft-404": lambda r: (200, {"Content-Type": "text/html"},
                                           f"<html><body><h1>{escape(r.path)}</h1>\n<p>{name_id(r)}</p></body></html>"),
    "path in a header": lambda r: (200, {"X-Requested-Path": r.path}, "ok"),
    "the whole request": lambda r: (200, {}, r.raw),
    "a search page echoing its query": search_page,
}


@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
def test_a_server_that_echoes_the_request_does_not_pass(org, echo):
    site = local_site(org)
    requests = []

    verification = check_http(site, {}, echo, requests)

    assert not verification.is_verified, verification.last_error
    assert requests, "the check asked the server"
    # Nothing we send carries the secret: no echo of it can ever contain it.
    assert all(verification.secret not in request.raw.decode() for request in requests)
    assert verification.public_id in requests[0].path


# --- the file's content: one line that equals the value, nothing else --------------------------

def file_content_cases(value: str, other: str) -> dict:
    return {
        # refused
        "the value inside a longer line": (f"xx {value}", False),
        "the value with a suffix": (f"{value}0", False),
        "the value in an HTML page": (f"<html><body><pre>{value}</pre></body></html>", False),
        "the value on its own line of an HTML page": (f"<html>\n<body>\n{value}\n</body>\n</html>", False),
        "the value, then another line": (f"{value}\nhello", False),
        "the secret without the prefix": (value.split("=", 1)[1], False),
        "another organization's line only": (other, False),
        "the value in upper case": (value.upper(), False),
        "a no-break space after the value": (f"{value}\u00a0", False),
        "a NUL after the value": (f"{value}\0", False),
        "an empty file": ("", False),
        "not UTF-8": (b"\xff\xfe" + value.encode("utf-16-le"), False),
        # accepted
        "the value": (value, True),
        "the value and a newline": (f"{value}\n", True),
        "CRLF, spaces and tabs around it": (f"\r\n  \t{value} \t\r\n\r\n", True),
        "a UTF-8 byte order mark first": (b"\xef\xbb\xbf" + value.encode(), True),
        "one line per organization": (f"{other}\n{value}\n", True),
        "the value twice": (f"{value}\n{value}", True),
    }


CASES = list(file_content_cases("tlsaudit-verification=v", "o"))


@pytest.mark.parametrize("case", CASES)
def test_the_file_must_hold_only_verification_lines_and_one_must_equal_the_value(org, case):
    site = local_site(org)
    verification = verification_for(site)
    body, passes = file_content_cases(verification.file_content, another_value())[case]

    verification = check_http(site, {verification.file_path: (200, {}, body)})

    assert verification.is_verified == passes, verification.last_error
    if not passes:
        assert "HTTP file:" in verification.last_error and verification.file_content in verification.last_error


def test_the_message_says_what_is_wrong_with_the_file(org):
    site = local_site(org)
    verification = verification_for(site)
    value = verification.file_content

    assert "line 1 is not a verification line" in check_http(site, {verification.file_path: (200, {}, f"x{value}")}
                                                             ).last_error
    assert "none of them is this site's" in check_http(site, {verification.file_path: (200, {}, "tlsaudit-"
                                                       "verification=0123456789abcdef0123")}).last_error
    assert "is empty" in check_http(site, {verification.file_path: (200, {}, " \n")}).last_error


# --- redirects: only to the same host, on the scheme's own port ---------------------------------

def redirect_cases(site, file_path: str, other_port: int) -> dict:
    port = site.http_port
    return {
        "another host": (f"http://evil.example{file_path}", "another host"),
        "another port of the same host": (f"http://localhost:{other_port}{file_path}", "another port"),
        "https on the http port": (f"https://localhost:{port}{file_path}", "another port"),
        "user info before the site": (f"http://evil.example@localhost:{port}/ok", "user name"),
        "the site as user info": (f"http://localhost:{port}@evil.example/ok", "another host"),
        "scheme-relative": ("//evil.example/ok", "another host"),
        "a backslash": ("/\\evil.example/ok", "not a plain URL"),
        "a broken IPv6 literal": ("http://[::1/ok", "not a plain URL"),
        "a port out of range": (f"http://localhost:{port + 65536}/ok", "not a plain URL"),
        "a space": (f"/ok {file_path}", "not a plain URL"),
        "file:": ("file:///etc/passwd", "http or https"),
        "javascript:": ("javascript:alert(1)", "http or https"),
    }


@pytest.mark.parametrize("case", list(redirect_cases(Site(http_port=1), "/f", 2)))
def test_a_redirect_off_the_site_is_not_followed(org, case):
    site = local_site(org)
    verification = verification_for(site)
    good = (200, {}, verification.file_content)
    routes, requests = {"/ok": good}, []
    with http_server({verification.file_path: good, "/ok": good}, requests=requests) as other_port, \
            http_server(routes, requests=requests) as port:
        site.http_port = port
        site.save()
        location, message = redirect_cases(site, verification.file_path, other_port)[case]
        routes[verification.file_path] = (302, {"Location": location}, b"")
        verification = check_now(site, "http")

    assert not verification.is_verified
    assert message in verification.last_error, verification.last_error
    assert [r.path for r in requests] == [verification.file_path], "nothing but the file was asked for"


@pytest.mark.parametrize("location", ["moved.txt", "/.well-known/moved.txt", "http://LOCALHOST:{port}/.well-known/"
                                      "moved.txt", "./moved.txt?v=1"])
def test_a_redirect_within_the_site_is_followed(org, location):
    site = local_site(org)
    verification = verification_for(site)
    routes = {"/.well-known/moved.txt": (200, {}, verification.file_content)}
    with http_server(routes) as port:
        routes[verification.file_path] = (301, {"Location": location.format(port=port)}, b"")
        site.http_port = port
        site.save()
        verification = check_now(site, "http")

    assert verification.is_verified, verification.last_error


def test_a_redirect_loop_ends_with_a_reason(org):
    site = local_site(org)
    path = verification_for(site).file_path
    verification = check_http(site, {path: (302, {"Location": path}, b"")})
    assert not verification.is_verified and "more than 3 redirects" in verification.last_error


# --- DNS TXT: one record must equal the value ---------------------------------------------------

def txt_cases(value: str, other: str) -> dict:
    return {
        "the value inside a longer record": ([f"x {value} y"], False),
        "the value with a suffix": ([f"{value}0"], False),
        "the value in upper case": ([value.upper()], False),
        "the secret without the prefix": ([value.split("=", 1)[1]], False),
        "another organization's record only": ([other], False),
        "the value split over two records": ([value[:20], value[20:]], False),
        "the value": ([value], True),
        "the value split over two strings of one record": ([(value[:20], value[20:])], True),
        "spaces around the value": ([f"  {value} "], True),
        "one record per organization, and SPF": ([other, "v=spf1 -all", value], True),
    }


@pytest.mark.parametrize("case", list(txt_cases("tlsaudit-verification=v", "o")))
def test_the_txt_record_must_equal_the_value(org, settings, case):
    site = local_site(org, http_port=closed_port(), hostname="shop.example.com", pinned_ip=None)
    verification = verification_for(site)
    records, passes = txt_cases(verification.txt_value, another_value())[case]
    with dns_server({"_tlsaudit.shop.example.com": records}) as (port, _):
        settings.DNS_RESOLVER = ("127.0.0.1", port)
        verification = check_now(site, "dns")
    assert verification.is_verified == passes, verification.last_error


def test_a_pinned_site_cannot_be_proven_by_dns(org, settings):
    """The record proves control of the name; the load would go to the pinned address."""
    site = local_site(org, http_port=closed_port(), hostname="shop.example.com", pinned_ip="127.0.0.1")
    verification = verification_for(site)
    with dns_server({"_tlsaudit.shop.example.com": [verification.txt_value]}) as (port, queries):
        settings.DNS_RESOLVER = ("127.0.0.1", port)
        verification = check_now(site, "dns")
    assert not verification.is_verified
    assert "pinned to 127.0.0.1" in verification.last_error and "serve the file" in verification.last_error
    assert queries == []


# --- a proof covers the host name, ports and pinned IP it was made for ---------------------------

def proven_site(org):
    site = local_site(org)
    verification = verification_for(site)
    assert check_http(site, {verification.file_path: (200, {}, verification.file_content)}).is_verified
    return Site.objects.get(pk=site.pk)


@pytest.mark.parametrize("change", [{"pinned_ip": "127.0.0.2"}, {"hostname": "victim.example"},
                                    {"https_port": 8443}, {"http_port": 8080}, {"pinned_ip": None}])
def test_changing_where_the_load_goes_withdraws_the_proof(org, change):
    site = proven_site(org)
    for name, value in change.items():
        setattr(site, name, value)
    site.save()

    verification = verification_for(site)
    assert not verification.is_verified and verification.site_changed
    with pytest.raises(checks.RunRefused) as refused:
        services.queue_run(site, "load", {"requests": 2, "concurrency": 1})
    assert refused.value.code == "unverified" and "changed since" in refused.value.message


def test_renaming_the_site_keeps_the_proof(org):
    site = proven_site(org)
    site.name = "Shop (renamed)"
    site.save()
    assert verification_for(site).is_verified


def test_the_site_form_and_the_api_edit_withdraw_it_too(org):
    from tests.support.api import client_with, make_key
    from tlsaudit.sites.forms import SiteForm

    site = proven_site(org)
    form = SiteForm(data={"address": f"localhost:{site.https_port}", "http_port": str(site.http_port),
                          "pinned_ip": "127.0.0.3"}, instance=site, org=org)
    assert form.is_valid(), form.errors
    form.save()
    assert not verification_for(Site.objects.get(pk=site.pk)).is_verified

    site = proven_site(org)
    api = client_with(make_key(org)[1])
    assert api.patch(f"/api/v1/sites/{site.pk}/", {"pinned_ip": "127.0.0.4"}, format="json").status_code == 200
    assert not verification_for(Site.objects.get(pk=site.pk)).is_verified


# --- every door that starts a run honours the proof ----------------------------------------------

def test_an_echoing_site_cannot_be_load_tested_from_the_web_or_the_api(login, alice, org_a):
    """Given a site whose soft-404 echoes the path, when its (attacker) owner presses "Check now" and
    starts runs from the page and the API, then every start is refused; serving the file unlocks them."""
    from tests.support.api import client_with, make_key
    from tlsaudit.loadtests.models import PerfRun

    site = local_site(org_a)
    web, api = login(alice), client_with(make_key(org_a)[1])
    args = [org_a.slug, site.pk]
    routes = {}
    with http_server(routes, ECHOES["the file name's id as a verification line"]) as port:
        site.http_port = port
        site.save()
        check = web.post(reverse("loadtests:verification_check", args=args), {"method": "http"}, follow=True)
        assert "Not verified yet" in check.content.decode()

        page = web.post(reverse("loadtests:start", args=args), {"kind": "load", "requests": 20, "concurrency": 2})
        load = api.post(f"/api/v1/sites/{site.pk}/loadtests/", {"kind": "load", "requests": 20, "concurrency": 2},
                        format="json")
        shakes = api.post(f"/api/v1/sites/{site.pk}/handshakes/", {"versions": ["1.3"], "agents_levels": [2],
                                                                    "per_agent": 3}, format="json")
        assert page.status_code == 400 and "is not verified" in page.content.decode()
        assert [(r.status_code, r.json()["error"]["code"]) for r in (load, shakes)] == [(409, "unverified")] * 2
        assert PerfRun.objects.count() == 0

        verification = verification_for(site)
        routes[verification.file_path] = (200, {}, verification.file_content)
        web.post(reverse("loadtests:verification_check", args=args), {"method": "http"})
        load = api.post(f"/api/v1/sites/{site.pk}/loadtests/", {"kind": "load", "requests": 20, "concurrency": 2},
                        format="json")
    assert load.status_code == 202, load.content


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_run_queued_before_the_site_was_repointed_sends_nothing(start_worker_on, org_a):
    """The proof holds when the run is queued; the site is pinned elsewhere before a worker takes it."""
    from tests import hostile
    from tests.ssrf.test_targets import wait_finished

    site = proven_site(org_a)
    with hostile.trap("127.0.0.2", site.http_port) as (_, trap):
        run = services.queue_run(site, "load", {"requests": 2, "concurrency": 1, "scheme": "http"})
        Site.objects.filter(pk=site.pk).update(pinned_ip="127.0.0.2")   # even behind the form's back
        start_worker_on(("load",), concurrency=1)
        run = wait_finished(run)

    assert (run.status, run.error_code) == ("failed", "unverified"), run.error_message
    assert "changed since its owner proved control" in run.error_message and "No load was sent" in run.error_message
    assert trap.accepted == 0


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_run_queued_before_the_site_became_another_service_sends_nothing(start_worker_on, org_a):
    """The outside review: applicability was checked only at queue time. A load run queued while the site
    was HTTPS, then the site edited to IMAPS on the same ports (the proof still holds): the worker
    refuses it, and the server sees no request."""
    from tests import hostile
    from tests.ssrf.test_targets import wait_finished

    site = proven_site(org_a)
    with hostile.trap("127.0.0.1", site.http_port) as (_, trap):
        run = services.queue_run(site, "load", {"requests": 2, "concurrency": 1, "scheme": "http"})
        Site.objects.filter(pk=site.pk).update(service="imaps")   # even behind the form's back
        start_worker_on(("load",), concurrency=1)
        run = wait_finished(run)

    assert (run.status, run.error_code) == ("failed", "not_applicable"), run.error_message
    assert "IMAPS" in run.error_message and "No load was sent" in run.error_message
    assert trap.accepted == 0


# --- a proof covers the server it was made at, not whatever the name points at later -------------

def named_site(org, port: int) -> Site:
    """shop.example.com, not pinned: every run resolves it (through the test's DNS server)."""
    return added_site(organization=org, hostname="shop.example.com", http_port=port, https_port=closed_port())


def run_against(site, start_worker_on):
    from tests.ssrf.test_targets import wait_finished

    run = services.queue_run(site, "load", {"requests": 3, "concurrency": 1, "scheme": "http"})
    start_worker_on(("load",), concurrency=1)
    return wait_finished(run)


def load_requests(listener) -> list[bytes]:
    """What a server got besides our proof fetches (GET /.well-known/…): the load."""
    return [r for r in listener.requests if b"/.well-known/tlsaudit-" not in r.split(b"\r\n", 1)[0]]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_name_repointed_after_its_file_proof_sends_no_load_to_the_new_server(start_worker_on, org_a, settings):
    """Given a name proven by the file at its owner's server (127.0.0.1), when the owner points the name at
    somebody else's server (127.0.0.2, which answers everything 200) and starts a run, then the run fails,
    saying why, and the other server saw nothing but the one proof fetch."""
    from tests import hostile

    where = ["127.0.0.1"]
    with hostile.dns_server({"shop.example.com": lambda _asked: list(where)}) as dns:
        settings.DNS_RESOLVER = dns.address
        port = hostile.twin_port("127.0.0.2", "127.0.0.1")
        site = named_site(org_a, port)
        verification = verification_for(site)
        with hostile.recording_http("127.0.0.2", port) as (_, victim):
            with http_server({verification.file_path: (200, {}, verification.file_content)}, port=port):
                assert check_now(site, "http").is_verified
            assert verification_for(site).proved_ips == ["127.0.0.1"]
            where[0] = "127.0.0.2"
            run = run_against(site, start_worker_on)

    assert (run.status, run.error_code) == ("failed", "unverified"), run.error_message
    assert "now points at 127.0.0.2" in run.error_message and "No load was sent" in run.error_message
    assert load_requests(victim) == [] and len(victim.requests) >= 1     # the proof was asked of it, nothing more
    assert verification_for(site).proved_ips == ["127.0.0.1"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_dns_proof_alone_sends_no_load_to_a_server_that_does_not_serve_the_file(start_worker_on, org_a, settings):
    """A TXT record shows control of a name; the attacker's name can point at a victim's address."""
    from tests import hostile

    with hostile.dns_server({"shop.example.com": ["127.0.0.2"]}) as dns, \
            hostile.recording_http("127.0.0.2") as (port, victim):
        settings.DNS_RESOLVER = dns.address
        site = named_site(org_a, port)
        verification = verification_for(site)
        verification.record_pass("dns", timezone.now())     # as check_now records a TXT pass
        verification.save()
        run = run_against(site, start_worker_on)

    assert (run.status, run.error_code) == ("failed", "unverified"), run.error_message
    assert "did not serve the verification file" in run.error_message
    assert load_requests(victim) == []


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_dns_proof_and_the_file_at_the_address_let_the_load_go_there(start_worker_on, org_a, settings):
    """The control: the name's server serves the file, so the run goes, and the address is remembered."""
    from tests import hostile

    requests = []
    with hostile.dns_server({"shop.example.com": ["127.0.0.1"]}) as dns:
        settings.DNS_RESOLVER = dns.address
        site = named_site(org_a, 1)
        verification = verification_for(site)
        routes = {verification.file_path: (200, {}, verification.file_content), "/": (200, {}, "ok")}
        with http_server(routes, requests=requests) as port:
            Site.objects.filter(pk=site.pk).update(http_port=port)
            site.refresh_from_db()
            verification = verification_for(site)
            verification.record_pass("dns", timezone.now())
            verification.save()
            run = run_against(site, start_worker_on)

    assert run.status == "done", run.error_message
    assert verification_for(site).proved_ips == ["127.0.0.1"]
    assert sum(r.path == "/" for r in requests) >= 3
