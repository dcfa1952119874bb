"""Performance runs end to end: a real Celery worker on the `load` queue (chords over the real
Redis), the real engines, the nginx lab's plain-HTTP and HTTPS ports, the real database."""

import json
import re
import time

import pytest
from django.urls import reverse

from tests.hostile import closed_port
from tests.loadtests.conftest import verify, wait_finished
from tlsaudit.loadtests import services
from tlsaudit.loadtests.models import LoadLimits, PerfRun
from tlsaudit.sites.models import Site

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
LAB = "load_no_resumption"
PATH = "/health"   # 200 on both of the lab's ports (its HTTP "/" redirects to HTTPS)


def requests_logged(tls_lab, scheme: str) -> int:
    log = tls_lab.access_log(LAB) if scheme == "https" else tls_lab.directory / "logs" / f"{LAB}.http.log"
    return sum(1 for line in log.read_text().splitlines() if f"GET {PATH} " in line) if log.exists() else 0


def chart_specs(page: str) -> dict:
    match = re.search(r'<script id="perf-charts" type="application/json">(.*?)</script>', page, re.S)
    assert match, "no json_script with the chart data"
    return {spec["id"]: spec for spec in json.loads(match.group(1))}


def test_a_load_test_runs_on_agents_and_stores_the_merged_ab_report(load_worker, login, alice, org_a, lab_site,
                                                                    tls_lab):
    # Given a verified site on the lab and a member's click on "Start"
    before = requests_logged(tls_lab, "https")
    client = login(alice)
    response = client.post(reverse("loadtests:start", args=[org_a.slug, lab_site.pk]),
                           {"kind": "load", "scheme": "https", "requests": 40, "concurrency": 4, "path": PATH})
    run = PerfRun.objects.get(site=lab_site)
    assert response["Location"] == run.get_absolute_url()
    # When the agents have run
    run = wait_finished(run)
    # Then the merged result has exact counts, from two agents, and nginx saw every request
    assert run.status == "done", run.error_message
    entry = run.results[0]
    report = entry["report"]
    assert (report["complete_requests"], report["failed_requests"], report["non_2xx_responses"]) == (40, 0, 0)
    assert report["concurrency_level"] == 4 and report["connections_opened"] == 40   # new connection per request
    assert report["protocol"].startswith("TLSv1.") and report["tls_handshake"]["count"] == 40
    assert report["latency_ms"]["p50"] > 0 and report["requests_per_second"] > 0
    assert entry["result"]["agents"] == 2 and "samples" not in entry["result"]
    assert requests_logged(tls_lab, "https") - before == 40
    assert (run.work_done, run.work_total, run.ip) == (40, 40, "127.0.0.1")
    # And the page shows the charts and tables, and stops polling
    page = client.get(run.get_absolute_url()).content.decode()
    assert "hx-trigger" not in page and 'data-testid="run-done"' in page
    specs = chart_specs(page)
    assert set(specs) == {"latency-new", "times-new"}
    assert specs["latency-new"]["labels"][0] == "50 %" and len(specs["latency-new"]["datasets"][0]["data"]) == 9
    assert 'data-testid="table-times-new"' in page and 'data-testid="report-1"' in page


def test_a_sweep_interleaves_http_and_https_and_computes_the_overhead(load_worker, login, alice, lab_site, tls_lab):
    before = {s: requests_logged(tls_lab, s) for s in ("http", "https")}
    run = services.queue_run(lab_site, "sweep", {"levels": "1,2", "requests": 20, "modes": ["new"], "path": PATH},
                             user=alice)
    run = wait_finished(run)
    assert run.status == "done", run.error_message
    assert [(e["scheme"], e["level"]) for e in run.results] == [("http", 1), ("https", 1), ("http", 2), ("https", 2)]
    assert all(e["report"]["complete_requests"] == 20 and e["report"]["failed_requests"] == 0 for e in run.results)
    assert {s: requests_logged(tls_lab, s) - before[s] for s in before} == {"http": 40, "https": 40}
    levels = run.summary["new"]["levels"]
    assert [row["concurrency"] for row in levels] == [1, 2]
    assert all(row["time_taken_overhead_pct"] is not None and row["requests_per_second_overhead_pct"] is not None
               for row in levels)
    average = run.summary["new"]["average"]["time_taken_overhead_pct"]
    assert average == pytest.approx(sum(r["time_taken_overhead_pct"] for r in levels) / 2)

    # The page's charts and the CSV of the overhead table carry the same numbers.
    client = login(alice)
    org = lab_site.organization
    specs = chart_specs(client.get(run.get_absolute_url()).content.decode())
    assert {"rps-new", "time-new", "overhead-new", "latency-new", "times-new"} <= set(specs)
    assert specs["rps-new"]["labels"] == ["1", "2"] and [d["label"] for d in specs["rps-new"]["datasets"]] == [
        "HTTP", "HTTPS"]
    response = client.get(reverse("loadtests:csv", args=[org.slug, lab_site.pk, run.pk, "overhead-new"]))
    assert response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    assert lines[0].startswith("concurrency,HTTP time taken s,HTTPS time taken s,time taken overhead %")
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2", "average"]
    assert float(lines[1].split(",")[3]) == pytest.approx(levels[0]["time_taken_overhead_pct"], abs=0.001)


def test_a_handshake_run_compares_tls12_and_tls13(load_worker, login, alice, lab_site):
    run = services.queue_run(lab_site, "handshakes", {
        "versions": ["1.2", "1.3"], "agents_levels": "2", "per_agent": 5, "resume": True,
        "suites": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"]}, user=alice)
    run = wait_finished(run)
    assert run.status == "done", run.error_message
    cells = {(e["result"]["version"], e["result"]["mode"]): e["result"] for e in run.results}
    assert set(cells) == {("1.2", "full"), ("1.3", "full"), ("1.2", "resumed"), ("1.3", "resumed")}
    assert cells[("1.2", "full")]["count"] == 10 and cells[("1.3", "full")]["count"] == 10
    assert cells[("1.3", "full")]["suite"] == "TLS_AES_128_GCM_SHA256"
    assert cells[("1.2", "full")]["agents"] == 2 and cells[("1.2", "full")]["merged_from"] == 2
    assert cells[("1.2", "resumed")]["resumption"] == "unsupported"   # the lab port has no session cache
    comparison = {row["family"]: row for row in run.summary["versions"]}
    assert comparison["AES-128-GCM"]["tls12_mean_ms"] > 0 and comparison["AES-128-GCM"]["tls13_mean_ms"] > 0
    assert comparison["AES-128-GCM"]["tls13_faster_pct"] is not None
    specs = chart_specs(login(alice).get(run.get_absolute_url()).content.decode())
    bars = specs["handshakes"]
    assert [d["label"] for d in bars["datasets"]] == ["TLS 1.2", "TLS 1.3"]
    assert all(d["errors"][0] is not None for d in bars["datasets"])   # SD error bars
    assert {"resumption", "versions"} <= set(specs)


def test_the_stop_button_cancels_a_long_run_within_seconds(load_worker, login, alice, org_a, lab_site):
    # Given a run that would take minutes (the org's max duration is the guard if stopping failed)
    LoadLimits.objects.create(organization=org_a, max_concurrency=10, max_requests_per_run=100_000,
                              max_duration_s=40, runs_per_day=5)
    run = services.queue_run(lab_site, "load", {"requests": 100_000, "concurrency": 2, "keepalive": True,
                                                "path": PATH}, user=alice)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status == "running" and run.work_done > 0:
            break
        time.sleep(0.1)
    assert run.status == "running" and run.work_done > 0, run.status
    # When the member presses Stop
    client = login(alice)
    page = client.get(run.get_absolute_url()).content.decode()
    assert 'data-testid="stop"' in page and 'hx-trigger="every 2s"' in page
    pressed = time.monotonic()
    client.post(reverse("loadtests:stop", args=[org_a.slug, lab_site.pk, run.pk]))
    run = wait_finished(run, timeout=15)
    # Then it ends as cancelled within a few seconds, keeping what was measured
    assert time.monotonic() - pressed < 5
    assert run.status == "cancelled" and "Stopped on request" in run.error_message
    report = run.results[0]["report"]
    assert 0 < report["complete_requests"] < 100_000 and report["cancelled"] is True


def test_a_refused_port_ends_as_failed_with_a_message(load_worker, alice, org_a):
    site = Site.objects.create(organization=org_a, hostname="localhost", pinned_ip="127.0.0.1",
                               https_port=closed_port(), http_port=closed_port())
    verify(site)
    run = wait_finished(services.queue_run(site, "load", {"requests": 20, "concurrency": 2}, user=alice))
    assert (run.status, run.error_code) == ("failed", "no_response")
    assert "No request to https://localhost:" in run.error_message and "is the server up" in run.error_message


def test_a_private_address_is_refused_when_private_targets_are_off(load_worker, alice, lab_site, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    run = wait_finished(services.queue_run(lab_site, "load", {"requests": 20, "concurrency": 2}, user=alice))
    assert (run.status, run.error_code) == ("failed", "private_target")
    assert "resolves to 127.0.0.1, which is a loopback address" in run.error_message and run.results == []
