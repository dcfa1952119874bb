"""Sites that are other TLS services over the API (#18 item 3): created from a URL or a `service`, returned
with it, filtered by it; hostile addresses refused in parse_address's words; HTTP-only work refused 400."""

import pytest

from tests.support.api import client_with, error_of, make_key
from tests.support.loadtests import verify
from tests.support.sites import added_site
from tlsaudit.api import keys
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.probes.models import Probe
from tlsaudit.sites.models import Site

SITES = "/api/v1/sites/"


@pytest.fixture
def mail_site(org_a):
    return added_site(organization=org_a, hostname="mail.example.com", service="smtp", https_port=25,
                               name="Mail")


def test_a_service_url_creates_that_service_on_its_usual_port(api, org_a):
    response = api.post(SITES, {"hostname": "smtp://mail.example.com"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["service"], body["https_port"], body["origin"]) == ("smtp", 25, "smtp://mail.example.com:25")
    assert Site.objects.get(pk=body["id"]).service == "smtp"


def test_the_service_field_works_for_a_plain_host_and_https_stays_the_default(api):
    imaps = api.post(SITES, {"hostname": "mail.example.com", "service": "IMAPS"}, format="json").json()
    assert (imaps["service"], imaps["https_port"]) == ("imaps", 993)
    plain = api.post(SITES, {"hostname": "www.example.com"}, format="json").json()
    assert (plain["service"], plain["https_port"], plain["origin"]) == ("https", 443, "www.example.com")


@pytest.mark.parametrize("payload, field, words", [
    ({"hostname": "smtp://x@y.example.com"}, "hostname", "Remove the user name and password"),
    ({"hostname": "javascript://alert(1)"}, "hostname", "javascript:// is not a TLS service we audit"),
    ({"hostname": "gopher://example.com"}, "hostname", "gopher:// is not a TLS service we audit. Known: https://"),
    ({"hostname": "smtp://mail.example.com:0"}, "hostname", "Port 0 is out of range"),
    ({"hostname": "smtp://mail.example.com:70000"}, "hostname", "Port 70000 is out of range"),
    ({"hostname": "mail.example.com", "service": "telnet"}, "service", "telnet:// is not a TLS service we audit"),
    ({"hostname": "mail.example.com", "service": "x" * 21}, "service", "20 characters"),
    ({"hostname": "smtp://mail.example.com", "service": "ldaps"}, "service", "The address says smtp://"),
    ({"hostname": "smtp://mail.example.com", "https_port": 0}, "https_port", "greater than or equal to 1"),
])
def test_hostile_or_wrong_service_addresses_are_refused_in_words(api, org_a, payload, field, words):
    # A bad field answers 422 validation_error, like every other field (docs/api.md).
    response = api.post(SITES, payload, format="json")
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert error["code"] == "validation_error" and words in " ".join(error["fields"][field]), error
    assert not Site.objects.filter(organization=org_a).exists()


def test_a_patch_keeps_the_service_and_a_new_url_changes_it(api, mail_site):
    response = api.patch(f"{SITES}{mail_site.pk}/", {"name": "Mail EU"}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["service"], response.json()["https_port"]) == ("smtp", 25)
    response = api.patch(f"{SITES}{mail_site.pk}/", {"hostname": "submission://mail.example.com:587"}, format="json")
    assert (response.json()["service"], response.json()["https_port"]) == ("smtp", 587)
    response = api.patch(f"{SITES}{mail_site.pk}/", {"hostname": "smtps://mail.example.com"}, format="json")
    mail_site.refresh_from_db()
    assert (mail_site.service, mail_site.https_port, mail_site.name) == ("smtps", 587, "Mail EU")


def test_a_put_without_a_service_replaces_it_with_https(api, mail_site):
    response = api.put(f"{SITES}{mail_site.pk}/", {"hostname": "mail.example.com"}, format="json")
    assert response.status_code == 200
    mail_site.refresh_from_db()
    assert (mail_site.service, mail_site.https_port) == ("https", 443)


def test_a_bulk_create_takes_services_per_item(api):
    items = [{"hostname": "smtp://mail.example.com"}, {"hostname": "ldaps://dir.example.com"},
             {"hostname": "gopher://x.example.com"}, {"hostname": "mail.example.com", "service": "pop3s"}]
    body = api.post(f"{SITES}bulk/", {"sites": items}, format="json").json()
    assert [r["created"] for r in body["results"]] == [True, True, False, True]
    assert [r["site"]["origin"] for r in body["results"] if r["site"]] == [
        "smtp://mail.example.com:25", "ldaps://dir.example.com:636", "pop3s://mail.example.com:995"]
    assert "gopher:// is not a TLS service we audit" in body["results"][2]["error"]["message"] + str(
        body["results"][2]["error"]["fields"])


def test_the_list_filters_by_service_and_refuses_an_unknown_one(api, mail_site, site_a):
    assert [s["hostname"] for s in api.get(SITES, {"service": "smtp"}).json()["results"]] == ["mail.example.com"]
    assert [s["hostname"] for s in api.get(SITES, {"service": "https"}).json()["results"]] == ["shop.example.com"]
    response = api.get(SITES, {"service": "SMTP<script>"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_query" and "service" in error_of(response)["fields"]


@pytest.mark.parametrize("path, body", [
    ("loadtests", {"kind": "load", "requests": 10, "concurrency": 1}),
    ("loadtests", {"kind": "sweep", "levels": [1], "requests": 10}),
    ("handshakes", {"agents_levels": [1], "per_agent": 1}),
])
def test_load_tests_sweeps_and_starttls_handshakes_answer_400_not_applicable(api, mail_site, path, body):
    verify(mail_site)
    response = api.post(f"{SITES}{mail_site.pk}/{path}/", body, format="json")
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "not_applicable"
    assert error["message"].startswith("Not applicable to an SMTP (STARTTLS) service: ")
    assert not PerfRun.objects.exists()


def test_an_implicit_tls_service_may_time_handshakes(api, org_a, django_capture_on_commit_callbacks):
    site = added_site(organization=org_a, hostname="mail.example.com", service="smtps", https_port=465)
    verify(site)
    with django_capture_on_commit_callbacks(execute=False):
        response = api.post(f"{SITES}{site.pk}/handshakes/", {"agents_levels": [1], "per_agent": 1}, format="json")
    assert response.status_code == 202, response.content
    assert api.post(f"{SITES}{site.pk}/loadtests/", {"kind": "load", "requests": 10, "concurrency": 1},
                    format="json").status_code == 400


def test_a_probe_of_a_mail_server_answers_400_not_applicable(org_a, alice, mail_site):
    api = client_with(make_key(org_a, keys.READ_WRITE, "alice's ci", created_by=alice)[1])
    response = api.post(f"{SITES}{mail_site.pk}/probes/", {"runs": 2}, format="json")
    assert response.status_code == 400, response.content
    assert error_of(response)["code"] == "not_applicable"
    assert "the browser probe loads a web page" in error_of(response)["message"]
    assert not Probe.objects.exists()


def test_an_audit_names_its_service_in_the_compact_object_and_keeps_it_when_the_site_changes(
        api, mail_site, site_a, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        queued = api.post(f"{SITES}{mail_site.pk}/audits/", format="json")
        api.post(f"{SITES}{site_a.pk}/audits/", format="json")
    assert queued.status_code == 202, queued.content
    assert queued.json()["service"] == "smtp"

    patched = api.patch(f"{SITES}{mail_site.pk}/", {"hostname": "imaps://mail.example.com"}, format="json")
    assert patched.json()["service"] == "imaps"
    listed = {a["site"]: a["service"] for a in api.get("/api/v1/audits/").json()["results"]}
    assert listed == {mail_site.pk: "smtp", site_a.pk: "https"}   # what was queued, not what the site says now
