"""Control characters in names (issue 14, item 5).

1. Every name field refuses them, through every door: the web forms (organization create and
   rename, site add and edit, the CSV and paste imports, tags, API key names, the sign-up's full
   name), the API (site create, update, bulk) and the models themselves (the admin validates
   through them). The refusal is a clear field error and nothing is saved.
2. Rows saved before this rule (written straight to the database here) still mail correctly: the
   subject is one line, no header is injected, nothing crashes.
3. An email that cannot be built or sent is never silent: the alert event or digest delivery keeps
   the reason, the log says it, and the other events still go out.
"""

import email
from email import policy

import pytest
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.support.api import client_with, error_of, make_key
from tests.support.smtp import refusing_smtp, use_smtp
from tlsaudit.accounts.models import User
from tlsaudit.alerts import services as alerts
from tlsaudit.alerts.models import AlertEvent, AlertSettings
from tlsaudit.api.models import ApiKey
from tlsaudit.domain import alerts as rules
from tlsaudit.orgs.models import Invitation, Organization
from tlsaudit.reports import digests
from tlsaudit.reports.models import DigestDelivery, Report, ReportSchedule
from tlsaudit.sites.models import Site, Tag

pytestmark = pytest.mark.django_db

INJECTION = "Shop\r\nBcc: victim@example.com"
HOSTILE = [INJECTION, "line\nbreak", "tab\tinside", "nul\x00byte", "bell\x07", "ne\x85l", "ls\u2028sep",
           "rtl\u202eoverride"]
ERROR = "Use one line of plain text: character"
NUL_ERROR = "Null characters are not allowed."   # Django's own form check answers NUL first


def is_refusal(message: str) -> bool:
    return message.startswith(ERROR) or message == NUL_ERROR


def field_errors(response, form="form") -> dict:
    return {name: list(errors) for name, errors in response.context[form].errors.items()}


# --- 1. every door refuses ----------------------------------------------------------------------

@pytest.mark.parametrize("name", HOSTILE)
def test_creating_or_renaming_an_organization_refuses_a_control_character(login, charlie, org_b, name):
    client = login(charlie)
    created = client.post(reverse("orgs:create"), {"name": name})
    renamed = client.post(reverse("orgs:settings", args=[org_b.slug]), {"name": name, "custom_ca_pem": ""})

    for response, form in ((created, "form"), (renamed, "settings_form")):
        assert response.status_code == 200
        [message] = field_errors(response, form)["name"]
        assert is_refusal(message), message
    assert list(Organization.objects.values_list("name", flat=True)) == ["Agency B"]


def test_the_error_says_which_character_and_where(login, charlie):
    response = login(charlie).post(reverse("orgs:create"), {"name": INJECTION})
    assert field_errors(response)["name"] == [
        "Use one line of plain text: character 5 is a control character, U+000D (carriage return)."]


@pytest.mark.parametrize("name", HOSTILE)
def test_adding_or_editing_a_site_refuses_a_control_character_in_its_name(login, alice, org_a, site_a, name):
    client = login(alice)
    added = client.post(reverse("sites:add", args=[org_a.slug]), {"address": "new.example.com", "name": name})
    edited = client.post(reverse("sites:edit", args=[org_a.slug, site_a.pk]),
                         {"address": site_a.hostname, "name": name})

    for response in (added, edited):
        assert response.status_code in (200, 400)
        [message] = field_errors(response)["name"]
        assert is_refusal(message), message
    assert not Site.objects.filter(hostname="new.example.com").exists()
    site_a.refresh_from_db()
    assert site_a.name == "Shop"


def test_a_csv_import_refuses_rows_whose_name_holds_a_control_character(login, alice, org_a):
    upload = SimpleUploadedFile("sites.csv", ('hostname,https_port,http_port,pinned_ip,name,tags\n'
                                              'a.example.com,,,,"Shop\r\nBcc: victim@example.com",\n'
                                              'b.example.com,,,,"tab\there",\n'
                                              'c.example.com,,,,Fine name,\n').encode(), content_type="text/csv")
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]), {"csv_file": upload})

    page = response.content.decode()
    assert "1 added, 2 rejected" in page
    assert page.count("U+000D (carriage return)") == 1 and page.count("U+0009 (tab)") == 1
    assert list(Site.objects.filter(organization=org_a).exclude(hostname="shop.example.com")
                .values_list("hostname", "name")) == [("c.example.com", "Fine name")]


def test_a_pasted_line_with_a_control_character_is_refused(login, alice, org_a):
    response = login(alice).post(reverse("sites:import", args=[org_a.slug]),
                                 {"lines": "ok.example.com\nbad.example.com\x01Bcc\nbell\x07.example.com"})
    assert "1 added, 2 rejected" in response.content.decode()
    nul = login(alice).post(reverse("sites:import", args=[org_a.slug]), {"lines": "nul\x00.example.com"})
    assert nul.status_code == 400 and field_errors(nul)["lines"] == [NUL_ERROR]


@pytest.mark.parametrize("tags", ["a\x00b", "ok, bad\x07tag", "rtl\u202etag"])
def test_tags_refuse_control_characters(login, alice, org_a, tags):
    response = login(alice).post(reverse("sites:add", args=[org_a.slug]),
                                 {"address": "tagged.example.com", "tags_text": tags})
    assert "tags_text" in field_errors(response)
    assert not Tag.objects.exists()


@pytest.mark.parametrize("name", HOSTILE)
def test_an_api_key_name_refuses_a_control_character(login, alice, org_a, name):
    response = login(alice).post(reverse("api_keys:create", args=[org_a.slug]), {"name": name, "scope": "ro"})
    assert response.status_code == 400
    messages = field_errors(response)["name"]
    assert messages and all(is_refusal(m) for m in messages), messages
    assert not ApiKey.objects.exists()


def test_signing_up_refuses_a_control_character_in_the_full_name(client, db, mailoutbox):
    response = client.post(reverse("signup"), {"full_name": "Dana\r\nBcc: victim@example.com",
                                               "email": "dana@agency-d.test",
                                               "password": "tangerine submarine lighthouse"})
    assert response.status_code == 200
    [message] = field_errors(response)["full_name"]
    assert is_refusal(message), message
    assert not User.objects.filter(email="dana@agency-d.test").exists() and mailoutbox == []


@pytest.mark.parametrize("name", HOSTILE)
def test_the_api_refuses_a_control_character_in_a_site_name(org_a, site_a, name):
    api = client_with(make_key(org_a)[1])
    created = api.post("/api/v1/sites/", {"hostname": "api.example.com", "name": name}, format="json")
    patched = api.patch(f"/api/v1/sites/{site_a.pk}/", {"name": name}, format="json")
    bulk = api.post("/api/v1/sites/bulk/", {"sites": [{"hostname": "bulk.example.com", "name": name}]},
                    format="json")

    for response in (created, patched):
        assert response.status_code == 422
        error = error_of(response)
        assert error["code"] == "validation_error" and is_refusal(error["fields"]["name"][0])
    [item] = bulk.json()["results"]
    assert item["created"] is False and is_refusal(item["error"]["fields"]["name"][0])
    assert not Site.objects.filter(hostname__in=["api.example.com", "bulk.example.com"]).exists()
    site_a.refresh_from_db()
    assert site_a.name == "Shop"


@pytest.mark.parametrize("instance, field", [
    (lambda: Organization(name=INJECTION, slug="x"), "name"),
    (lambda: Site(organization=Organization.objects.first(), hostname="m.example.com", name=INJECTION), "name"),
    (lambda: Tag(organization=Organization.objects.first(), name="a\nb"), "name"),
    (lambda: ApiKey(organization=Organization.objects.first(), name=INJECTION, lookup="x", digest="y"), "name"),
    (lambda: User(email="m@example.com", full_name=INJECTION), "full_name"),
])
def test_the_models_refuse_it_so_the_admin_does_too(org_a, instance, field):
    with pytest.raises(ValidationError) as refusal:
        instance().full_clean(exclude=["password"])
    assert [e.code for e in refusal.value.error_dict[field]] == ["control_character"]


# --- 2. rows saved before the rule still mail correctly -----------------------------------------

def raw_headers(message) -> list[str]:
    """The header names of the message exactly as it goes on the wire."""
    parsed = email.message_from_bytes(message.message().as_bytes(), policy=policy.default)
    return [name.lower() for name in parsed.keys()]


def test_inviting_from_an_organization_whose_stored_name_has_a_line_break(login, org_a, alice, mailoutbox):
    """The review's 500: the organization's name was saved with CR/LF before names were checked."""
    Organization.objects.filter(pk=org_a.pk).update(name="Agency\r\nBcc: victim@example.com")

    response = login(alice).post(reverse("orgs:invite", args=[org_a.slug]),
                                 {"email": "dave@agency-a.test", "role": "member"})

    assert response.status_code == 302
    assert Invitation.objects.count() == 1
    [message] = mailoutbox
    assert message.to == ["dave@agency-a.test"] and message.bcc == []
    assert "bcc" not in raw_headers(message)
    assert 'the organization "Agency Bcc: victim@example.com"' in message.body


def test_a_site_whose_stored_name_injects_a_header_still_gets_its_alert_mail(org_a, site_a, mailoutbox, caplog):
    """The review's silent stop: `\\r\\nBcc: …` in a site name made every alert of that site fail."""
    AlertSettings.objects.create(organization=org_a, recipients=["ops@agency-a.test"])
    Site.objects.filter(pk=site_a.pk).update(name=INJECTION)
    Organization.objects.filter(pk=org_a.pk).update(name="R&D\nAgency")
    site_a.refresh_from_db()
    alerts.record(site_a, [rules.Event(kind=rules.AUDIT_FAILING, key="failing:1", title="Audit failing\r\nX: y",
                                       data={"failures": 2})])

    assert alerts.email_pending() == 1

    [message] = mailoutbox
    assert message.subject == "[R&D Agency] Shop Bcc: victim@example.com: Audit failing X: y"  # one line, unescaped
    assert message.to == ["ops@agency-a.test"] and message.bcc == []
    assert "bcc" not in raw_headers(message) and "x" not in raw_headers(message)
    event = AlertEvent.objects.get()
    assert event.emailed_at is not None and event.email_error == ""


def test_a_digest_for_an_organization_whose_stored_name_has_a_line_break(org_a, mailoutbox):
    Organization.objects.filter(pk=org_a.pk).update(name="Agency\r\nBcc: victim@example.com")
    delivery = digest_delivery(org_a, "client@customer.test")

    assert digests.deliver(delivery.pk) == "sent"

    [message] = mailoutbox
    assert message.subject.startswith("Weekly TLS report for Agency Bcc: victim@example.com (")
    assert "bcc" not in raw_headers(message) and message.attachments[0][0].endswith(".pdf")


def digest_delivery(org, recipient: str) -> DigestDelivery:
    report = Report.objects.create(organization=org, kind=Report.Kind.PORTFOLIO, status=Report.Status.DONE)
    report.file.save("digest.pdf", ContentFile(b"%PDF-1.4\n% a stored report\n%%EOF\n"))
    schedule = ReportSchedule.objects.create(organization=org, frequency="weekly", recipients=[recipient])
    return DigestDelivery.objects.create(organization=org, schedule=schedule, report=report, period="2026-W10",
                                         recipient=recipient)


# --- 3. failures are recorded and logged, and do not stop the others ----------------------------

def test_an_alert_that_cannot_be_built_is_marked_failed_and_the_others_still_go_out(org_a, org_b, site_a, site_b,
                                                                                     mailoutbox, caplog, login,
                                                                                     alice):
    # A recipient list saved before the form checked it: an address with a line break cannot be a header.
    AlertSettings.objects.create(organization=org_a, recipients=["ops@agency-a.test\r\nBcc: victim@example.com"])
    AlertSettings.objects.create(organization=org_b, recipients=["ops@agency-b.test"])
    event = rules.Event(kind=rules.AUDIT_FAILING, key="failing:1", title="Audit failing", data={"failures": 2})
    [broken] = alerts.record(site_a, [event])
    alerts.record(site_b, [event])

    assert alerts.email_pending() == 1

    assert [m.to for m in mailoutbox] == [["ops@agency-b.test"]]
    broken.refresh_from_db()
    assert broken.emailed_at is not None   # given up: the same message would fail the same way
    assert broken.email_error.startswith("BadHeaderError: Header values can't contain newlines")
    assert f"alert event {broken.pk} cannot be emailed: BadHeaderError" in caplog.text
    page = login(alice).get(reverse("alerts:settings", args=[org_a.slug]))
    assert 'data-testid="alert-email-error"' in page.content.decode()
    assert "Email not sent: BadHeaderError" in page.content.decode()


def test_an_alert_the_mail_server_refuses_keeps_the_reason_and_is_retried(org_a, site_a, settings, caplog):
    AlertSettings.objects.create(organization=org_a, recipients=["ops@agency-a.test"])
    [event] = alerts.record(site_a, [rules.Event(kind=rules.AUDIT_FAILING, key="failing:1", title="Audit failing",
                                                 data={"failures": 2})])
    with refusing_smtp() as (port, server):
        use_smtp(settings, port)
        with pytest.raises(Exception) as raised:
            alerts.email_pending()

    assert type(raised.value).__name__ == "SMTPRecipientsRefused"   # the task's autoretry_for catches it
    assert server.refused == ["ops@agency-a.test"]
    event.refresh_from_db()
    assert event.emailed_at is None and event.email_error.startswith("SMTPRecipientsRefused:")
    assert f"alert event {event.pk} not emailed yet, will retry" in caplog.text


def test_a_digest_that_cannot_be_built_is_marked_failed_with_the_reason(org_a, mailoutbox, caplog):
    delivery = digest_delivery(org_a, "client@customer.test\r\nBcc: victim@example.com")

    assert digests.deliver(delivery.pk) == "failed"

    delivery.refresh_from_db()
    assert delivery.status == DigestDelivery.Status.FAILED and delivery.attempts == 1
    assert delivery.error.startswith("BadHeaderError: Header values can't contain newlines")
    assert f"digest delivery {delivery.pk} cannot be emailed" in caplog.text and mailoutbox == []


def test_a_password_reset_mail_failure_is_logged_but_answers_as_usual(client, alice, settings, caplog):
    """The one deliberate exception to "say it to the user": the reset page answers the same for known
    and unknown addresses, so a failure shows only in the log (Django's PasswordResetForm logs it)."""
    with refusing_smtp() as (port, server):
        use_smtp(settings, port)
        response = client.post(reverse("password_reset"), {"email": alice.email})
    assert response.status_code == 302 and server.refused == [alice.email]
    assert "Failed to send password reset email" in caplog.text



def test_every_email_template_is_covered_here():
    """The product's emails, by subject template: a new one must come with its own test of a failure."""
    from django.conf import settings

    templates = settings.BASE_DIR / "templates" / "emails"
    assert {p.name.removesuffix("-subject.txt") for p in templates.glob("*-subject.txt")} == {
        "alert", "digest", "invitation", "verify-email"}  # verify-email: tests/security/test_mail_bombing.py
