"""Browser probes over the API: who a key's probe acts for, the service's refusals as statuses,
and a real probe by a real browser worker (Debian's Chromium) against the nginx lab."""

import csv
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.api.factories import queries_of
from tests.support.api import client_with, error_of, make_key
from tests.support.probes import wait_finished
from tests.support.sites import added_site
from tlsaudit.api import keys
from tlsaudit.probes.models import Probe


def probes(site) -> str:
    return f"/api/v1/sites/{site.pk}/probes/"


def detail(probe) -> str:
    return f"/api/v1/probes/{probe.pk}/"


def make_probe(site, status="done", **fields) -> Probe:
    return Probe.objects.create(site=site, organization=site.organization, status=status, host=site.hostname,
                                params={"path": "/", "runs": 2, "variants": ["https", "http"]}, loads_total=8,
                                **fields)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [p["id"] for p in response.json()["results"]]


@pytest.fixture
def creator_api(org_a, alice):
    """A read-write key created by Alice (a verified owner): its probes act for her."""
    return client_with(make_key(org_a, keys.READ_WRITE, "alice's ci", created_by=alice)[1])


# --- lists ---------------------------------------------------------------------------------------

def test_a_sites_probes_are_listed_newest_first_and_filtered(api, org_a, site_a):
    other = added_site(organization=org_a, hostname="other.example.com")
    done, running = make_probe(site_a), make_probe(site_a, status="running", loads_done=2)
    make_probe(other)
    assert ids(api.get(probes(site_a))) == [running.pk, done.pk]
    assert ids(api.get(probes(site_a), {"status": "done"})) == [done.pk]
    item = api.get(probes(site_a)).json()["results"][0]
    assert (item["url"], item["progress_percent"], item["loads_done"]) == (detail(running), 25, 2)
    assert not {"summary", "tables", "raw"} & set(item)


@pytest.mark.parametrize("params, field", [({"status": "ok"}, "status"), ({"fields": "id,result"}, "fields"),
                                           ({"cursor": "zzz"}, "cursor")])
def test_bad_list_parameters_answer_400(api, site_a, params, field):
    response = api.get(probes(site_a), params)
    assert response.status_code == 400 and field in error_of(response)["fields"]


def test_the_list_exports_as_csv_and_keeps_only_the_named_fields(api, site_a):
    probe = make_probe(site_a)
    for response in (api.get(probes(site_a), {"format": "csv"}), api.get(probes(site_a), HTTP_ACCEPT="text/csv")):
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert [(r["id"], r["status"], r["params.variants"]) for r in rows] == [(str(probe.pk), "done",
                                                                                 "https; http")]
    assert api.get(probes(site_a), {"fields": "id"}).json()["results"] == [{"id": probe.pk}]
    assert api.get(detail(probe), {"fields": "status,tables"}).json() == {"status": "done", "tables": []}


def test_the_list_costs_the_same_queries_for_3_or_25_probes(api, site_a, django_assert_max_num_queries):
    for _ in range(3):
        make_probe(site_a)
    few = queries_of(api, probes(site_a))
    for _ in range(22):
        make_probe(site_a, status="failed", error_code="timeout")
    with django_assert_max_num_queries(few):
        assert len(api.get(probes(site_a), {"page_size": 50}).json()["results"]) == 25


# --- starting a probe -----------------------------------------------------------------------------

def test_a_probe_is_queued_for_the_keys_creator(creator_api, alice, site_a, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = creator_api.post(probes(site_a), {"runs": 2, "path": "/shop", "variants": ["https"]},
                                    format="json")
    assert response.status_code == 202, response.content
    probe = Probe.objects.get()
    assert response["Location"] == detail(probe) == response.json()["url"]
    assert (probe.status, probe.requested_by, probe.loads_total) == ("queued", alice, 4)
    assert probe.params == {"path": "/shop", "runs": 2, "seconds": 20, "variants": ["https"]}
    assert len(callbacks) == 1


def test_defaults_fill_an_empty_body(creator_api, site_a):
    response = creator_api.post(probes(site_a), {}, format="json")
    assert response.status_code == 202
    # Sized by time (#26): 20 s of rounds, at most 20 of them
    assert response.json()["params"] == {"path": "/", "runs": 20, "seconds": 20, "variants": ["https", "http"]}


@pytest.mark.parametrize("body, field", [
    ({"runs": 0}, "runs"), ({"runs": 21}, "runs"), ({"runs": "five"}, "runs"),
    ({"seconds": 4}, "seconds"), ({"seconds": 121}, "seconds"), ({"seconds": "long"}, "seconds"),
    ({"path": "shop"}, "path"), ({"path": "/a b"}, "path"), ({"path": "/" + "a" * 500}, "path"),
    ({"variants": ["ftp"]}, "variants"), ({"variants": []}, "variants"), ({"variants": "https"}, "variants"),
])
def test_probe_fields_are_validated_one_by_one(creator_api, site_a, body, field):
    response = creator_api.post(probes(site_a), body, format="json")
    assert response.status_code == 422 and field in error_of(response)["fields"], response.content
    assert not Probe.objects.exists()


def test_a_key_nobody_can_answer_for_cannot_run_probes(api, site_a):
    response = api.post(probes(site_a), {}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "unverified_email"
    assert "no longer a member" in error_of(response)["message"] and not Probe.objects.exists()


def test_a_key_whose_creator_left_the_organization_cannot_run_probes(org_a, bob, site_a):
    client = client_with(make_key(org_a, keys.READ_WRITE, "bob's", created_by=bob)[1])
    org_a.memberships.filter(user=bob).delete()
    response = client.post(probes(site_a), {}, format="json")
    assert response.status_code == 403 and "no longer a member" in error_of(response)["message"]


def test_a_creator_who_has_not_verified_their_email_cannot_run_probes(creator_api, alice, site_a):
    alice.email_verified = False
    alice.save()
    response = creator_api.post(probes(site_a), {}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "unverified_email"
    assert "Verify your email address" in error_of(response)["message"]


def test_one_probe_per_site_at_a_time_answers_409(creator_api, site_a):
    make_probe(site_a, status="running")
    response = creator_api.post(probes(site_a), {}, format="json")
    assert response.status_code == 409 and error_of(response)["code"] == "busy"


def test_over_the_hourly_limit_it_answers_429_with_retry_after(creator_api, site_a, settings):
    settings.PROBE_LIMIT_PER_ORG_HOUR = 1
    make_probe(site_a)
    response = creator_api.post(probes(site_a), {}, format="json")
    assert response.status_code == 429 and error_of(response)["code"] == "probes_per_org"
    assert 3500 <= int(response["Retry-After"]) <= 3600


def test_over_the_daily_cap_it_answers_429_until_the_oldest_ages_out(creator_api, site_a, settings):
    settings.PROBE_RUNS_PER_DAY = 2
    for hours_ago in (5, 2):
        probe = make_probe(site_a)
        Probe.objects.filter(pk=probe.pk).update(created_at=timezone.now() - timedelta(hours=hours_ago))
    response = creator_api.post(probes(site_a), {}, format="json")
    assert response.status_code == 429 and error_of(response)["code"] == "cap_probes_per_day"
    assert 19 * 3600 - 60 <= int(response["Retry-After"]) <= 19 * 3600


def test_an_idempotency_key_starts_one_probe(creator_api, site_a):
    headers = {"HTTP_IDEMPOTENCY_KEY": "probe-1"}
    first = creator_api.post(probes(site_a), {"runs": 1}, format="json", **headers)
    Probe.objects.update(status="done")
    again = creator_api.post(probes(site_a), {"runs": 1}, format="json", **headers)
    assert again.status_code == 202 and again["Idempotency-Replayed"] == "true"
    assert again.json() == first.json() and Probe.objects.count() == 1
    other = creator_api.post(probes(site_a), {"runs": 2}, format="json", **headers)
    assert other.status_code == 422 and Probe.objects.count() == 1


def test_a_read_only_key_reads_but_cannot_start_probes(api_ro, site_a):
    probe = make_probe(site_a)
    response = api_ro.post(probes(site_a), {}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "read_only_key"
    assert ids(api_ro.get(probes(site_a))) == [probe.pk] and api_ro.get(detail(probe)).status_code == 200


def test_agency_b_gets_404_for_agency_a_probes_and_sites(api_b, site_a):
    probe = make_probe(site_a)
    for method, url in (("get", probes(site_a)), ("post", probes(site_a)), ("get", detail(probe)),
                        ("get", f"{detail(probe)}?include=raw")):
        response = getattr(api_b, method)(url)
        assert response.status_code == 404 and error_of(response)["code"] == "not_found", (method, url)
    assert Probe.objects.count() == 1


# --- one probe ------------------------------------------------------------------------------------

def test_a_running_probe_shows_its_progress_and_a_failed_one_what_its_error_means(api, site_a):
    probe = make_probe(site_a, status="running", loads_done=6, current_step="HTTPS warm, run 2")
    body = api.get(detail(probe)).json()
    assert (body["progress_percent"], body["current_step"], body["charts"], body["page"]) == (
        75, "HTTPS warm, run 2", [], None)
    probe.status, probe.error_code, probe.error_message = "failed", "certificate", "ERR_CERT_AUTHORITY_INVALID"
    probe.save()
    body = api.get(detail(probe)).json()
    assert body["error_code"] == "certificate" and "custom CA" in body["error_help"]


def test_a_bad_include_answers_400(api, site_a):
    response = api.get(detail(make_probe(site_a)), {"include": "everything"})
    assert response.status_code == 400 and "include" in error_of(response)["fields"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_probe_started_over_the_api_is_run_by_chromium(browser_worker, org_a, alice,  # noqa: F811
                                                          probe_site):  # noqa: F811
    client = client_with(make_key(org_a, keys.READ_WRITE, "alice's ci", created_by=alice)[1])
    response = client.post(probes(probe_site), {"runs": 1}, format="json")
    assert response.status_code == 202, response.content
    with browser_worker():
        probe = wait_finished(Probe.objects.get(pk=response.json()["id"]))
    assert probe.status == "done", probe.error_message
    body = client.get(response["Location"]).json()
    assert (body["status"], body["loads_done"], body["loads_total"]) == ("done", 4, 4)
    assert {"https_cold", "https_warm", "http_cold", "http_warm"} <= set(body["summary"])
    assert body["summary"]["https_cold"]["load"]["median"] > 0
    assert set(body["increase_pct"]) == {"cold", "warm"}
    tables = {t["id"]: t for t in body["tables"]}
    assert set(tables) == {"requests", "increase"} and len(tables["requests"]["rows"]) == 4
    assert {"phases", "change"} <= {c["id"] for c in body["charts"]}
    # one load per side cannot give a 95 % interval: an estimate, and it says so
    assert body["increase"]["cold"]["load"]["verdict"] == "single run, no interval"
    assert body["increase"]["cold"]["load"]["pct"] is not None and body["increase"]["cold"]["load"]["low_pct"] is None
    assert body["page"]["tls"]["protocol"].startswith("TLS")
    raw = client.get(response["Location"], {"include": "raw"}).json()["raw"]
    assert len(raw["loads"]) == 4 and all(load["ok"] for load in raw["loads"])
