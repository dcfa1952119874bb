"""The organization, its portfolio, and the API's behaviour for dashboard sessions."""

from rest_framework.test import APIClient

from tests.api.test_sites import add_site
from tests.support.api import error_of


def test_it_describes_the_organization_and_its_members(api, api_ro, org_a):
    body = api.get("/api/v1/organization/").json()
    assert body["slug"] == org_a.slug and body["role"] == "admin" and body["key_scope"] == "rw"
    assert [(m["email"], m["role"]) for m in body["members"]] == [("alice@agency-a.test", "owner"),
                                                                  ("bob@agency-a.test", "viewer")]
    assert api_ro.get("/api/v1/organization/").json()["role"] == "viewer"


def test_members_are_read_only(api):
    assert api.post("/api/v1/organization/", {}, format="json").status_code == 405
    assert error_of(api.delete("/api/v1/organization/"))["code"] == "method_not_allowed"


def test_the_portfolio_counts_grades_failures_and_expiries(api, api_b, org_a):
    add_site(org_a, "a.example", grade="A+", status="done", expires_in_days=200)
    add_site(org_a, "b.example", grade="B", status="done", expires_in_days=10)
    add_site(org_a, "c.example", grade="B", status="failed", expires_in_days=-3)
    add_site(org_a, "new.example")
    body = api.get("/api/v1/portfolio/").json()
    assert (body["sites"], body["audited"], body["never_audited"]) == (4, 3, 1)
    assert body["by_grade"]["B"] == 2 and body["by_grade"]["A+"] == 1 and body["by_grade"]["F"] == 0
    assert body["failing"] == 1 and [s["hostname"] for s in body["failing_sites"]] == ["c.example"]
    assert [s["hostname"] for s in body["expiring_sites"]] == ["c.example", "b.example"]
    assert api.get("/api/v1/portfolio/", {"days": "365"}).json()["expiring"] == 3
    assert api_b.get("/api/v1/portfolio/").json()["sites"] == 0


def test_the_portfolio_explains_a_bad_horizon(api):
    response = api.get("/api/v1/portfolio/", {"days": "-5"})
    assert response.status_code == 400 and "days" in error_of(response)["fields"]


def test_a_session_acts_for_the_organization_it_names(client, alice, charlie, org_a, org_b, site_a):
    api = APIClient()
    api.force_login(alice)
    body = api.get("/api/v1/sites/", HTTP_X_ORGANIZATION=org_a.slug).json()
    assert [s["id"] for s in body["results"]] == [site_a.pk]
    response = api.get("/api/v1/sites/", HTTP_X_ORGANIZATION=org_b.slug)
    assert response.status_code == 404 and org_b.slug in error_of(response)["message"]


def test_a_session_without_an_organization_gets_a_clear_404(db):
    from tests.support.personas import make_user

    api = APIClient()
    api.force_login(make_user("loner@example.test"))
    response = api.get("/api/v1/sites/")
    assert response.status_code == 404 and "any organization" in error_of(response)["message"]


def test_session_writes_need_the_csrf_token(alice, org_a):
    api = APIClient(enforce_csrf_checks=True)
    api.force_login(alice)
    response = api.post("/api/v1/sites/", {"hostname": "x.example"}, format="json", HTTP_X_ORGANIZATION=org_a.slug)
    assert response.status_code == 403 and "CSRF" in error_of(response)["message"]


def test_a_viewer_session_cannot_write(bob, org_a):
    api = APIClient()
    api.force_login(bob)
    response = api.post("/api/v1/sites/", {"hostname": "x.example"}, format="json", HTTP_X_ORGANIZATION=org_a.slug)
    assert response.status_code == 403 and "viewer" in error_of(response)["message"]


def test_unknown_api_addresses_answer_json_404(api):
    response = api.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_the_schema_and_docs_pages_are_served(api):
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200 and schema.json()["info"]["title"] == "TLS Audit API"
    docs = api.get("/api/v1/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


# --- the custom CA ----------------------------------------------------------------------------------

CUSTOM_CA = "/api/v1/organization/custom-ca/"


def test_the_custom_ca_is_set_read_and_removed_through_the_api(api, org_a, tmp_path):
    from tests.support.pki import TestPki
    from tlsaudit.core.models import AuditLogEntry

    pem = TestPki(tmp_path).ca_file.read_text()
    assert api.get(CUSTOM_CA).json() == {"pem": "", "certificates": []}
    body = api.put(CUSTOM_CA, {"pem": f"\n{pem}\n"}, format="json").json()
    assert [c["subject"] for c in body["certificates"]] == ["CN=TLS Audit Test Root CA,O=TLS Audit test lab"]
    assert len(body["certificates"][0]["fingerprint_sha256"]) == 64
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem.strip() == pem.strip() and api.get(CUSTOM_CA).json() == body
    assert AuditLogEntry.objects.filter(action="org.settings_changed").exists()
    assert api.delete(CUSTOM_CA).status_code == 204
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem == ""


def test_a_custom_ca_that_is_not_pem_is_refused_and_the_old_one_kept(api, org_a):
    org_a.custom_ca_pem = "kept"
    org_a.save()
    for pem in ("not a certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", "x" * 200_001):
        response = api.put(CUSTOM_CA, {"pem": pem}, format="json")
        assert response.status_code == 422 and "pem" in error_of(response)["fields"], response.content
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem == "kept"


def test_only_owners_admins_and_read_write_keys_change_the_custom_ca(api_ro, login, bob, org_a):
    assert error_of(api_ro.put(CUSTOM_CA, {"pem": ""}, format="json"))["code"] == "read_only_key"
    assert api_ro.get(CUSTOM_CA).status_code == 200
    viewer = APIClient()
    viewer.force_login(bob)
    assert viewer.get(CUSTOM_CA, HTTP_X_ORGANIZATION=org_a.slug).status_code == 200
    assert viewer.delete(CUSTOM_CA, HTTP_X_ORGANIZATION=org_a.slug).status_code == 403
