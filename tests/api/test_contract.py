"""The API's contract beyond one resource (issue 19): what the committed schema says about bodies and
headers, and the server keeping it on every operation of that schema: unknown query parameters refused
with the accepted ones listed, every path with or without its trailing slash (no redirect, no check
skipped), ETags and 304s that never cross organizations, RateLimit-* on every kind of answer, OPTIONS
without a 500."""

import re
from pathlib import Path

import pytest
import yaml
from rest_framework.test import APIClient

from tests.support.api import client_with, error_of, make_key
from tlsaudit.api import keys

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
OPERATIONS = [(path, method, op) for path, ops in SCHEMA["paths"].items() for method, op in ops.items()]
RATE_LIMIT = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy")
pytestmark = pytest.mark.django_db


def concrete(path: str, pk: int = 1) -> str:
    return re.sub(r"\{[^}]+\}", str(pk), path)


def query_names(operation) -> set[str]:
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}


def resolve(schema):
    ref = schema.get("$ref")
    return SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


# --- what the schema says ---------------------------------------------------------------------------

def test_csv_and_pdf_bodies_are_strings_in_every_operation():
    bodies = [(path, method, media, body["schema"]) for path, method, op in OPERATIONS
              for response in op["responses"].values() for media, body in response.get("content", {}).items()]
    csv = [schema for *_, media, schema in bodies if media == "text/csv"]
    pdf = [schema for *_, media, schema in bodies if media in ("application/pdf", "application/octet-stream")]
    assert len(csv) > 30 and all(schema["type"] == "string" and "$ref" not in schema for schema in csv)
    assert pdf and all(schema == {"type": "string", "format": "binary"} for schema in pdf)
    assert {media for *_, media, _ in bodies} == {"application/json", "text/csv", "application/pdf",
                                                  "application/octet-stream"}


def test_answers_that_fields_can_trim_require_no_field():
    for path, method, op in OPERATIONS:
        if "fields" not in query_names(op) or "application/json" not in op["responses"]["200"].get("content", {}):
            continue
        schema = resolve(op["responses"]["200"]["content"]["application/json"]["schema"])
        if {"next", "results"} <= set(schema["properties"]):
            schema = resolve(schema["properties"]["results"]["items"])
        assert "required" not in schema, (path, method)
        fields = next(p for p in op["parameters"] if p["name"] == "fields")
        assert set(fields["schema"]["items"]["enum"]) == set(schema["properties"]), (path, method)


def test_every_answer_describes_its_headers():
    for path, method, op in OPERATIONS:
        for code, response in op["responses"].items():
            headers = response.get("headers", {})
            assert set(RATE_LIMIT) <= set(headers), (path, method, code)
            if code in ("429", "503"):
                assert headers["Retry-After"]["required"] is True, (path, method, code)
            if code in ("201", "202"):
                assert headers["Location"]["required"] is True, (path, method, code)
        if method == "get" and not path.endswith(".csv"):
            assert "304" in op["responses"] and "ETag" in op["responses"]["200"]["headers"], path
        if any(p["name"] == "Idempotency-Key" for p in op.get("parameters", [])):
            assert "Idempotency-Replayed" in op["responses"]["202"]["headers"], path
    bulk = SCHEMA["paths"]["/api/v1/sites/bulk/"]["post"]["responses"]["200"]["content"]["application/json"]
    assert resolve(bulk["schema"])["required"] == ["created", "failed", "results"]


# --- what the server does, for every operation of the schema -------------------------------------------

def test_unknown_query_parameters_answer_400_listing_exactly_what_the_schema_documents(org_a, site_a):
    api = client_with(make_key(org_a)[1])
    for path, method, op in OPERATIONS:
        response = getattr(api, method)(concrete(path, site_a.pk) + "?grdae=F")
        error = error_of(response)
        assert (response.status_code, error["code"]) == (400, "invalid_query"), (path, method, response.content)
        listed = error["fields"]["grdae"][0].split("accepts: ")[1].rstrip(".")
        assert set(listed.split(", ")) - {"none"} == query_names(op), (path, method)
        assert_rate_limited(response)


def test_a_hostile_parameter_name_comes_back_inert_and_bounded(org_a):
    api = client_with(make_key(org_a)[1])
    names = ["<img src=x onerror=alert(1)>", "a\u202eb", "x" * 500] + [f"p{n}" for n in range(200)]
    response = api.get("/api/v1/sites/", dict.fromkeys(names, "1"), HTTP_ACCEPT="text/html,*/*;q=0.8")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    text = response.content.decode()
    assert "<" not in text and ">" not in text and "\u202e" not in text and "x" * 41 not in text
    assert "\\\\u003cimg" in text   # shown escaped, so the client still sees which one it sent
    assert len(error_of(response)["fields"]) == 5


def test_every_path_answers_the_same_without_its_trailing_slash_and_never_redirects(org_a, site_a):
    read_only = client_with(make_key(org_a, keys.READ_ONLY)[1])
    for path, method, _ in OPERATIONS:
        with_slash = concrete(path, site_a.pk)
        without = with_slash[:-1] if with_slash.endswith("/") else with_slash + "/"
        # A read-only key: reads run, writes are refused the same way on both paths (nothing changes).
        answers = [getattr(read_only, method)(p) for p in (with_slash, without)]
        assert answers[0].status_code == answers[1].status_code != 301, (path, method)
        assert answers[0].status_code not in (301, 302, 308) and answers[0].status_code < 500, (path, method)


def test_without_the_slash_a_write_still_needs_its_key_and_the_session_its_csrf_token(org_a, alice):
    assert APIClient().post("/api/v1/sites", {"hostname": "a.example"}, format="json").status_code == 401
    session = APIClient(enforce_csrf_checks=True)
    session.force_login(alice)
    refused = session.post("/api/v1/sites", {"hostname": "a.example"}, format="json")
    assert (refused.status_code, error_of(refused)["code"]) == (403, "forbidden")
    assert "CSRF" in error_of(refused)["message"]
    created = client_with(make_key(org_a)[1]).post("/api/v1/sites", {"hostname": "a.example"}, format="json")
    assert created.status_code == 201 and created["Location"] == f"/api/v1/sites/{created.json()['id']}/"


def test_options_never_fails_on_any_path(org_a, site_a):
    api = client_with(make_key(org_a)[1])
    for path in SCHEMA["paths"]:
        assert api.options(concrete(path, site_a.pk)).status_code < 500, path


# --- ETags -------------------------------------------------------------------------------------------

def test_a_get_answers_304_while_the_etag_is_current_and_200_once_it_changed(org_a, site_a):
    api = client_with(make_key(org_a)[1])
    first = api.get(f"/api/v1/sites/{site_a.pk}/")
    etag = first["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{40}"', etag)
    for sent in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        again = api.get(f"/api/v1/sites/{site_a.pk}/", HTTP_IF_NONE_MATCH=sent)
        assert (again.status_code, again.content, again["ETag"]) == (304, b"", etag), sent
        assert "no-store" in again["Cache-Control"]
        assert_rate_limited(again)
    api.patch(f"/api/v1/sites/{site_a.pk}/", {"name": "Renamed"}, format="json")
    changed = api.get(f"/api/v1/sites/{site_a.pk}/", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_list_pages_and_fields_have_their_own_etags(org_a, site_a):
    api = client_with(make_key(org_a)[1])
    page = api.get("/api/v1/sites/")
    trimmed = api.get("/api/v1/sites/", {"fields": "id"})
    assert page["ETag"] != trimmed["ETag"]
    assert api.get("/api/v1/sites/", {"fields": "id"}, HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 200
    assert api.get("/api/v1/sites/", HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 304
    assert "ETag" not in api.get("/api/v1/sites/", {"format": "csv"})   # a streamed export


def test_etags_never_match_across_organizations(org_a, org_b, site_a):
    api_a, api_b = client_with(make_key(org_a)[1]), client_with(make_key(org_b)[1])
    # The same bytes (an empty page of audits) in two organizations: two tags.
    page_a, page_b = api_a.get("/api/v1/audits/"), api_b.get("/api/v1/audits/")
    assert page_a.content == page_b.content and page_a["ETag"] != page_b["ETag"]
    assert api_b.get("/api/v1/audits/", HTTP_IF_NONE_MATCH=page_a["ETag"]).status_code == 200
    # Agency A's object is not confirmed to B by a tag: 404 as without one, and no tag in it.
    etag = api_a.get(f"/api/v1/sites/{site_a.pk}/")["ETag"]
    for sent in (etag, "*"):
        other = api_b.get(f"/api/v1/sites/{site_a.pk}/", HTTP_IF_NONE_MATCH=sent)
        assert other.status_code == 404 and "ETag" not in other


# --- RateLimit-* ------------------------------------------------------------------------------------

def assert_rate_limited(response):
    assert all(name in response for name in RATE_LIMIT), (response.status_code, dict(response.items()))


def test_every_kind_of_answer_carries_the_rate_limit_fields(org_a, site_a):
    _, plaintext = make_key(org_a, rate_per_minute=50)
    api, read_only = client_with(plaintext), client_with(make_key(org_a, keys.READ_ONLY)[1])
    answers = {
        "ok": api.get("/api/v1/sites/"),
        "csv export": api.get("/api/v1/sites.csv"),
        "bad key": client_with("tlaw_not-a-key").get("/api/v1/sites/"),
        "no key": APIClient().get("/api/v1/sites/"),
        "read-only key": read_only.post("/api/v1/sites/", {"hostname": "x.example"}, format="json"),
        "not found": api.get("/api/v1/sites/999999/"),
        "bad query": api.get("/api/v1/sites/", {"page_size": 0}),
        "method": api.put("/api/v1/organization/", {}, format="json"),
        "not acceptable": api.get("/api/v1/sites/", HTTP_ACCEPT="application/xml"),
        "unsupported body": api.post("/api/v1/sites/", "hostname=x", content_type="application/x-www-form-urlencoded"),
        "invalid": api.post("/api/v1/sites/", {"hostname": ""}, format="json"),
    }
    assert {name: r.status_code for name, r in answers.items()} == {
        "ok": 200, "csv export": 200, "bad key": 401, "no key": 401, "read-only key": 403, "not found": 404,
        "bad query": 400, "method": 405, "not acceptable": 406, "unsupported body": 415, "invalid": 422}
    for name, response in answers.items():
        assert_rate_limited(response)
    # The refused requests were counted with the others: this is the key's 9th (the two without a key count
    # for the client's IP).
    assert api.get("/api/v1/organization/")["RateLimit-Remaining"] == str(50 - 9)


def test_a_bad_key_is_counted_and_refused_by_client_ip(org_a, settings):
    settings.API_THROTTLE_RATE = "3/min"
    answers = [client_with("tlaw_guess").get("/api/v1/sites/") for _ in range(4)]
    assert [a.status_code for a in answers] == [401, 401, 401, 429]
    assert answers[-1]["Retry-After"]
