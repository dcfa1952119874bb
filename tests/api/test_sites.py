"""Sites over the API: the same validation as the dashboard, scoped to the key's organization."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.api import error_of
from tests.support.sites import added_site
from tlsaudit.audits.models import Audit, AuditCertificate
from tlsaudit.sites.models import Site, Tag

SITES = "/api/v1/sites/"


def add_site(org, hostname, *, grade="", status="", tags=(), expires_in_days=None, **extra):
    site = added_site(organization=org, hostname=hostname, last_grade=grade, last_audit_status=status,
                               **extra)
    site.tags.set([Tag.objects.get_or_create(organization=org, name=t)[0] for t in tags])
    if expires_in_days is not None:
        now = timezone.now()
        audit = Audit.objects.create(site=site, organization=org, status="done", grade=grade)
        AuditCertificate.objects.create(audit=audit, position=0, subject=f"CN={hostname}", issuer="CN=Test CA",
                                        not_before=now - timedelta(days=60),
                                        not_after=now + timedelta(days=expires_in_days), key_type="EC",
                                        key_bits=256, fingerprint_sha256="0" * 64)
        site.last_audit, site.last_audit_at = audit, now
        site.save(update_fields=["last_audit", "last_audit_at"])
    return site


def hostnames(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [s["hostname"] for s in response.json()["results"]]


def test_it_lists_only_the_keys_organization(api, api_b, site_a, site_b):
    assert hostnames(api.get(SITES)) == [site_a.hostname]
    assert hostnames(api_b.get(SITES)) == [site_b.hostname]


def test_it_filters_by_tag_grade_expiry_and_search(api, org_a):
    add_site(org_a, "a.example", grade="A+", tags=["prod"], expires_in_days=90)
    add_site(org_a, "b.example", grade="B", tags=["prod", "client-b"], expires_in_days=5)
    add_site(org_a, "c.example", grade="F", name="Legacy shop")
    assert hostnames(api.get(SITES, {"tag": "prod"})) == ["a.example", "b.example"]
    assert hostnames(api.get(SITES, {"tag": "CLIENT-B"})) == ["b.example"]
    assert hostnames(api.get(SITES, {"grade": "A+"})) == ["a.example"]
    assert hostnames(api.get(SITES, {"expiring_within_days": "30"})) == ["b.example"]
    assert hostnames(api.get(SITES, {"search": "legacy"})) == ["c.example"]
    assert hostnames(api.get(SITES, {"search": "b.ex"})) == ["b.example"]


def test_grade_is_exact_and_grade_max_means_this_grade_or_worse(api, org_a):
    """docs/api.md: `grade_max=B` lists every site graded B or worse; `grade=B` lists B only."""
    for host, grade in [("aplus.example", "A+"), ("a.example", "A"), ("b.example", "B"), ("c.example", "C"),
                        ("f.example", "F"), ("t.example", "T"), ("m.example", "M"), ("never.example", "")]:
        add_site(org_a, host, grade=grade)
    assert hostnames(api.get(SITES, {"grade": "B"})) == ["b.example"]
    assert hostnames(api.get(SITES, {"grade_max": "B"})) == [
        "b.example", "c.example", "f.example", "m.example", "t.example"]
    assert hostnames(api.get(SITES, {"grade_max": "A+"})) == [
        "a.example", "aplus.example", "b.example", "c.example", "f.example", "m.example", "t.example"]
    assert hostnames(api.get(SITES, {"grade_max": "F"})) == ["f.example", "m.example", "t.example"]
    csv = b"".join(api.get("/api/v1/sites.csv", {"grade_max": "C"}).streaming_content).decode()
    assert sorted(line.split(",")[2] for line in csv.splitlines()[1:]) == ["c.example", "f.example",
                                                                           "m.example", "t.example"]


@pytest.mark.parametrize("params, field", [
    ({"grade": "Z"}, "grade"),
    ({"grade_max": "B or worse"}, "grade_max"),
    ({"expiring_within_days": "-1"}, "expiring_within_days"),
    ({"expiring_within_days": "soon"}, "expiring_within_days"),
    ({"page_size": "0"}, "page_size"),
    ({"page_size": "100000"}, "page_size"),
    ({"cursor": "garbage"}, "cursor"),
    ({"fields": "id,password"}, "fields"),
])
def test_it_answers_400_for_bad_query_parameters(api, site_a, params, field):
    response = api.get(SITES, params)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_query" and field in error["fields"]


def test_it_pages_with_a_cursor(api, org_a):
    for n in range(7):
        add_site(org_a, f"s{n}.example")
    first = api.get(SITES, {"page_size": 3}).json()
    second = api.get(first["next"]).json()
    third = api.get(second["next"]).json()
    seen = [s["hostname"] for page in (first, second, third) for s in page["results"]]
    assert seen == [f"s{n}.example" for n in range(7)]
    assert third["next"] is None and second["previous"]


def test_it_returns_only_the_fields_asked_for(api, site_a):
    body = api.get(SITES, {"fields": "id,hostname"}).json()
    assert body["results"] == [{"id": site_a.pk, "hostname": site_a.hostname}]
    detail = api.get(f"{SITES}{site_a.pk}/", {"fields": "last_grade"}).json()
    assert detail == {"last_grade": ""}


def test_it_exports_every_matching_site_as_csv(api, org_a):
    for n in range(3):
        add_site(org_a, f"s{n}.example", grade="A", tags=["x", "y"])
    add_site(org_a, "=cmd.example", grade="B")   # never a formula in a spreadsheet
    for response in (api.get(SITES, {"format": "csv", "grade": "A"}), api.get(SITES, {"grade": "A"},
                                                                              HTTP_ACCEPT="text/csv")):
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        lines = b"".join(response.streaming_content).decode().splitlines()
        assert lines[0].startswith("id,url,hostname,")
        assert [line.split(",")[2] for line in lines[1:]] == ["s0.example", "s1.example", "s2.example"]
        assert "x; y" in lines[1]


def test_csv_cells_never_start_a_formula(api, org_a):
    added_site(organization=org_a, hostname="ok.example", name="=HYPERLINK(\"http://evil\")")
    text = b"".join(api.get(SITES, {"format": "csv"}).streaming_content).decode()
    assert "'=HYPERLINK" in text


def test_it_creates_a_site_like_the_dashboard_form(api, org_a):
    response = api.post(SITES, {"hostname": "https://Bücher.example/", "tags": ["Client-A"], "name": "Books"},
                        format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["hostname"] == "xn--bcher-kva.example" and body["display_hostname"] == "bücher.example"
    assert body["tags"] == ["client-a"] and response["Location"] == body["url"]
    assert Site.objects.get(pk=body["id"]).organization == org_a
    assert Site.objects.get(pk=body["id"]).schedule.frequency == "nightly"   # as every added site (sites/services.py)


@pytest.mark.parametrize("payload, field, words", [
    ({}, "hostname", "required"),
    ({"hostname": "not a host"}, "hostname", ""),
    ({"hostname": "example.com", "https_port": 70000}, "https_port", "65535"),
    ({"hostname": "example.com", "https_port": "x"}, "https_port", "integer"),
    ({"hostname": "example.com:8443", "https_port": 9443}, "https_port", "8443"),
    ({"hostname": "example.com", "pinned_ip": "999.1.1.1"}, "pinned_ip", "IP"),
    ({"hostname": "example.com", "tags": "prod"}, "tags", "list"),
    ({"hostname": "example.com", "name": "x" * 121}, "name", "120"),
])
def test_it_explains_each_invalid_field_with_422(api, org_a, payload, field, words):
    response = api.post(SITES, payload, format="json")
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert error["code"] == "validation_error" and field in error["fields"], error
    assert words.lower() in " ".join(error["fields"][field]).lower()
    assert not Site.objects.filter(organization=org_a).exists()


def test_it_answers_409_for_a_duplicate(api, site_a):
    response = api.post(SITES, {"hostname": site_a.hostname}, format="json")
    assert response.status_code == 409
    assert error_of(response)["code"] == "duplicate_site"


def test_it_refuses_private_targets_in_production_mode(api, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    response = api.post(SITES, {"hostname": "127.0.0.1"}, format="json")
    assert response.status_code == 422
    assert "hostname" in error_of(response)["fields"]


def test_it_answers_400_for_malformed_json_and_415_for_form_bodies(api):
    response = api.post(SITES, data="{not json", content_type="application/json")
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_request"
    response = api.post(SITES, data="hostname=example.com", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415 and error_of(response)["code"] == "unsupported_media_type"


def test_it_creates_in_bulk_with_a_result_per_item(api, site_a):
    items = [{"hostname": "one.example"}, {"hostname": "bad host"}, {"hostname": site_a.hostname},
             {"hostname": "two.example:8443", "tags": ["bulk"]}]
    response = api.post(f"{SITES}bulk/", {"sites": items}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["created"], body["failed"]) == (2, 2)
    assert [r["created"] for r in body["results"]] == [True, False, False, True]
    assert body["results"][1]["error"]["code"] == "validation_error"
    assert body["results"][2]["error"]["code"] == "duplicate_site"
    assert body["results"][3]["site"]["tags"] == ["bulk"]


@pytest.mark.parametrize("payload", [{}, {"sites": []}, {"sites": "x"}, {"sites": [{}] * 1001}])
def test_it_refuses_a_bad_bulk_body(api, payload):
    response = api.post(f"{SITES}bulk/", payload, format="json")
    assert response.status_code == 422
    assert "sites" in error_of(response)["fields"]


def test_it_updates_and_replaces_a_site(api, site_a):
    response = api.patch(f"{SITES}{site_a.pk}/", {"name": "Shop EU", "tags": ["eu"]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Shop EU" and response.json()["tags"] == ["eu"]
    assert response.json()["hostname"] == site_a.hostname   # untouched by a PATCH
    response = api.put(f"{SITES}{site_a.pk}/", {"hostname": "shop.example.com:8443"}, format="json")
    assert response.status_code == 200
    site_a.refresh_from_db()
    assert (site_a.https_port, site_a.name) == (8443, "")


def test_a_bad_update_changes_nothing(api, site_a):
    response = api.patch(f"{SITES}{site_a.pk}/", {"https_port": 0}, format="json")
    assert response.status_code == 422
    site_a.refresh_from_db()
    assert site_a.https_port == 443


def test_it_deletes_a_site_and_logs_it(api, site_a):
    from tlsaudit.core.models import AuditLogEntry

    assert api.delete(f"{SITES}{site_a.pk}/").status_code == 204
    assert not Site.objects.filter(pk=site_a.pk).exists()
    entry = AuditLogEntry.objects.get(action="site.deleted")
    assert entry.target == site_a.origin and "agency-a write" in entry.detail["via"]


def test_a_read_only_key_cannot_write(api_ro, site_a):
    for response in (api_ro.post(SITES, {"hostname": "x.example"}, format="json"),
                     api_ro.post(f"{SITES}bulk/", {"sites": [{"hostname": "x.example"}]}, format="json"),
                     api_ro.patch(f"{SITES}{site_a.pk}/", {"name": "x"}, format="json"),
                     api_ro.delete(f"{SITES}{site_a.pk}/")):
        assert response.status_code == 403
        assert error_of(response)["code"] == "read_only_key"
    assert api_ro.get(f"{SITES}{site_a.pk}/").status_code == 200
    site_a.refresh_from_db()
    assert site_a.name == "Shop"


def test_another_organizations_sites_answer_404(api_b, site_a):
    for response in (api_b.get(f"{SITES}{site_a.pk}/"), api_b.patch(f"{SITES}{site_a.pk}/", {"name": "x"},
                                                                     format="json"),
                     api_b.delete(f"{SITES}{site_a.pk}/")):
        assert response.status_code == 404
        assert error_of(response)["code"] == "not_found"
    assert Site.objects.filter(pk=site_a.pk).exists()


@pytest.mark.parametrize("count", [3, 30])
def test_the_list_costs_the_same_queries_for_any_page_size(api, org_a, django_assert_max_num_queries, count):
    for n in range(count):
        add_site(org_a, f"s{n}.example", tags=["t"], expires_in_days=n)
    with django_assert_max_num_queries(6):
        assert len(hostnames(api.get(SITES, {"page_size": count}))) == count
