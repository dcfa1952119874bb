"""Bad input: each a clear probe error, the browser closed, no Chromium left running."""

import time

import pytest

from tests.support.chromium_count import chromium_processes
from tests.support.probe_site import INTERNAL_HOST
from tests.support.tls_servers import free_ports
from workers.browser.chromium import alive, marked_pids
from workers.browser.guard import AddressGuard
from workers.browser.probe import run_probe
from workers.browser.spec import ProbeSpec


@pytest.fixture
def no_new_chromium(probe_browser):
    """No Chromium of ours but the shared session browser, before the test and (once closed) after it."""
    assert others(probe_browser) == []
    yield
    deadline = time.monotonic() + 5
    while (left := others(probe_browser)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], "Chromium processes left running"


def others(probe_browser) -> list[int]:
    """Live Chromium processes of this test process that do not belong to the shared browser."""
    ours = set(marked_pids(probe_browser.token))
    found = chromium_processes()
    ours |= set(marked_pids(probe_browser.token))  # a helper born between the two scans
    return [pid for pid in found if pid not in ours and alive(pid)]


def probe_alone(**spec) -> dict:
    """A probe that launches and closes its own browser (as the CLI does)."""
    return run_probe(ProbeSpec(**{"runs": 1, "variants": ("https",), **spec}), allow_private=True)


def test_it_reports_a_page_that_never_finishes_loading_as_a_timeout(no_new_chromium, site_spec):
    result = probe_alone(**site_spec, path="/hang.html", timeout_s=2)
    assert result["error"]["code"] == "timeout"
    assert result["error"]["message"] == "The page did not finish loading within 2 s."
    assert [x["ok"] for x in result["loads"]] == [False]  # the warm load of a failed variant is skipped
    assert result["summary"] == {} and result["duration_s"] < 15


def test_it_reports_an_untrusted_certificate_as_such(no_new_chromium, site_spec):
    result = probe_alone(**{**site_spec, "ca_pem": None})
    assert result["error"]["code"] == "certificate"
    assert result["error"]["message"] == ("The certificate is not trusted (it is issued by a certificate "
                                          "authority the browser does not trust).")
    assert "ERR_CERT_AUTHORITY_INVALID" in result["error"]["detail"]


def test_it_reports_a_refused_connection(no_new_chromium, site_spec, probe_site):
    closed_port = free_ports(1)[0]
    result = probe_alone(**{**site_spec, "https_port": closed_port})
    assert result["error"]["code"] == "refused"
    assert result["error"]["message"] == f"The server refused the connection ({probe_site.host}:{closed_port})."


def test_it_reports_an_endless_redirect_loop(no_new_chromium, site_spec):
    result = probe_alone(**site_spec, path="/loop")
    assert result["error"]["code"] == "redirect_loop"
    assert result["error"]["message"] == "The site redirects in a loop: still redirecting after 20 requests."
    assert result["loads"][0]["statuses"] == {"302": 19}


def test_it_keeps_https_results_when_only_http_fails(no_new_chromium, site_spec):
    closed_port = free_ports(1)[0]
    result = run_probe(ProbeSpec(**{**site_spec, "http_port": closed_port}, runs=2), allow_private=True)
    assert result["error"] is None
    assert result["variant_errors"]["http"]["code"] == "refused"
    # HTTP fails at its warm-up load, which is kept as its failure: no second wait for the same refusal
    assert [(x["variant"], x["ok"], x.get("warmup", False)) for x in result["loads"]] == [
        ("http", False, True), ("https", True, False), ("https", True, False), ("https", True, False),
        ("https", True, False)]
    assert set(result["summary"]) == {"https_cold", "https_warm"} and result["increase_pct"]["cold"] == {}


def test_it_refuses_a_private_target_before_starting_chromium(no_new_chromium, site_spec):
    result = run_probe(ProbeSpec(**site_spec, runs=1), allow_private=False)
    assert result["error"]["code"] == "private_target"
    assert result["error"]["message"] == ("site.probe.test resolves to 127.0.0.1, which is a loopback address "
                                          "(this machine). TLS Audit only probes servers on the public internet.")
    assert result["loads"] == [] and result["browser"]["version"] == ""


def test_it_blocks_a_redirect_to_a_refused_address_before_connecting(probe_browser, site_spec, probe_site):
    # Given a policy under which 127.0.0.1 stands for a public address and 127.0.0.2 for a private one
    def refuse(address):
        return "a private address (test policy)" if str(address) == "127.0.0.2" else None

    guard = AddressGuard(allow_private=False, ip_map=probe_browser.ip_map, refuse=refuse)
    # When the site redirects to a host that resolves to 127.0.0.2
    spec = ProbeSpec(**site_spec, path="/elsewhere", runs=1, variants=("https",))
    result = run_probe(spec, browser=probe_browser, guard=guard)
    # Then the hop is never requested and the probe says why
    assert result["error"]["code"] == "private_target"
    assert result["error"]["message"] == (f"{INTERNAL_HOST} resolves to 127.0.0.2, which is a private address "
                                          "(test policy). TLS Audit only probes servers on the public internet.")
    assert result["loads"][0]["redirect_chain"] == [probe_site.url("https", "/elsewhere"),
                                                    f"http://{INTERNAL_HOST}:{probe_site.https_port}/"]


def test_it_loads_normally_through_the_guard_when_every_address_passes(probe_browser, site_spec):
    guard = AddressGuard(allow_private=False, ip_map=probe_browser.ip_map, refuse=lambda address: None)
    result = run_probe(ProbeSpec(**site_spec, runs=1), browser=probe_browser, guard=guard)
    assert result["error"] is None
    assert [x["requests"] for x in result["loads"]] == [8, 8, 8, 8]
    assert [x["from_cache"] for x in result["loads"] if x["mode"] == "warm"] == [7, 7]


def test_it_rejects_a_bad_spec_without_starting_chromium(no_new_chromium):
    result = run_probe(ProbeSpec(host="example.com", runs=0), allow_private=True)
    assert result["error"] == {"code": "invalid_target", "message": "runs must be between 1 and 100, got 0.",
                               "detail": ""}
