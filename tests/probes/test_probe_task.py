"""Browser probes end to end: a real Celery worker on the `browser` queue (over the real Redis)
drives Debian's Chromium against the nginx lab; the real database; Chromium processes counted."""

import json
import os
import re
import signal

import pytest
from django.urls import reverse

from tests.hostile import closed_port
from tests.support.probes import chromium_processes, wait_finished, wait_no_chromium
from tests.support.sites import added_site
from tlsaudit.probes import services
from tlsaudit.probes.models import Probe
from tlsaudit.sites.models import Site

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
COLUMNS = [("http", "cold"), ("https", "cold"), ("http", "warm"), ("https", "warm")]


def chart_specs(page: str) -> dict:
    match = re.search(r'<script id="browser-charts" type="application/json">(.*?)</script>', page, re.S)
    assert match, "no json_script with the chart data"
    return {spec["id"]: spec for spec in json.loads(match.group(1))}


def test_a_probe_loads_the_site_in_chromium_cold_and_warm_over_http_and_https(
        browser_worker, login, alice, org_a, probe_site, chromium_marker):
    # Given a member's click on "Run" with K = 2, before any worker is up
    client = login(alice)
    response = client.post(reverse("probes:start", args=[org_a.slug, probe_site.pk]), {"runs": "2"})
    probe = Probe.objects.get(site=probe_site)
    assert response["Location"] == probe.get_absolute_url()
    assert 'hx-trigger="every 2s"' in client.get(probe.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()

    # When a browser worker runs it (and then stops)
    with browser_worker():
        probe = wait_finished(probe)
        assert chromium_processes(chromium_marker), "the worker keeps its browser open between probes"
    # Then no Chromium is left running
    assert wait_no_chromium(chromium_marker) == []

    # And the engine's result is stored whole: 2 runs of each of the 4 variants, all loaded
    assert probe.status == "done", probe.error_message
    loads = probe.result["loads"]
    assert len(loads) == 8 and sorted({(load["variant"], load["mode"]) for load in loads}) == sorted(COLUMNS)
    assert all(load["ok"] for load in loads), [load["error"] for load in loads if not load["ok"]]
    assert all(load["requests"] >= 1 for load in loads)
    https_cold = [load for load in loads if (load["variant"], load["mode"]) == ("https", "cold")]
    assert all(load["timings_ms"]["tls"] > 0 or load["no_connect_phase"] for load in https_cold)
    assert all(load["tls"]["protocol"] for load in https_cold)   # trusted through the org's CA, not ignored errors
    assert probe.result["error"] is None and probe.result["spec"]["ip"] == "127.0.0.1"
    # And the summary holds the four columns and the increase % of HTTPS over HTTP
    assert {f"{v}_{m}" for v, m in COLUMNS} <= set(probe.summary["summary"])
    assert set(probe.summary["increase_pct"]) == {"cold", "warm"}
    assert (probe.loads_done, probe.loads_total, probe.ip) == (8, 8, "127.0.0.1")
    assert probe.started_at <= probe.finished_at and probe.duration_s > 0

    # And the page shows the charts and tables, and stops polling
    page = client.get(probe.get_absolute_url()).content.decode()
    assert "hx-trigger" not in page and 'data-testid="probe-done"' in page
    specs = chart_specs(page)
    assert specs["phases"]["labels"] == ["HTTP cold", "HTTPS cold", "HTTP warm", "HTTPS warm"]
    assert specs["phases"]["stacked"] and len(specs["phases"]["datasets"]) == 8
    assert [d["label"] for d in specs["phases"]["datasets"]][:4] == ["Redirect", "DNS", "TCP connect",
                                                                       "TLS handshake"]
    waterfall = specs["waterfall"]
    assert waterfall["type"] == "waterfall" and waterfall["labels"][0].startswith("/")
    assert all(0 <= start <= end for start, end in waterfall["datasets"][0]["data"])
    assert 'data-testid="table-requests"' in page and 'data-testid="table-increase"' in page
    assert "TLSv1.3" in page or "TLS 1.3" in page
    # And the CSV of the requests table has one row per variant
    rows = client.get(reverse("probes:csv", args=[org_a.slug, probe_site.pk, probe.pk, "requests"])) \
        .content.decode().strip().splitlines()
    assert rows[0].startswith("variant,requests,bytes,from cache,304s,failed")
    assert [row.split(",")[0] for row in rows[1:]] == ["HTTP cold", "HTTPS cold", "HTTP warm", "HTTPS warm"]
    # medians: with K=2 a count can be x.5 (Chromium asks for the favicon in some cold loads only)
    assert all(float(row.split(",")[1]) >= 1 and float(row.split(",")[2]) > 0 for row in rows[1:3])  # cold: on the wire
    assert all(isinstance(v, (int, float)) and v > 0 for v in
               [probe.summary["summary"][f"{v}_{m}"]["load"]["median"] for v, m in COLUMNS])
    # And the tab shows it in the history
    tab = client.get(reverse("probes:overview", args=[org_a.slug, probe_site.pk])).content.decode()
    assert 'data-testid="probes"' in tab and 'id="browser-charts"' in tab


def test_a_closed_port_ends_failed_with_the_engines_message(browser_worker, login, alice, org_a, lab_org,
                                                           chromium_marker):
    site = added_site(organization=org_a, hostname="localhost", https_port=closed_port(),
                               http_port=closed_port(), pinned_ip="127.0.0.1", name="Closed")
    with browser_worker():
        probe = wait_finished(services.queue_probe(site, {"runs": 1}, user=alice))
    assert wait_no_chromium(chromium_marker) == []
    assert probe.status == "failed" and probe.error_code and probe.error_message
    assert "refused" in probe.error_message.lower(), probe.error_message
    page = login(alice).get(probe.get_absolute_url()).content.decode()
    assert 'data-testid="probe-error"' in page and "hx-trigger" not in page


def test_the_worker_relaunches_a_crashed_browser_once(browser_worker, alice, probe_site, chromium_marker):
    from workers.browser.host import HOST

    with browser_worker():
        first = wait_finished(services.queue_probe(probe_site, {"runs": 1, "variants": ["https"]}, user=alice))
        launches = HOST.launches
        # Chromium dies between two probes (as after an OOM kill)
        pids = chromium_processes(chromium_marker)
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        second = wait_finished(services.queue_probe(probe_site, {"runs": 1, "variants": ["https"]}, user=alice))
    assert (first.status, second.status) == ("done", "done"), second.error_message
    assert HOST.launches == launches + 1 and len(second.result["loads"]) == 2
    assert wait_no_chromium(chromium_marker) == []


def test_a_private_address_is_refused_when_private_targets_are_off(browser_worker, alice, probe_site, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    with browser_worker():
        probe = wait_finished(services.queue_probe(probe_site, {"runs": 1}, user=alice))
    assert probe.status == "failed" and probe.error_code == "private_target", probe.error_message
    assert probe.result is None


def test_a_probe_queued_before_the_site_became_another_service_loads_nothing(browser_worker, alice, org_a,
                                                                            chromium_marker):
    """The outside review: applicability was checked only at queue time. A probe queued while the site
    was HTTPS, then the site edited to SMTPS behind the form's back: the worker refuses it, and the server
    sees no connection."""
    from tests import hostile

    with hostile.trap("127.0.0.1") as (https_port, trap):
        site = added_site(organization=org_a, hostname="localhost", https_port=https_port,
                                   http_port=closed_port(), pinned_ip="127.0.0.1", name="Became SMTPS")
        probe = services.queue_probe(site, {"runs": 1}, user=alice)
        Site.objects.filter(pk=site.pk).update(service="smtps")
        with browser_worker():
            probe = wait_finished(probe)

    assert (probe.status, probe.error_code) == ("failed", "not_applicable"), probe.error_message
    assert "SMTPS" in probe.error_message and probe.result is None
    assert trap.accepted == 0
