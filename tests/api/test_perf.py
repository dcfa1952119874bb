"""Load tests, sweeps and handshake runs over the API: the same checks as the dashboard (ownership
proof, the organization's caps, one run per site), each refusal as its own status, results as
the dashboard presents them, and a real run by a real worker against the nginx lab."""

import csv
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.api.factories import queries_of
from tests.support.api import client_with, error_of, make_key
from tests.support.loadtests import verify, wait_finished
from tlsaudit.api import keys
from tlsaudit.loadtests.models import LoadLimits, PerfRun

PATH = "/health"   # 200 on both of the lab's ports


def loadtests(site) -> str:
    return f"/api/v1/sites/{site.pk}/loadtests/"


def handshakes(site) -> str:
    return f"/api/v1/sites/{site.pk}/handshakes/"


def detail(run) -> str:
    return f"/api/v1/loadtests/{run.pk}/"


def make_run(site, kind="load", status="done", **fields) -> PerfRun:
    return PerfRun.objects.create(site=site, organization=site.organization, kind=kind, status=status,
                                  params={"requests": 10, "concurrency": 1}, host=site.hostname, **fields)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [r["id"] for r in response.json()["results"]]


@pytest.fixture
def verified(site_a):
    verify(site_a)
    return site_a


@pytest.fixture
def limits(org_a):
    return LoadLimits.objects.create(organization=org_a, max_concurrency=10, max_requests_per_run=300,
                                     max_duration_s=30, runs_per_day=5)


# --- lists ---------------------------------------------------------------------------------------

def test_load_tests_and_handshake_runs_are_listed_apart(api, site_a):
    load, sweep = make_run(site_a, "load"), make_run(site_a, "sweep")
    hs = make_run(site_a, "handshakes")
    assert ids(api.get(loadtests(site_a))) == [sweep.pk, load.pk]
    assert ids(api.get(handshakes(site_a))) == [hs.pk]
    assert ids(api.get(loadtests(site_a), {"kind": "sweep"})) == [sweep.pk]
    first = api.get(loadtests(site_a)).json()["results"][1]
    assert first["url"] == detail(load) and first["progress_percent"] == 100 and first["kind"] == "load"
    assert not {"results", "summary", "charts"} & set(first)


def test_lists_filter_by_status(api, site_a):
    running = make_run(site_a, status="running")
    make_run(site_a, status="failed")
    assert ids(api.get(loadtests(site_a), {"status": "running"})) == [running.pk]
    assert ids(api.get(handshakes(site_a), {"status": "running"})) == []


@pytest.mark.parametrize("url, params, field", [
    ("load", {"status": "stopped"}, "status"), ("load", {"kind": "handshakes"}, "kind"),
    ("hs", {"status": "paused"}, "status"), ("load", {"fields": "id,secret"}, "fields"),
    ("hs", {"page_size": "-1"}, "page_size"),
])
def test_bad_list_parameters_answer_400(api, site_a, url, params, field):
    response = api.get(loadtests(site_a) if url == "load" else handshakes(site_a), params)
    assert response.status_code == 400 and field in error_of(response)["fields"]


def test_lists_export_as_csv_and_keep_only_the_named_fields(api, site_a):
    run = make_run(site_a)
    for response in (api.get(loadtests(site_a), {"format": "csv"}),
                     api.get(loadtests(site_a), HTTP_ACCEPT="text/csv")):
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert [(r["id"], r["kind"], r["params.requests"]) for r in rows] == [(str(run.pk), "load", "10")]
    assert api.get(loadtests(site_a), {"fields": "id,status"}).json()["results"] == [{"id": run.pk,
                                                                                       "status": "done"}]
    assert api.get(detail(run), {"fields": "status,steps"}).json() == {"status": "done", "steps": []}


def test_lists_cost_the_same_queries_for_3_or_25_runs(api, site_a, django_assert_max_num_queries):
    for kind in ("load", "sweep", "handshakes"):
        for _ in range(3):
            make_run(site_a, kind)
    few = {url: queries_of(api, url) for url in (loadtests(site_a), handshakes(site_a))}
    for _ in range(22):
        make_run(site_a, "load")
        make_run(site_a, "handshakes")
    for url, count in few.items():
        with django_assert_max_num_queries(count):
            assert len(api.get(url, {"page_size": 50}).json()["results"]) >= 25


# --- starting runs --------------------------------------------------------------------------------

def test_a_load_test_is_queued_with_202_and_its_url(org_a, alice, verified, django_capture_on_commit_callbacks):
    client = client_with(make_key(org_a, keys.READ_WRITE, "perf ci", created_by=alice)[1])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(loadtests(verified), {"kind": "load", "requests": 50, "concurrency": 5,
                                                     "keepalive": True, "path": "/health"}, format="json")
    assert response.status_code == 202, response.content
    run = PerfRun.objects.get()
    assert response["Location"] == detail(run) == response.json()["url"]
    assert (run.kind, run.status, run.requested_by) == ("load", "queued", alice)
    assert run.params == {"scheme": "https", "requests": 50, "concurrency": 5, "keepalive": True, "path": "/health",
                          "timeout_s": 10.0, "repeats": 3, "seconds": 5.0}   # the longest that fits
    assert len(callbacks) == 1


def test_a_sweep_and_a_handshake_run_are_queued_with_their_params(api, verified):
    sweep = api.post(loadtests(verified), {"kind": "sweep", "levels": [1, 5], "requests": 20, "modes": ["new"],
                                           "repeats": 5}, format="json")
    assert sweep.status_code == 202, sweep.content
    # 22 runs: at 5 s each the plan could take 128 s, above the 120 s cap; 3 s fits
    assert sweep.json()["params"] == {"levels": [1, 5], "requests": 20, "modes": ["new"], "path": "/", "repeats": 5,
                                      "seconds": 3.0}
    PerfRun.objects.filter(pk=sweep.json()["id"]).update(status="done")
    hs = api.post(handshakes(verified), {"versions": ["1.3"], "agents_levels": [2], "per_agent": 3}, format="json")
    assert hs.status_code == 202, hs.content
    assert hs.json()["kind"] == "handshakes" and hs.json()["params"] == {
        "versions": ["1.3"], "agents_levels": [2], "per_agent": 3, "resume": False, "suites": [], "repeats": 3,
        "seconds": 5.0}


@pytest.mark.parametrize("body, field", [
    ({}, "kind"),
    ({"kind": "handshakes"}, "kind"),
    ({"kind": "load", "scheme": "ftp"}, "scheme"),
    ({"kind": "load", "requests": 0}, "requests"),
    ({"kind": "load", "requests": "many"}, "requests"),
    ({"kind": "load", "concurrency": 0}, "concurrency"),
    ({"kind": "load", "requests": 5, "concurrency": 6}, "concurrency"),
    ({"kind": "load", "keepalive": "sometimes"}, "keepalive"),
    ({"kind": "load", "timeout_s": 0.1}, "timeout_s"),
    ({"kind": "load", "timeout_s": 61}, "timeout_s"),
    ({"kind": "load", "path": "health"}, "path"),
    ({"kind": "load", "path": "/a b"}, "path"),
    ({"kind": "load", "levels": [1, 2]}, "levels"),
    ({"kind": "sweep", "concurrency": 3}, "concurrency"),
    ({"kind": "sweep", "levels": []}, "levels"),
    ({"kind": "sweep", "levels": [0, 5]}, "levels"),
    ({"kind": "sweep", "levels": "1,2"}, "levels"),
    ({"kind": "sweep", "levels": [1, 600]}, "levels"),
    ({"kind": "sweep", "modes": ["both"]}, "modes"),
    ({"kind": "sweep", "modes": []}, "modes"),
])
def test_load_test_fields_are_validated_one_by_one(api, verified, body, field):
    response = api.post(loadtests(verified), body, format="json")
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert error["code"] == "validation_error" and field in error["fields"], error
    assert not PerfRun.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"versions": ["1.1"]}, "versions"),
    ({"versions": []}, "versions"),
    ({"agents_levels": [0]}, "agents_levels"),
    ({"agents_levels": "10"}, "agents_levels"),
    ({"per_agent": 0}, "per_agent"),
    ({"resume": "maybe"}, "resume"),
    ({"suites": ["TLS_AES_128_GCM_SHA256"] * 21}, "suites"),
    ({"suites": ["x" * 81]}, "suites"),
])
def test_handshake_fields_are_validated_one_by_one(api, verified, body, field):
    response = api.post(handshakes(verified), body, format="json")
    assert response.status_code == 422 and field in error_of(response)["fields"], response.content
    assert not PerfRun.objects.exists()


def test_a_body_that_is_not_an_object_answers_422_and_bad_json_400(api, verified):
    response = api.post(loadtests(verified), [1, 2], format="json")
    assert response.status_code == 422 and "__all__" in error_of(response)["fields"]
    response = api.post(loadtests(verified), "{not json", content_type="application/json")
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_request"


def test_an_unverified_site_answers_409(api, site_a):
    response = api.post(loadtests(site_a), {"kind": "load"}, format="json")
    assert response.status_code == 409 and error_of(response)["code"] == "unverified"
    assert "not verified" in error_of(response)["message"] and not PerfRun.objects.exists()


def test_one_run_per_site_at_a_time_answers_409(api, verified):
    make_run(verified, status="running")
    response = api.post(handshakes(verified), {}, format="json")
    assert response.status_code == 409 and error_of(response)["code"] == "busy"


@pytest.mark.parametrize("url, body, field, code", [
    ("load", {"kind": "load", "requests": 20, "concurrency": 11}, "concurrency", "cap_concurrency"),
    ("load", {"kind": "sweep", "levels": [1, 20], "requests": 20}, "levels", "cap_concurrency"),
    ("load", {"kind": "load", "requests": 301}, "requests", "cap_requests"),
    ("hs", {"agents_levels": [10, 25]}, "agents_levels", "cap_concurrency"),
    ("hs", {"agents_levels": [10], "per_agent": 31}, "per_agent", "cap_requests"),
    ("load", {"kind": "sweep", "levels": [1, 10], "requests": 20, "seconds": 30}, "seconds", "cap_duration"),
])
def test_over_a_cap_it_answers_422_naming_the_field(api, verified, limits, url, body, field, code):
    response = api.post(loadtests(verified) if url == "load" else handshakes(verified), body, format="json")
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert error["code"] == code and list(error["fields"]) == [field]
    assert "Agency A's maximum" in error["fields"][field][0]


def test_over_the_runs_per_day_it_answers_429_until_the_oldest_ages_out(api, verified, limits):
    limits.runs_per_day = 2
    limits.save()
    for hours_ago in (3, 1):
        run = make_run(verified)
        PerfRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=hours_ago))
    response = api.post(loadtests(verified), {"kind": "load"}, format="json")
    assert response.status_code == 429, response.content
    assert error_of(response)["code"] == "cap_runs_per_day"
    assert 21 * 3600 - 60 <= int(response["Retry-After"]) <= 21 * 3600   # the 3-hour-old run ages out first


def test_a_cap_of_zero_runs_per_day_answers_403(api, verified, limits):
    limits.runs_per_day = 0
    limits.save()
    response = api.post(loadtests(verified), {"kind": "load"}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "cap_runs_per_day"


def test_an_idempotency_key_starts_one_run(api, verified):
    body, headers = {"kind": "load", "requests": 10}, {"HTTP_IDEMPOTENCY_KEY": "deploy-4711"}
    first = api.post(loadtests(verified), body, format="json", **headers)
    PerfRun.objects.update(status="done")
    again = api.post(loadtests(verified), body, format="json", **headers)
    assert (first.status_code, again.status_code, again["Idempotency-Replayed"]) == (202, 202, "true")
    assert again.json()["id"] == first.json()["id"] and PerfRun.objects.count() == 1
    changed = api.post(loadtests(verified), {**body, "requests": 11}, format="json", **headers)
    assert changed.status_code == 422 and error_of(changed)["code"] == "idempotency_key_reused"
    assert PerfRun.objects.count() == 1


# --- one run, stopping it -------------------------------------------------------------------------

def test_stopping_a_queued_run_cancels_it_and_a_running_one_is_asked_to_stop(api, site_a):
    queued = make_run(site_a, status="queued")
    response = api.post(f"{detail(queued)}stop/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    running = make_run(site_a, status="running", work_total=100, work_done=40)
    response = api.post(f"{detail(running)}stop/")
    assert response.status_code == 202
    assert (response.json()["status"], response.json()["cancel_requested"]) == ("running", True)
    done = make_run(site_a, status="done")
    response = api.post(f"{detail(done)}stop/")
    assert response.status_code == 200 and response.json()["status"] == "done"


def test_a_running_run_shows_its_steps_and_progress(api, site_a):
    run = make_run(site_a, status="running", work_total=200, work_done=50,
                   progress={"steps": [{"label": "HTTPS c=5", "status": "running"}], "current": 0})
    body = api.get(detail(run)).json()
    assert body["progress_percent"] == 25 and body["steps"] == [{"label": "HTTPS c=5", "status": "running"}]
    assert body["results"] == [] and body["charts"] == []


def test_a_read_only_key_reads_but_cannot_start_or_stop(api_ro, site_a):
    verify(site_a)
    run = make_run(site_a, status="running")
    for url, body in ((loadtests(site_a), {"kind": "load"}), (handshakes(site_a), {}), (f"{detail(run)}stop/", {})):
        response = api_ro.post(url, body, format="json")
        assert response.status_code == 403 and error_of(response)["code"] == "read_only_key", url
    assert PerfRun.objects.get().status == "running" and not PerfRun.objects.get().cancel_requested
    assert api_ro.get(detail(run)).status_code == 200 and ids(api_ro.get(loadtests(site_a))) == [run.pk]


def test_agency_b_gets_404_for_agency_a_runs_and_sites(api_b, site_a):
    verify(site_a)
    run = make_run(site_a, status="running")
    for method, url in (("get", loadtests(site_a)), ("post", loadtests(site_a)), ("get", handshakes(site_a)),
                        ("post", handshakes(site_a)), ("get", detail(run)), ("post", f"{detail(run)}stop/")):
        response = getattr(api_b, method)(url, {"kind": "load"}, format="json") if method == "post" \
            else api_b.get(url)
        assert response.status_code == 404, (method, url, response.status_code)
        assert error_of(response)["code"] == "not_found"
    assert PerfRun.objects.count() == 1 and not PerfRun.objects.get().cancel_requested


# --- real runs ------------------------------------------------------------------------------------

@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_runs_started_over_the_api_report_ab_figures_and_percentiles(load_worker, org_a, alice,  # noqa: F811
                                                                      lab_site):  # noqa: F811
    client = client_with(make_key(org_a, keys.READ_WRITE, "perf ci", created_by=alice)[1])
    # Given a load test started over the API
    response = client.post(loadtests(lab_site), {"kind": "load", "requests": 20, "concurrency": 2, "path": PATH,
                                                 "repeats": 1}, format="json")
    assert response.status_code == 202, response.content
    run = wait_finished(PerfRun.objects.get(pk=response.json()["id"]))
    assert run.status == "done", run.error_message
    # Then its page in the API has ab's report, the "served within" percentiles and the dashboard's charts
    body = client.get(response["Location"]).json()
    assert (body["status"], body["progress_percent"], body["work_done"]) == ("done", 100, 40)   # warm-up + 1 run
    warmup, step = body["results"]
    assert (warmup["warmup"], step["warmup"], step["repeat"]) == (True, False, 0)
    assert step["report"]["complete_requests"] == 20 and step["report"]["failed_requests"] == 0
    assert step["report"]["requests_per_second"] > 0 and step["scheme"] == "https"
    percentiles = step["percentiles_ms"]
    assert list(percentiles) == ["50", "66", "75", "80", "90", "95", "98", "99", "100"]
    assert all(isinstance(v, int) for v in percentiles.values())
    assert percentiles["50"] <= percentiles["99"] <= percentiles["100"]
    charts = {c["id"]: c for c in body["charts"]}
    assert set(charts) == {"rate-new", "latency-new", "times-new"}
    assert charts["latency-new"]["table"]["rows"][0][1] == percentiles["50"]
    # one run of 20 requests: a figure without an interval (one run says nothing of the drift between runs)
    assert body["summary"]["cell"]["requests_per_second"]["method"] == "single run, no interval"
    assert charts["rate-new"]["datasets"][0]["data"][0] > 0 and charts["rate-new"]["datasets"][0]["intervals"] == [None]

    # And a handshake run over the API gives the timing statistics of each cell (no encoded histograms)
    response = client.post(handshakes(lab_site), {"versions": ["1.2", "1.3"], "agents_levels": [2], "per_agent": 3,
                                                  "repeats": 1}, format="json")
    assert response.status_code == 202, response.content
    run = wait_finished(PerfRun.objects.get(pk=response.json()["id"]))
    assert run.status == "done", run.error_message
    body = client.get(response["Location"]).json()
    cells = {entry["result"]["version"]: entry for entry in body["results"] if not entry["cell"]["warmup"]}
    assert set(cells) == {"1.2", "1.3"}
    for entry in cells.values():
        assert entry["result"]["count"] == 6 and entry["result"]["p50_ms"] > 0 and entry["cell"]["agents"] == 2
        assert "histograms" not in entry["result"]
    assert body["summary"]["versions"] and "handshakes" in {c["id"] for c in body["charts"]}
