"""tlsaudit.domain.handshake_stats: summaries from histograms and TLS 1.2 vs 1.3 comparisons (tables)."""

from __future__ import annotations

import math
import statistics

import pytest
from hdrh.histogram import HdrHistogram

from tlsaudit.domain import stats
from tlsaudit.domain.handshake_stats import (
    cell_rows,
    compare_resumption,
    compare_versions,
    histogram_summary,
    suite_family,
)


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


def cell(version, suite, agents, p50_ms, count=200, mode="full", repeat=0, wall_s=2.0, **extra):
    return {"version": version, "requested_suite": suite, "suite": suite, "agents": agents, "count": count,
            "p50_ms": p50_ms, "mean_ms": p50_ms, "mode": mode, "repeat": repeat, "wall_s": wall_s, **extra}


AES128_12 = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
AES128_13 = "TLS_AES_128_GCM_SHA256"


def rounds(version, suite, agents, p50s, **extra):
    return [cell(version, suite, agents, p50, repeat=r, **extra) for r, p50 in enumerate(p50s)]


def test_tls13_faster_is_a_negative_change_with_its_interval_per_family_and_agents():
    cells = [*rounds("1.2", AES128_12, 10, [2.0, 2.1, 1.9]), *rounds("1.3", AES128_13, 10, [1.0, 1.05, 0.95]),
             *rounds("1.3", "TLS_CHACHA20_POLY1305_SHA256", 10, [1.5, 1.5, 1.5]),      # no 1.2 partner
             cell("1.3", AES128_13, 10, 0.5, mode="resumed"),                          # not a full handshake
             cell("1.2", AES128_12, 25, None, count=0)]                                 # nothing measured
    rows = {(r["family"], r["agents"]): r for r in compare_versions(cells)}
    aes = rows[("AES-128-GCM", 10)]
    assert (aes["tls12_p50_ms"], aes["tls13_p50_ms"]) == (2.0, 1.0)
    assert aes["tls13_vs_tls12_pct"] == pytest.approx(-50, abs=0.1)
    assert aes["tls13_vs_tls12"]["high_pct"] < 0 and aes["tls13_vs_tls12"]["verdict"] == stats.LOWER
    assert rows[("CHACHA20-POLY1305", 10)]["tls13_vs_tls12"]["verdict"] == stats.NO_DATA
    assert ("AES-128-GCM", 25) not in rows
    assert list(rows)[-1] == ("all", 10)  # the overall row comes last
    assert rows[("all", 10)]["tls13_p50_ms"] == 1.25   # per round, the median of the 1.3 cells' p50s


def test_a_slower_tls13_is_positive_and_an_interval_spanning_zero_is_no_difference():
    slower = compare_versions([*rounds("1.2", AES128_12, 10, [1.0, 1.0, 1.1]),
                               *rounds("1.3", AES128_13, 10, [1.3, 1.35, 1.4])])[0]
    assert slower["tls13_vs_tls12_pct"] > 0 and slower["tls13_vs_tls12"]["verdict"] == stats.HIGHER
    noise = compare_versions([*rounds("1.2", AES128_12, 10, [1.0, 1.2, 0.9]),
                              *rounds("1.3", AES128_13, 10, [1.1, 1.0, 1.0])])[0]
    assert noise["tls13_vs_tls12"]["verdict"] == stats.NO_DIFFERENCE


def timed_rounds(version, suite, agents, handshake_ms: list[list[float]], wall_s=0.08):
    """Cells that kept every handshake's time (the engine's "tls" histogram), one per round."""
    return [cell(version, suite, agents, sorted(values)[len(values) // 2], count=len(values), repeat=r, wall_s=wall_s,
                 histograms={"tls": encoded([int(v * 1000) for v in values])})
            for r, values in enumerate(handshake_ms)]


def test_a_cell_of_a_twelfth_of_a_second_concludes_from_every_handshake():
    rng = __import__("random").Random(2)
    tls12 = timed_rounds("1.2", AES128_12, 10, [[rng.gauss(2.0, 0.2) for _ in range(40)] for _ in range(3)])
    tls13 = timed_rounds("1.3", AES128_13, 10, [[rng.gauss(1.0, 0.1) for _ in range(40)] for _ in range(3)])
    row = compare_versions([*tls12, *tls13])[0]
    change = row["tls13_vs_tls12"]
    assert change["verdict"] == stats.LOWER and -55 < change["pct"] < -45 and row["too_short"] is None
    # the medians printed beside the change are the ones it compares: the sign agrees with them
    assert row["tls13_p50_ms"] < row["tls12_p50_ms"]
    assert row["tls13_vs_tls12_pct"] == pytest.approx((row["tls13_p50_ms"] / row["tls12_p50_ms"] - 1) * 100, abs=0.2)


def test_cells_stored_before_repeats_are_one_round_without_an_interval():
    old = [{"version": "1.2", "requested_suite": AES128_12, "agents": 10, "count": 500, "p50_ms": 2.0,
            "mean_ms": 2.2, "wall_s": 1.5},
           {"version": "1.3", "requested_suite": AES128_13, "agents": 10, "count": 500, "p50_ms": 1.5,
            "mean_ms": 1.6, "wall_s": 1.5}]
    row = compare_versions(old)[0]
    assert row["tls13_vs_tls12_pct"] == -25.0 and row["tls13_vs_tls12"]["verdict"] == stats.SINGLE


def test_cell_rows_give_each_cell_its_median_and_end_to_end_rate_over_the_repeats():
    cells = [*rounds("1.3", AES128_13, 10, [1.0, 1.2, 1.1], wall_s=2.0),
             cell("1.3", AES128_13, 10, 9.9, warmup=True, wall_s=0.1)]            # a warm-up: left out
    [row] = cell_rows(cells)
    assert (row["repeats"], row["count"]) == (3, 600)
    assert row["p50_ms"]["median"] == 1.1 and row["p50_ms"]["low"] < 1.1 < row["p50_ms"]["high"]
    assert row["handshakes_per_s"]["median"] == 100.0 and row["too_short"] is None


def test_resumed_faster_than_full_is_negative_and_unsupported_resumption_says_so():
    cells = [*rounds("1.3", AES128_13, 10, [2.0, 2.1, 2.0]),
             *rounds("1.3", AES128_13, 10, [0.5, 0.55, 0.5], mode="resumed", resumption="supported"),
             cell("1.2", "X", 10, None, count=0, mode="resumed", resumption="unsupported")]
    rows = compare_resumption(cells)
    assert rows[0]["resumed_vs_full_pct"] == pytest.approx(-74.7, abs=0.5)
    assert rows[0]["resumed_vs_full"]["verdict"] == stats.LOWER and rows[0]["resumption"] == "supported"
    assert rows[1]["resumption"] == "unsupported" and rows[1]["resumed_vs_full"]["verdict"] == stats.NO_DATA
    assert not math.isnan(rows[0]["resumed_p50_ms"])
