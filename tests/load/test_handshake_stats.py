"""tlsaudit.domain.handshake_stats: summaries from histograms and TLS 1.2 vs 1.3 comparisons (tables)."""

from __future__ import annotations

import math
import statistics

import pytest
from hdrh.histogram import HdrHistogram

from tlsaudit.domain.handshake_stats import (
    compare_resumption, compare_versions, faster_pct, histogram_summary, suite_family)


def encoded(values_us) -> str:
    h = HdrHistogram(1, 60_000_000, 3)
    for v in values_us:
        h.record_value(v)
    return h.encode().decode("ascii")


def test_it_summarises_a_histogram_with_sample_sd_like_ab():
    values = [1000, 1200, 1400, 2000, 5000]
    s = histogram_summary(encoded(values))
    assert s["count"] == 5
    assert s["mean_ms"] == pytest.approx(statistics.mean(values) / 1000, rel=1e-3)
    assert s["sd_ms"] == pytest.approx(statistics.stdev(values) / 1000, rel=1e-3)
    assert (s["p50_ms"], s["max_ms"]) == (pytest.approx(1.4, rel=1e-3), pytest.approx(5.0, rel=1e-3))


def test_an_empty_histogram_has_no_statistics():
    assert histogram_summary(encoded([])) == {"count": 0, "mean_ms": None, "sd_ms": None, "min_ms": None,
                                             "max_ms": None, "p50_ms": None, "p95_ms": None, "p99_ms": None}


@pytest.mark.parametrize("suite, family", [
    ("TLS_AES_128_GCM_SHA256", "AES-128-GCM"), ("ECDHE-RSA-AES128-GCM-SHA256", "AES-128-GCM"),
    ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "AES-256-GCM"), ("TLS_AES_256_GCM_SHA384", "AES-256-GCM"),
    ("TLS_CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305"), ("ECDHE-RSA-CHACHA20-POLY1305", "CHACHA20-POLY1305"),
    ("ECDHE-RSA-AES128-SHA", None), (None, None),
])
def test_it_groups_suites_by_cipher_family(suite, family):
    assert suite_family(suite) == family


@pytest.mark.parametrize("slow, fast, pct", [(10.0, 4.4, 56.0), (2.0, 1.6, 20.0), (1.0, 1.2, -20.0),
                                             (None, 1.0, None), (1.0, None, None)])
def test_faster_pct_is_the_time_saved_in_percent_of_the_slower(slow, fast, pct):
    assert faster_pct(slow, fast) == pct


def cell(version, suite, agents, mean_ms, count=10, mode="full"):
    return {"version": version, "requested_suite": suite, "suite": suite, "agents": agents, "count": count,
            "mean_ms": mean_ms, "mode": mode}


def test_it_compares_tls12_and_tls13_per_family_and_agents_level():
    cells = [
        cell("1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 10, 2.0, count=10),
        cell("1.2", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 10, 3.0, count=30),   # weighted: 2.75
        cell("1.3", "TLS_AES_128_GCM_SHA256", 10, 1.1),
        cell("1.3", "TLS_CHACHA20_POLY1305_SHA256", 10, 1.5),                        # no 1.2 partner
        cell("1.3", "TLS_AES_128_GCM_SHA256", 10, 0.5, mode="resumed"),              # ignored
        cell("1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 25, None, count=0),     # nothing measured
    ]
    rows = {(r["family"], r["agents"]): r for r in compare_versions(cells)}
    assert rows[("AES-128-GCM", 10)] == {"family": "AES-128-GCM", "agents": 10, "tls12_mean_ms": 2.75,
                                         "tls13_mean_ms": 1.1, "tls13_faster_pct": 60.0}
    assert rows[("CHACHA20-POLY1305", 10)]["tls13_faster_pct"] is None
    assert rows[("all", 10)]["tls12_mean_ms"] == 2.75
    assert rows[("all", 10)]["tls13_mean_ms"] == 1.3
    assert ("AES-128-GCM", 25) not in rows
    assert list(rows)[-1] == ("all", 10)  # the overall row comes last


def test_it_pairs_resumed_cells_with_their_full_cell():
    cells = [cell("1.3", "TLS_AES_128_GCM_SHA256", 10, 2.0), cell("1.3", "TLS_AES_128_GCM_SHA256", 10, 0.5,
                                                                   mode="resumed"),
             {**cell("1.2", "X", 10, None, count=0, mode="resumed"), "resumption": "unsupported"}]
    rows = compare_resumption(cells)
    assert rows[0]["full_mean_ms"] == 2.0 and rows[0]["resumed_faster_pct"] == 75.0
    assert rows[1] == {"version": "1.2", "suite": "X", "agents": 10, "resumption": "unsupported",
                       "full_mean_ms": None, "resumed_mean_ms": None, "resumed_faster_pct": None}
    assert not math.isnan(rows[0]["resumed_mean_ms"])
