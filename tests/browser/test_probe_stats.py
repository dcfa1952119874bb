"""tlsaudit.domain.probe_stats: spread per variant x mode and the increase row (Table VII)."""

import pytest

from tlsaudit.domain.probe_stats import increase, increase_pct, medians, percent_increase, quantile, spread, summarize


def load(variant, mode, requests=8, bytes_=1000, tls=5.0, load_ms=100.0, flagged=False, **extra):
    timings = {m: 0.0 for m in ("redirect", "dns", "connect", "ttfb", "download", "dom_interactive",
                                "dom_content_loaded")}
    return {"variant": variant, "mode": mode, "ok": True, "requests": requests, "bytes": bytes_,
            "from_cache": 0 if mode == "cold" else 7, "not_modified": 0 if mode == "cold" else 1,
            "timings_ms": {**timings, "tls": tls, "load": load_ms}, "no_connect_phase": flagged,
            "protocol": "h2" if variant == "https" else "http/1.1", **extra}


@pytest.mark.parametrize("values, q, expected", [
    ([1], 0.5, 1), ([1, 2], 0.5, 1.5), ([1, 2, 3, 4], 0.25, 1.75), ([1, 2, 3, 4], 0.75, 3.25), ([5, 9], 1.0, 9),
])
def test_it_interpolates_quantiles(values, q, expected):
    assert quantile(values, q) == expected


def test_it_gives_median_min_max_and_quartiles():
    assert spread([40, 10, 30, 20]) == {"median": 25, "min": 10, "max": 40, "p25": 17.5, "p75": 32.5, "n": 4}
    assert spread([]) is None


@pytest.mark.parametrize("base, value, expected", [
    (100, 150, 50.0), (200, 100, -50.0), (8, 8, 0.0), (0, 5, None), (None, 5, None), (3, None, None), (3, 4, 33.3),
])
def test_it_computes_percent_increase(base, value, expected):
    assert percent_increase(base, value) == expected


def test_it_summarizes_each_variant_and_mode_and_the_increase_of_https_over_http():
    loads = [load("https", "cold", load_ms=v, bytes_=1100) for v in (120, 130, 140)]
    loads += [load("http", "cold", tls=0.0, load_ms=v, bytes_=1000) for v in (100, 100, 110)]
    loads += [load("https", "warm", load_ms=60, bytes_=90), load("http", "warm", tls=0.0, load_ms=50, bytes_=180)]
    summary = summarize(loads)
    assert set(summary) == {"https_cold", "http_cold", "https_warm", "http_warm"}
    assert summary["https_cold"]["load"]["median"] == 130 and summary["https_cold"]["samples"] == 3
    assert summary["https_cold"]["protocol"] == "h2"
    rows = increase_pct(summary, increase(loads))
    assert rows["cold"]["load"] == 30.0 and rows["cold"]["bytes"] == 10.0 and rows["cold"]["requests"] == 0.0
    assert rows["cold"]["tls"] is None
    assert rows["warm"]["bytes"] == -50.0 and rows["warm"]["load"] == 20.0
    assert medians(summary["http_warm"])["from_cache"] == 7


def test_it_leaves_flagged_samples_out_of_connect_and_tls_only():
    loads = [load("https", "cold", tls=4.0), load("https", "cold", tls=6.0),
             load("https", "cold", tls=0.0, flagged=True, load_ms=300)]
    cell = summarize(loads)["https_cold"]
    assert cell["tls"]["median"] == 5.0 and cell["tls"]["n"] == 2
    assert cell["load"]["n"] == 3 and cell["no_connect_phase"] == 1


def test_it_has_no_increase_row_without_both_variants():
    summary = summarize([load("https", "cold"), load("https", "warm")])
    assert increase_pct(summary, {}) == {"cold": {}, "warm": {}}
    assert summarize([load("https", "cold", ok=False)]) == {}


def loads_of(variant, mode, load_times, tls=5.0):
    """One load per run (run r of HTTP and HTTPS ran back to back, as the engine interleaves them)."""
    return [load(variant, mode, load_ms=ms, tls=tls if variant == "https" else 0.0, run=r)
            for r, ms in enumerate(load_times)]


def test_the_increase_over_the_loads_is_signed_with_its_interval():
    # HTTP page loads take ~300 ms (a slow link), HTTPS ~100 ms: HTTPS faster is negative, and significant
    loads = loads_of("http", "cold", [300, 310, 290, 305, 295]) + loads_of("https", "cold", [100, 98, 103, 101, 99])
    change = increase(loads)["cold"]["load"]
    assert change["pct"] == pytest.approx(-66.7, abs=1) and change["high_pct"] < 0
    assert change["verdict"] == "lower" and (change["base_median"], change["other_median"]) == (300, 100)
    slower = increase(loads_of("http", "cold", [100, 98, 103, 101, 99]) +
                      loads_of("https", "cold", [130, 128, 133, 131, 129]))["cold"]["load"]
    assert slower["pct"] == pytest.approx(30, abs=1) and slower["verdict"] == "higher"


def test_overlapping_loads_are_no_significant_difference_and_one_run_has_no_interval():
    same = increase(loads_of("http", "cold", [100, 120, 90, 110, 105]) +
                    loads_of("https", "cold", [104, 95, 115, 100, 108]))["cold"]["load"]
    assert same["verdict"] == "no significant difference" and same["low_pct"] < 0 < same["high_pct"]
    one = increase(loads_of("http", "cold", [300]) + loads_of("https", "cold", [100]))
    assert one["cold"]["load"]["low_pct"] is None and one["cold"]["load"]["verdict"] == "single run, no interval"


def test_the_two_tables_of_a_probe_agree_in_sign_with_the_medians_beside_them():
    # The contradiction users saw: cold TTFB 0.8 ms over HTTP, 1.1 ms over HTTPS, called -66.7 % by one
    # table and +37.5 % by the other. One definition now: the change of the medians, both tables.
    http = [load("http", "cold", tls=0.0, run=r, ttfb=v) for r, v in enumerate([0.8, 0.7, 0.9, 0.8, 5.0])]
    https = [load("https", "cold", run=r, ttfb=v) for r, v in enumerate([1.1, 1.0, 1.2, 1.1, 0.2])]
    for item in http + https:
        item["timings_ms"]["ttfb"] = item.pop("ttfb")
    changes = increase(http + https)
    change = changes["cold"]["ttfb"]
    assert (change["base_median"], change["other_median"]) == (0.8, 1.1)
    assert change["pct"] == pytest.approx(37.5)
    assert increase_pct(summarize(http + https), changes)["cold"]["ttfb"] == 37.5


def test_a_phase_http_does_not_have_is_not_compared_and_warm_ups_are_left_out():
    loads = loads_of("http", "cold", [300] * 4) + loads_of("https", "cold", [100] * 4)
    loads.append({**load("https", "cold", load_ms=5000.0), "warmup": True})
    result = increase(loads)
    assert "tls" not in result["cold"] and result["warm"] == {}   # HTTP has no TLS; no warm loads
    assert result["cold"]["load"]["pct"] == pytest.approx(-66.7, abs=0.1)
