"""Sites that are other TLS services (#18 item 3): the form, the import, the pages that show them, and
the HTTP-only tools refused for them. Personas as in tests/conftest.py: alice owns agency A."""

import html
from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.loader import render_to_string
from django.urls import reverse

from tests.domain.test_service_grading import service_facts
from tests.support.loadtests import verify
from tests.support.sites import added_site
from tlsaudit.alerts.models import AlertEvent, Webhook, WebhookDelivery
from tlsaudit.alerts.services import alert_message, webhook_body
from tlsaudit.audits.models import Audit
from tlsaudit.domain.audit_report import build_report
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.monitoring import schedules
from tlsaudit.probes.models import Probe
from tlsaudit.reports.presenters import site_report
from tlsaudit.sites.forms import SiteForm
from tlsaudit.sites.models import Site


def text(response) -> str:
    return html.unescape(response.content.decode())


def post_site(client, org, **data):
    return client.post(reverse("sites:add", args=[org.slug]), {
        "address": "", "service": "", "https_port": "", "http_port": "", "pinned_ip": "", "name": "",
        "tags_text": "", **data})


@pytest.fixture
def mail_site(org_a, alice):
    return added_site(organization=org_a, hostname="mail.example.com", service="smtp", https_port=25,
                               created_by=alice)


# --- the form ---------------------------------------------------------------------------------

@pytest.mark.parametrize("address, service, port", [
    ("smtp://mail.example.com", "smtp", 25),
    ("SMTP://Mail.Example.com:587", "smtp", 587),
    ("submission://mail.example.com", "smtp", 587),
    ("smtps://mail.example.com", "smtps", 465),
    ("imap://mail.example.com", "imap", 143),
    ("imaps://mail.example.com", "imaps", 993),
    ("pop3://mail.example.com", "pop3", 110),
    ("pop3s://mail.example.com", "pop3s", 995),
    ("ftp://files.example.com", "ftp", 21),
    ("xmpp://chat.example.com", "xmpp", 5222),
    ("ldap://dir.example.com", "ldap", 389),
    ("ldaps://dir.example.com", "ldaps", 636),
    ("postgresql://db.example.com:6543", "postgres", 6543),
    ("mail.example.com", "https", 443),
    ("https://mail.example.com/", "https", 443),
])
def test_typing_a_service_url_sets_the_service_and_its_usual_port(login, alice, org_a, address, service, port):
    response = post_site(login(alice), org_a, address=address)
    assert response.status_code == 302, text(response)
    site = Site.objects.get()
    assert (site.hostname.split(".")[1], site.service, site.https_port) == ("example", service, port)


def test_the_service_field_names_the_service_of_a_plain_host(login, alice, org_a):
    post_site(login(alice), org_a, address="mail.example.com", service="imaps")
    assert Site.objects.values_list("service", "https_port").get() == ("imaps", 993)


def test_a_typed_port_wins_over_the_usual_one(login, alice, org_a):
    post_site(login(alice), org_a, address="smtp://mail.example.com", https_port="2525")
    assert Site.objects.values_list("service", "https_port").get() == ("smtp", 2525)


@pytest.mark.parametrize("data, message", [
    # Hostile or wrong addresses: each refused with parse_address's own words, nothing saved.
    ({"address": "smtp://x@mail.example.com"}, "Remove the user name and password"),
    ({"address": "smtp://user:pw@mail.example.com"}, "Remove the user name and password"),
    ({"address": "javascript://alert(1)"}, "javascript:// is not a TLS service we audit"),
    ({"address": "gopher://example.com"}, "gopher:// is not a TLS service we audit"),
    ({"address": "smtp://mail.example.com:0"}, "Port 0 is out of range"),
    ({"address": "smtp://mail.example.com:70000"}, "Port 70000 is out of range"),
    ({"address": "imap://mail.example.com/INBOX"}, "without a path"),
    ({"address": "smtp://"}, "host name"),
    ({"address": "mail.example.com", "service": "telnet"}, "telnet:// is not a TLS service we audit"),
    ({"address": "mail.example.com", "service": "<script>"}, "is not a TLS service we audit"),
    ({"address": "smtp://mail.example.com", "service": "imaps"},
     "The address says smtp:// but this field says IMAPS: change one of them."),
    ({"address": "smtp://mail.example.com", "https_port": "0"}, "Port 0 is out of range"),
])
def test_bad_service_addresses_are_refused_with_a_clear_message(login, alice, org_a, data, message):
    response = post_site(login(alice), org_a, **data)
    assert response.status_code == 400
    assert message in text(response)
    assert "<script>" not in response.content.decode()
    assert not Site.objects.exists()


def test_one_site_per_host_and_port_whatever_the_service(login, alice, org_a, mail_site):
    # smtp:// and smtps:// cannot both speak on port 25: the second is refused, naming the first.
    response = post_site(login(alice), org_a, address="smtps://mail.example.com:25")
    assert response.status_code == 400
    assert "smtp://mail.example.com:25 is already in this organization." in text(response)
    # The same host on another port is another site.
    assert post_site(login(alice), org_a, address="smtps://mail.example.com").status_code == 302
    assert sorted(Site.objects.values_list("service", "https_port")) == [("smtp", 25), ("smtps", 465)]


def test_editing_an_smtp_site_shows_its_url_and_keeps_its_service(login, alice, org_a, mail_site):
    client = login(alice)
    url = reverse("sites:edit", args=[org_a.slug, mail_site.pk])
    form = SiteForm(instance=mail_site, org=org_a)
    assert form.initial["address"] == "smtp://mail.example.com"
    response = client.post(url, {"address": form.initial["address"], "service": "", "https_port": "25",
                                 "http_port": "80", "pinned_ip": "", "name": "Mail", "tags_text": ""})
    assert response.status_code == 302, text(response)
    mail_site.refresh_from_db()
    assert (mail_site.service, mail_site.https_port, mail_site.name) == ("smtp", 25, "Mail")


def test_an_ipv6_ldap_site_is_edited_as_a_url_that_parses_back(org_a):
    site = added_site(organization=org_a, hostname="2001:db8::1", service="ldap", https_port=389)
    form = SiteForm(instance=site, org=org_a)
    assert form.initial["address"] == "ldap://[2001:db8::1]"
    assert SiteForm({"address": form.initial["address"], "https_port": "389"}, instance=site, org=org_a,
                    check_dns=False).is_valid()


def test_changing_the_service_moves_a_usual_port_to_the_new_services(login, alice, org_a, site_a):
    # Given shop.example.com on 443, edited to imaps:// with the port field still at 443: 993, not IMAPS on 443.
    url = reverse("sites:edit", args=[org_a.slug, site_a.pk])
    login(alice).post(url, {"address": "imaps://shop.example.com", "service": "", "https_port": "443",
                            "http_port": "80", "pinned_ip": "", "name": "Shop", "tags_text": ""})
    site_a.refresh_from_db()
    assert (site_a.service, site_a.https_port) == ("imaps", 993)


# --- import -----------------------------------------------------------------------------------

def test_a_pasted_list_takes_service_urls_and_refuses_unknown_schemes(login, alice, org_a):
    pasted = "\n".join(["smtp://mail.example.com", "imaps://mail.example.com 192.0.2.7", "www.example.com",
                        "telnet://old.example.com", "smtp://a@b.example.com", "smtp://mail.example.com:70000"])
    page = text(login(alice).post(reverse("sites:import", args=[org_a.slug]), {"lines": pasted}))

    assert "3 added, 3 rejected" in page
    assert "Added smtp://mail.example.com:25." in page
    assert "telnet:// is not a TLS service we audit" in page
    assert "Remove the user name and password" in page
    assert "Port 70000 is out of range" in page
    assert sorted(Site.objects.values_list("hostname", "service", "https_port")) == [
        ("mail.example.com", "imaps", 993), ("mail.example.com", "smtp", 25), ("www.example.com", "https", 443)]


def test_a_csv_names_the_service_in_its_column_or_as_a_url(login, alice, org_a):
    csv_text = ("hostname,https_port,http_port,pinned_ip,name,tags,service\n"
                "mail.example.com,,,,Mail,mail,SMTP\n"
                "imaps://mail.example.com,,,,,,\n"
                "db.example.com,6543,,,,,postgresql\n"
                "www.example.com,,,,,\n"
                "x.example.com,,,,,,gopher\n"
                "ldap://dir.example.com,,,,,,imaps\n")
    upload = SimpleUploadedFile("sites.csv", csv_text.encode(), content_type="text/csv")
    page = text(login(alice).post(reverse("sites:import", args=[org_a.slug]), {"csv_file": upload}))

    assert "4 added, 2 rejected" in page
    assert "gopher:// is not a TLS service we audit" in page
    assert "The address says ldap:// but this field says IMAPS" in page
    assert sorted(Site.objects.values_list("hostname", "service", "https_port")) == [
        ("db.example.com", "postgres", 6543), ("mail.example.com", "imaps", 993),
        ("mail.example.com", "smtp", 25), ("www.example.com", "https", 443)]


# --- pages ------------------------------------------------------------------------------------

def test_the_list_and_the_site_page_show_the_service(login, alice, org_a, mail_site, site_a):
    client = login(alice)
    listing = text(client.get(reverse("sites:list", args=[org_a.slug])))
    assert "smtp://mail.example.com:25" in listing and "SMTP (STARTTLS)" in listing

    page = text(client.get(mail_site.get_absolute_url()))
    assert "smtp://mail.example.com:25" in page and "SMTP (STARTTLS)" in page
    assert "https://mail.example.com" not in page and "HTTP port" not in page
    # An HTTPS site reads as before.
    assert 'data-testid="site-url">https://shop.example.com/</span> · HTTP port 80' in text(client.get(site_a.get_absolute_url()))


def test_the_site_page_says_which_tools_are_not_applicable_and_never_not_tested(login, alice, mail_site, site_a):
    client = login(alice)
    page = text(client.get(mail_site.get_absolute_url()))
    for tool in ("hsts", "probe", "load", "sweep", "handshakes"):
        assert f'data-testid="na-{tool}"' in page
    assert "Not applicable to an SMTP (STARTTLS) service: load tests send HTTP requests." in page
    assert "not tested" not in page.lower()
    assert "tools-not-applicable" not in text(client.get(site_a.get_absolute_url()))


def test_the_performance_tab_disables_each_start_with_its_reason(login, alice, org_a, mail_site):
    page = text(login(alice).get(reverse("loadtests:overview", args=[org_a.slug, mail_site.pk])))
    for kind in ("load", "sweep", "handshakes"):
        assert f'data-testid="na-{kind}"' in page
        assert f'data-testid="start-{kind}" disabled' in page
    assert "Not applicable to an SMTP (STARTTLS) service: the handshake runner speaks TLS from the first byte" in page


def test_an_smtps_site_may_time_handshakes_but_not_load_test(login, alice, org_a):
    site = added_site(organization=org_a, hostname="mail.example.com", service="smtps", https_port=465)
    page = text(login(alice).get(reverse("loadtests:overview", args=[org_a.slug, site.pk])))
    assert 'data-testid="start-load" disabled' in page
    assert 'data-testid="start-handshakes">Start' in page


def test_the_browser_tab_disables_the_probe_with_its_reason(login, alice, org_a, mail_site):
    page = text(login(alice).get(reverse("probes:overview", args=[org_a.slug, mail_site.pk])))
    assert 'data-testid="probe-run" disabled' in page
    assert "Not applicable to an SMTP (STARTTLS) service: the browser probe loads a web page." in page


@pytest.mark.parametrize("kind", ["load", "sweep", "handshakes"])
def test_a_forged_run_post_is_refused_with_the_reason(login, alice, org_a, mail_site, kind):
    verify(mail_site)  # even a proven site: the refusal is about the service, not ownership
    response = login(alice).post(reverse("loadtests:start", args=[org_a.slug, mail_site.pk]),
                                 {"kind": kind, "requests": "10", "concurrency": "1", "levels": "1",
                                  "agents_levels": "1", "per_agent": "1", "versions": "1.3"})
    assert response.status_code == 400
    assert "Not applicable to an SMTP (STARTTLS) service" in text(response)
    assert not PerfRun.objects.exists()


def test_a_forged_probe_post_is_refused_with_the_reason(login, alice, org_a, mail_site):
    response = login(alice).post(reverse("probes:start", args=[org_a.slug, mail_site.pk]), {"runs": "2"})
    assert response.status_code == 400
    assert "Not applicable to an SMTP (STARTTLS) service: the browser probe loads a web page." in text(response)
    assert not Probe.objects.exists()


def test_a_scheduled_night_of_an_smtp_site_queues_its_audit_and_nothing_http(mail_site,
                                                                             django_capture_on_commit_callbacks):
    # Given a nightly schedule firing for a mail server: the audit runs (TLS means the same there), and no
    # load test, sweep, handshake run or probe is created for it.
    with django_capture_on_commit_callbacks(execute=False):
        outcome = schedules.run_scheduled(mail_site.pk, datetime(2026, 3, 3, 2, 15, tzinfo=UTC))
    assert outcome == "queued"
    assert list(Audit.objects.filter(site=mail_site).values_list("trigger", flat=True)) == ["schedule"]
    assert not PerfRun.objects.exists() and not Probe.objects.exists()


# --- the audit report and the PDF -------------------------------------------------------------

@pytest.fixture
def mail_audit(mail_site):
    facts = service_facts()
    report = build_report(facts)
    return Audit.objects.create(site=mail_site, organization=mail_site.organization, status="done",
                                host=facts.host, port=facts.port, ip=facts.ip, facts=facts.to_dict(),
                                report=report.to_dict(), grade=report.grade.grade, score=report.grade.score,
                                grade_ignoring_trust=report.grade.grade_ignoring_trust,
                                rules_version=report.rules_version)


def test_the_audit_page_says_hsts_is_not_applicable_with_why(login, alice, mail_audit):
    page = text(login(alice).get(mail_audit.get_absolute_url()))
    assert "smtp://mail.example.com:25" in page
    assert 'data-testid="not-applicable"' in page
    assert page.count("HSTS is an HTTP header; an SMTP server sends none.") == 1   # once (#30 item 6)
    assert "No cap, no warning: the best grade for this service." in page
    assert "HSTS not enabled" not in page and "Strict-Transport-Security" not in page
    assert "postfix" in page
    assert "make the same change in your SMTP (STARTTLS) server's TLS settings" in page


def test_the_pdf_report_says_what_is_not_applicable(mail_audit):
    page = html.unescape(render_to_string("reports/site_report.html", site_report(mail_audit.site, mail_audit)))
    assert "SMTP (STARTTLS) / TLS report" in page
    assert page.count("HSTS is an HTTP header; an SMTP server sends none.") == 1   # once (#30 item 6)
    assert "Browser probe</b>: Not applicable to an SMTP (STARTTLS) service" in page
    assert "Could not be checked: HTTP headers" not in page


def test_alert_emails_and_webhooks_name_the_service(mail_site):
    event = AlertEvent.objects.create(organization=mail_site.organization, site=mail_site, kind="grade_dropped",
                                      dedupe_key="k", title="Grade dropped from A to B")
    message = alert_message(event, "alice@agency-a.test")
    assert message.subject.endswith("smtp://mail.example.com:25: Grade dropped from A to B")
    assert "smtp://mail.example.com:25" in message.body
    hook = Webhook.objects.create(organization=mail_site.organization, url="https://hooks.example.com/x")
    body = webhook_body(WebhookDelivery.objects.create(webhook=hook, event=event), 1)
    assert {k: body["site"][k] for k in ("host", "port", "service", "origin")} == {
        "host": "mail.example.com", "port": 25, "service": "smtp", "origin": "smtp://mail.example.com:25"}
