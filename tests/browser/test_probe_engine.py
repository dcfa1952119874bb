"""The browser probe against the local probe site: real Chromium, real nginx (HTTPS h2 + HTTP/1.1)."""

import pytest

from tests.support.probe_site import FRONT_PAGE_REQUESTS, SUBRESOURCES
from workers.browser.probe import run_probe
from workers.browser.spec import ProbeSpec

RUNS = 3
# Response headers per request on the wire: h2 (HPACK) ~150 B, HTTP/1.1 ~280 B on this site.
HEADER_ALLOWANCE = 400


@pytest.fixture(scope="module")
def front_page(probe_site, probe_browser):
    spec = ProbeSpec(host=probe_site.host, https_port=probe_site.https_port, http_port=probe_site.http_port,
                     ip=probe_site.ip, ca_pem=probe_site.ca_pem, runs=RUNS)
    progress = []
    result = run_probe(spec, browser=probe_browser, allow_private=True,
                       on_progress=lambda done, total, load: progress.append((done, total, load["variant"])))
    assert result["error"] is None, result["error"]
    return result, progress


def loads_of(result, variant, mode):
    return [load for load in result["loads"] if load["variant"] == variant and load["mode"] == mode]


def test_it_loads_each_variant_cold_and_warm_k_times_interleaved(front_page):
    result, progress = front_page
    assert [(x["variant"], x["mode"], x["run"]) for x in result["loads"][:8]] == [
        ("https", "cold", 0), ("http", "cold", 0), ("https", "warm", 0), ("http", "warm", 0),
        ("http", "cold", 1), ("https", "cold", 1), ("http", "warm", 1), ("https", "warm", 1)]
    assert len(result["loads"]) == 4 * RUNS and all(x["ok"] and x["error"] == "" for x in result["loads"])
    assert [p[:2] for p in progress] == [(i, 4 * RUNS) for i in range(1, 4 * RUNS + 1)]
    assert result["browser"]["version"].startswith("156.") or result["browser"]["version"]


def test_it_counts_every_request_of_the_page_exactly(front_page, probe_site):
    result, _ = front_page
    for load in result["loads"]:
        assert load["requests"] == FRONT_PAGE_REQUESTS == 8, load["waterfall"]
        assert load["failed"] == 0 and load["mixed_content"] == []
        assert {w["url"].split(str(probe_site.https_port if load["variant"] == "https" else probe_site.http_port))[1]
                for w in load["waterfall"]} == {"/", *SUBRESOURCES}


def test_it_counts_cold_bytes_on_the_wire_within_header_overhead(front_page, probe_site):
    result, _ = front_page
    body = probe_site.front_page_bytes()
    for variant in ("https", "http"):
        for load in loads_of(result, variant, "cold"):
            assert body < load["bytes"] <= body + FRONT_PAGE_REQUESTS * HEADER_ALLOWANCE, (variant, load["bytes"], body)
            assert load["from_cache"] == 0 and load["not_modified"] == 0 and load["statuses"] == {"200": 8}
            document = load["waterfall"][0]
            assert document["bytes"] > len(probe_site.files["/index.html"])
            assert all(0 <= w["start_ms"] <= w["end_ms"] for w in load["waterfall"])


def test_it_sees_the_document_revalidated_with_304_and_the_rest_from_cache_on_warm_loads(front_page):
    result, _ = front_page
    for variant in ("https", "http"):
        for load in loads_of(result, variant, "warm"):
            assert load["not_modified"] == 1 and load["from_cache"] == 7, load["waterfall"]
            assert load["statuses"] == {"200": 7, "304": 1}
            assert load["waterfall"][0]["status"] == 304
            assert 0 < load["bytes"] < 400  # one 304's headers, nothing else on the wire


def test_it_times_the_tls_handshake_on_https_cold_loads_only(front_page):
    result, _ = front_page
    https_cold = loads_of(result, "https", "cold")
    # Chromium sometimes reports a new connection without its phases: such samples must be flagged.
    measured = [x for x in https_cold if not x["no_connect_phase"]]
    assert measured, "every cold HTTPS sample lacked a connect phase"
    assert all(x["timings_ms"]["tls"] > 0 for x in measured)
    for mode in ("cold", "warm"):
        assert all(x["timings_ms"]["tls"] == 0 for x in loads_of(result, "http", mode))
    assert all(x["timings_ms"]["tls"] == 0 and not x["no_connect_phase"] for x in loads_of(result, "https", "warm"))
    for load in result["loads"]:
        t = load["timings_ms"]
        assert 0 < t["dom_interactive"] <= t["dom_content_loaded"] <= t["load"]


def test_it_reports_h2_and_the_tls_details_over_https_and_http11_over_http(front_page):
    result, _ = front_page
    for load in result["loads"]:
        if load["variant"] == "https":
            assert load["protocol"] == "h2"
            assert load["tls"]["protocol"] == "TLS 1.3" and load["tls"]["cipher"]
            assert {w["protocol"] for w in load["waterfall"] if not w["from_cache"]} == {"h2"}
        else:
            assert load["tls"] is None
            assert load["redirect_chain"] == [load["url"]] and load["final_url"] == load["url"]
    assert {x["protocol"] for x in loads_of(result, "http", "cold")} == {"http/1.1"}


def test_it_summarizes_medians_and_the_increase_of_https_over_http(front_page):
    result, _ = front_page
    summary = result["summary"]
    assert set(summary) == {"https_cold", "https_warm", "http_cold", "http_warm"}
    assert summary["https_cold"]["requests"] == {"median": 8, "min": 8, "max": 8, "p25": 8, "p75": 8, "n": RUNS}
    assert summary["https_warm"]["from_cache"]["median"] == 7
    assert summary["https_cold"]["protocol"] == "h2" and summary["http_cold"]["protocol"] == "http/1.1"
    assert result["increase_pct"]["cold"]["requests"] == 0.0
    https_bytes, http_bytes = summary["https_cold"]["bytes"]["median"], summary["http_cold"]["bytes"]["median"]
    assert result["increase_pct"]["cold"]["bytes"] == round((https_bytes - http_bytes) / http_bytes * 100, 1)
    assert result["increase_pct"]["cold"]["tls"] is None  # HTTP's TLS time is 0: no percentage of 0


def test_it_records_the_redirect_chain_from_http_to_https(probe_site, probe_browser, site_spec):
    spec = ProbeSpec(**{**site_spec, "http_port": probe_site.redirect_port}, runs=1, variants=("http",))
    result = run_probe(spec, browser=probe_browser, allow_private=True)
    assert result["error"] is None, result["error"]
    cold, warm = result["loads"]
    start, final = f"http://{probe_site.host}:{probe_site.redirect_port}/", probe_site.url("https")
    assert cold["redirect_chain"] == [start, final] and cold["final_url"] == final
    assert cold["statuses"] == {"200": 8, "301": 1} and cold["requests"] == 9
    assert cold["protocol"] == "h2" and cold["tls"]["protocol"] == "TLS 1.3"
    assert cold["timings_ms"]["redirect"] > 0
    assert warm["redirect_chain"] == [final]  # a reload reloads the final URL


def test_it_detects_mixed_content_on_an_https_page(probe_site, probe_browser, site_spec):
    spec = ProbeSpec(**site_spec, path="/mixed.html", runs=1, variants=("https",))
    result = run_probe(spec, browser=probe_browser, allow_private=True)
    assert result["error"] is None, result["error"]
    insecure = f"http://{probe_site.host}:{probe_site.http_port}/img/one.svg"
    for load in result["loads"]:
        assert load["mixed_content"] == [insecure]


def test_it_stops_when_cancelled_between_loads(probe_browser, site_spec):
    asked = []
    # asked before each load: the two warm-ups, two recorded loads, then the answer is "stop"
    result = run_probe(ProbeSpec(**site_spec, runs=2), browser=probe_browser, allow_private=True,
                       cancel=lambda: asked.append(1) or len(asked) > 4)
    assert result["error"]["code"] == "cancelled" and len(result["loads"]) == 2


def documents_served(probe_site) -> int:
    log = probe_site.directory / "access.log"
    return sum(1 for line in log.read_text().splitlines() if '"GET / HTTP' in line)


def test_a_warm_up_load_per_variant_comes_first_and_is_discarded(probe_browser, site_spec, probe_site):
    before = documents_served(probe_site)
    result = run_probe(ProbeSpec(**site_spec, runs=1), browser=probe_browser, allow_private=True)
    assert result["error"] is None, result["error"]
    # two warm-ups (one per variant), two cold loads, two warm reloads revalidating the document
    assert documents_served(probe_site) - before == 6
    assert [(x["variant"], x["mode"]) for x in result["loads"]] == [
        ("https", "cold"), ("http", "cold"), ("https", "warm"), ("http", "warm")]
    assert not any(x.get("warmup") for x in result["loads"])


@pytest.mark.parametrize("run, elapsed_s, longest_s, fits", [
    (0, 99.0, 99.0, True), (2, 99.0, 99.0, True),     # the first three rounds run whatever the time says
    (3, 7.0, 2.9, True), (3, 7.0, 3.1, False),         # then one starts only while it fits the 10 s
    (19, 0.0, 0.0, True),
])
def test_a_round_starts_while_it_fits_the_seconds_and_the_first_three_always(run, elapsed_s, longest_s, fits):
    from workers.browser.probe import Session

    session = Session(ProbeSpec(host="example.com", runs=20, seconds=10.0), None, None, {}, None, None)
    assert session.round_fits(run, elapsed_s, longest_s) is fits


def test_a_probe_sized_by_time_stops_when_the_next_round_would_not_fit(probe_site, probe_browser, site_spec):
    """Given 2 s for rounds that take a few hundred ms here, when the probe runs with a cap of 50 rounds,
    then it runs at least three and fewer than 50, and past the first three it starts a round only inside
    its 2 s. On a loaded machine a round can take longer than 2/3 s: then the three every probe runs are all."""
    result = run_probe(ProbeSpec(**site_spec, runs=50, seconds=2.0), browser=probe_browser, allow_private=True)

    assert result["error"] is None, result["error"]
    rounds = sorted({load["run"] for load in result["loads"]})
    assert rounds == list(range(len(rounds))) and 3 <= len(rounds) < 50, rounds
    assert result["rounds_stopped_by"] == "seconds"
    starts = result["round_starts_s"]
    assert len(starts) == len(rounds) and starts == sorted(starts), starts
    assert all(start < 2.0 for start in starts[3:]), starts   # past the first three, only rounds that fitted
    for mode in ("cold", "warm"):
        assert result["increase"][mode]["load"]["n"] == len(rounds)   # every round a pair, both variants


def test_a_probe_sized_by_time_runs_three_rounds_when_one_is_longer_than_its_time(probe_site, probe_browser,
                                                                                   site_spec):
    result = run_probe(ProbeSpec(**site_spec, runs=50, seconds=0.01), browser=probe_browser, allow_private=True)

    assert result["error"] is None, result["error"]
    assert sorted({load["run"] for load in result["loads"]}) == [0, 1, 2]
    assert result["increase"]["cold"]["load"]["n"] == 3 and result["increase"]["cold"]["load"]["low_pct"] is not None
