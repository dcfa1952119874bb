"""Performance runs end to end: a real Celery worker on the `load` queue (chords over the real
Redis), the real engines, the nginx lab's plain-HTTP and HTTPS ports, the real database."""

import csv
import json
import re
import time

import pytest
from django.urls import reverse

from tests.hostile import closed_port
from tests.support.loadtests import verify, wait_finished
from tests.support.sites import added_site
from tlsaudit.loadtests import services
from tlsaudit.loadtests.models import LoadLimits, PerfRun

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
    # Given a verified site on the lab and a member's click on "Start" (3 repeats by default)
    before = requests_logged(tls_lab, "https")
    client = login(alice)
    response = client.post(reverse("loadtests:start", args=[org_a.slug, lab_site.pk]),
                           {"kind": "load", "scheme": "https", "requests": 40, "concurrency": 4, "path": PATH})
    run = PerfRun.objects.get(site=lab_site)
    assert response["Location"] == run.get_absolute_url() and run.params["repeats"] == 3
    # When the agents have run
    run = wait_finished(run)
    # Then a discarded warm-up came first, then three repeats, each merged exactly from two agents
    assert run.status == "done", run.error_message
    assert [(e["warmup"], e["repeat"]) for e in run.results] == [(True, 0), (False, 0), (False, 1), (False, 2)]
    for entry in run.results[1:]:
        report = entry["report"]
        assert (report["complete_requests"], report["failed_requests"], report["non_2xx_responses"]) == (40, 0, 0)
        assert report["concurrency_level"] == 4 and report["connections_opened"] == 40   # a new connection each
        assert report["protocol"].startswith("TLSv1.") and report["tls_handshake"]["count"] == 40
        assert report["latency_ms"]["p50"] > 0 and report["requests_per_second"] > 0
        # end to end: the agents' whole calls, set-up included, so never shorter than ab's time taken
        assert report["wall_s"] >= report["time_taken_s"]
        assert report["requests_per_second_end_to_end"] == pytest.approx(40 / report["wall_s"])
        assert entry["result"]["agents"] == 2 and "samples" not in entry["result"]
    assert requests_logged(tls_lab, "https") - before == 4 * 40
    assert (run.work_done, run.work_total, run.ip) == (160, 160, "127.0.0.1")
    # And the page shows the charts and tables, and stops polling; 40 requests still give a figure
    page = client.get(run.get_absolute_url()).content.decode()
    assert "hx-trigger" not in page and 'data-testid="run-done"' in page
    specs = chart_specs(page)
    assert set(specs) == {"rate-new", "latency-new", "times-new"}
    assert specs["rate-new"]["datasets"][0]["data"][0] > 0 and specs["rate-new"]["warnings"] == []
    assert 'data-testid="too-short"' not in page and "3 repeats per cell after a discarded warm-up" in page
    assert specs["latency-new"]["labels"][0] == "50 %" and len(specs["latency-new"]["datasets"][0]["data"]) == 9
    assert 'data-testid="table-times-new"' in page and 'data-testid="report-3"' in page
    assert 'data-testid="report-4"' not in page   # the warm-up is in the step list only


def test_a_sweep_interleaves_http_and_https_in_rounds_and_answers_from_every_request(load_worker, login, alice, lab_site,
                                                                           tls_lab):
    before = {s: requests_logged(tls_lab, s) for s in ("http", "https")}
    run = services.queue_run(lab_site, "sweep", {"levels": "1,2", "requests": 20, "modes": ["new"], "path": PATH,
                                                 "repeats": 2}, user=alice)
    run = wait_finished(run)
    assert run.status == "done", run.error_message
    assert [(e["warmup"], e["repeat"], e["scheme"], e["level"]) for e in run.results] == [
        (True, 0, "http", 2), (True, 0, "https", 2),
        (False, 0, "http", 1), (False, 0, "https", 1), (False, 0, "http", 2), (False, 0, "https", 2),
        (False, 1, "https", 1), (False, 1, "http", 1), (False, 1, "https", 2), (False, 1, "http", 2)]
    assert all(e["report"]["complete_requests"] == 20 and e["report"]["failed_requests"] == 0 for e in run.results)
    assert {s: requests_logged(tls_lab, s) - before[s] for s in before} == {"http": 100, "https": 100}
    levels = run.summary["new"]["levels"]
    assert [row["concurrency"] for row in levels] == [1, 2]
    # 20 requests on loopback take milliseconds, and still give the median of every request, its sign
    # agreeing with the two medians; 2 pairs are too few for an interval, and say so
    for row in levels:
        time = row["time_taken_overhead"]
        assert time["verdict"] == "too few runs for an interval" and time["n"] == 2 and time["low_pct"] is None
        assert row["time_taken_overhead_pct"] == time["pct"] and (time["pct"] > 0) == (
            time["other_median"] > time["base_median"])
        assert row["http"]["repeats"] == 2 and row["http"]["too_short"] is None
    assert run.summary["new"]["average"]["levels_used"] == [1, 2]

    client = login(alice)
    org = lab_site.organization
    page = client.get(run.get_absolute_url()).content.decode()
    specs = chart_specs(page)
    assert {"rps-new", "time-new", "overhead-new", "latency-new", "times-new"} <= set(specs)
    assert specs["rps-new"]["labels"] == ["1", "2"] and [d["label"] for d in specs["rps-new"]["datasets"]] == [
        "HTTP", "HTTPS"]
    assert specs["overhead-new"]["datasets"][0]["data"][:2] == [round(row["time_taken_overhead"]["pct"], 1)
                                                               for row in levels]
    assert "too short" not in page
    response = client.get(reverse("loadtests:csv", args=[org.slug, lab_site.pk, run.pk, "overhead-new"]))
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(response.content.decode().splitlines()))
    assert lines[0][:8] == ["concurrency", "repeats", "HTTP median request ms", "HTTPS median request ms",
                            "request time overhead %", "time 95 % low", "time 95 % high", "time verdict"]
    assert [line[0] for line in lines[1:]] == ["1", "2", "average"]
    for line, row in zip(lines[1:3], levels):   # the CSV's sign agrees with the two medians beside it
        http_ms, https_ms, pct = float(line[2]), float(line[3]), float(line[4])
        assert pct == round(row["time_taken_overhead"]["pct"], 1) and (pct > 0) == (https_ms > http_ms)


def test_a_handshake_run_compares_tls12_and_tls13(load_worker, login, alice, lab_site):
    run = services.queue_run(lab_site, "handshakes", {
        "versions": ["1.2", "1.3"], "agents_levels": "2", "per_agent": 5, "resume": True, "repeats": 2,
        "suites": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"]}, user=alice)
    run = wait_finished(run)
    assert run.status == "done", run.error_message
    assert [e["cell"]["version"] for e in run.results if e["cell"]["warmup"]] == ["1.2", "1.3"]
    cells = {(e["result"]["version"], e["result"]["mode"], e["cell"]["repeat"]): e["result"]
             for e in run.results if not e["cell"]["warmup"]}
    assert set(cells) == {(v, m, r) for v in ("1.2", "1.3") for m in ("full", "resumed") for r in (0, 1)}
    assert cells[("1.2", "full", 0)]["count"] == 10 and cells[("1.3", "full", 1)]["count"] == 10
    assert cells[("1.3", "full", 0)]["suite"] == "TLS_AES_128_GCM_SHA256"
    assert cells[("1.2", "full", 0)]["agents"] == 2 and cells[("1.2", "full", 0)]["merged_from"] == 2
    assert cells[("1.2", "resumed", 0)]["resumption"] == "unsupported"   # the lab port has no session cache
    full = cells[("1.3", "full", 0)]
    assert full["handshakes_per_s"] == pytest.approx(full["count"] / full["wall_s"], abs=0.1)
    comparison = {row["family"]: row for row in run.summary["versions"]}
    assert comparison["AES-128-GCM"]["tls12_p50_ms"] > 0 and comparison["AES-128-GCM"]["tls13_p50_ms"] > 0
    # 10 handshakes per cell on loopback give a figure too: every handshake of the two rounds (too few
    # rounds for an interval)
    change = comparison["AES-128-GCM"]["tls13_vs_tls12"]
    assert change["verdict"] == "too few runs for an interval" and change["n"] == 2 and change["pct"] is not None
    specs = chart_specs(login(alice).get(run.get_absolute_url()).content.decode())
    bars = specs["handshakes"]
    assert [d["label"] for d in bars["datasets"]] == ["TLS 1.2", "TLS 1.3"]
    assert all("intervals" in d for d in bars["datasets"]) and bars["warnings"] == []
    assert {"resumption", "versions"} <= set(specs)


def test_the_stop_button_cancels_a_long_run_within_seconds(load_worker, login, alice, org_a, lab_site):
    # Given a run that would take minutes (the org's max duration is the guard if stopping failed)
    # (sized by time: 30 s, and a request cap no machine reaches in that time; 100,000 requests alone took a
    # fast machine less than the test needs to press Stop)
    LoadLimits.objects.create(organization=org_a, max_concurrency=10, max_requests_per_run=10_000_000,
                              max_duration_s=80, runs_per_day=5)
    run = services.queue_run(lab_site, "load", {"requests": 10_000_000, "concurrency": 2, "keepalive": True,
                                                "path": PATH, "repeats": 1, "seconds": 30}, user=alice)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status == "running" and run.work_done > 50:   # past the 50-request warm-up
            break
        time.sleep(0.1)
    assert run.status == "running" and run.work_done > 50, run.status
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
    report = run.results[-1]["report"]
    assert 0 < report["complete_requests"] < 10_000_000 and report["cancelled"] is True
    assert report["time_taken_s"] < 20, report["time_taken_s"]     # stopped, not run out


def test_a_refused_port_ends_as_failed_with_a_message(load_worker, alice, org_a):
    site = added_site(organization=org_a, hostname="localhost", pinned_ip="127.0.0.1",
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
