"""bench/research.py's pure pieces: reading ab and h2load, summarising their runs with our statistics,
and the studies' tables (signed overheads with intervals, RTT multiples only where they mean something)."""

import pytest

from bench.research import (
    ab_phase_medians,
    ab_run_report,
    h2load_cell,
    handshake_table,
    paired_versions,
    parse_ab,
    parse_h2load_connect,
    summarise_runs,
    sweep_table,
    with_rtt,
)
from tlsaudit.domain import stats

AB_HTTPS = """Server Software:        nginx/1.22.1
Server Hostname:        127.77.124.2
Server Port:            44481
SSL/TLS Protocol:       TLSv1.3,TLS_AES_256_GCM_SHA384,2048,256
Server Temp Key:        X25519 253 bits

Document Path:          /health
Document Length:        152 bytes

Concurrency Level:      4
Time taken for tests:   1.347 seconds
Complete requests:      20
Failed requests:        0
Total transferred:      5900 bytes
HTML transferred:       3040 bytes
Requests per second:    14.85 [#/sec] (mean)
Time per request:       269.309 [ms] (mean)
Time per request:       67.327 [ms] (mean, across all concurrent requests)
Transfer rate:          4.28 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:      102  110  11.7    106     141
Processing:   100  109  15.0    101     160
Waiting:      100  106   9.1    101     132
Total:        202  219  24.9    211     301
"""

AB_HTTP_KEEPALIVE_404 = """Server Software:        nginx/1.22.1
Server Hostname:        127.77.124.2
Server Port:            60341

Document Path:          /nothere
Document Length:        169 bytes

Concurrency Level:      4
Time taken for tests:   0.403 seconds
Complete requests:      20
Failed requests:        0
Non-2xx responses:      20
Keep-Alive requests:    20
Total transferred:      7500 bytes
HTML transferred:       3380 bytes
Requests per second:    49.63 [#/sec] (mean)

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0   10  20.6      0      50
Processing:    50   50   0.7     50      52
Waiting:       50   50   0.7     50      52
Total:         50   60  20.8     50     102
"""

H2LOAD = """starting benchmark...
spawning thread #0: 4 total client(s). 8 total requests
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: http/1.1

finished in 315.11ms, 25.39 req/s, 0B/s
requests: 8 total, 8 started, 8 done, 8 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 8 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 0B (0) total, 832B (832) headers (space savings 0.00%), 1.19KB (1216) data
                     min         max         mean         sd        +/- sd
time for request:    50.36ms     53.48ms     51.64ms      1.13ms    50.00%
time for connect:   {connect}
time to 1st byte:   156.15ms    156.50ms    156.37ms       157us    75.00%
"""


# --- reading the tools ---------------------------------------------------------------------------------

def test_it_reads_abs_counts_protocol_and_connection_time_medians():
    parsed = parse_ab(AB_HTTPS)
    assert (parsed["time_taken_s"], parsed["complete"], parsed["failed"], parsed["non_2xx"]) == (1.347, 20, 0, 0)
    assert (parsed["protocol"], parsed["cipher"]) == ("TLSv1.3", "TLS_AES_256_GCM_SHA384")
    assert parsed["median_ms"] == {"connect": 106, "processing": 101, "waiting": 101, "total": 211}


def test_it_reads_abs_non_2xx_and_keepalive_lines_and_a_plain_http_run():
    parsed = parse_ab(AB_HTTP_KEEPALIVE_404)
    assert (parsed["non_2xx"], parsed["keepalive_requests"], parsed["protocol"]) == (20, 20, None)
    assert parsed["median_ms"]["connect"] == 0 and parsed["median_ms"]["total"] == 50


def test_an_ab_run_without_a_report_is_an_error():
    with pytest.raises(ValueError, match="ab printed no time taken"):
        parse_ab("apr_socket_connect(): Connection refused (111)\n")


@pytest.mark.parametrize("row, mean_ms", [
    ("102.99ms    105.67ms    104.25ms      1.29ms    75.00%", 104.25),
    ("  1.02s       1.30s       1.10s       20.5ms    75.00%", 1100.0),
    ("980us       1.20ms       999us        51us    75.00%", 0.999),
])
def test_it_reads_h2loads_time_for_connect_in_any_unit(row, mean_ms):
    parsed = parse_h2load_connect(H2LOAD.format(connect=row))
    assert parsed["connect_ms"]["mean"] == pytest.approx(mean_ms)
    assert (parsed["protocol"], parsed["cipher"], parsed["count"], parsed["failed"]) == (
        "TLSv1.3", "TLS_AES_128_GCM_SHA256", 8, 0)
    assert parsed["wall_s"] == pytest.approx(0.31511)


def test_an_h2load_run_without_connect_times_is_an_error():
    output = H2LOAD.format(connect="").replace("time for connect:   \n", "")
    with pytest.raises(ValueError, match="time for connect"):
        parse_h2load_connect(output)


# --- our statistics applied to ab and h2load ---------------------------------------------------------------

def ab_runs(level: int, http_s: list[float], https_s: list[float], n: int = 400, done: int | None = None) -> list:
    """ab runs of one level, alternated as the script runs them; each side's process wall times."""
    runs = []
    for repeat, (http, https) in enumerate(zip(http_s, https_s)):
        for scheme, wall in (("http", http), ("https", https)):
            parsed = {"time_taken_s": wall - 0.01, "complete": n if done is None else done, "failed": 0,
                      "median_ms": {"total": wall / n * level * 1000}}
            runs.append({"level": level, "scheme": scheme, "repeat": repeat, "median_ms": parsed["median_ms"],
                         "report": ab_run_report(parsed, n, wall)})
    return runs


def test_ab_runs_get_the_clis_signed_overhead_with_an_interval():
    slower = summarise_runs(ab_runs(20, [2.0, 2.1, 1.9], [3.0, 3.2, 2.9]), "new")
    [row] = slower["levels"]
    assert row["time_taken_overhead"]["verdict"] == stats.HIGHER
    assert 45 < row["time_taken_overhead"]["pct"] < 55 and row["time_taken_overhead"]["low_pct"] > 0
    faster = summarise_runs(ab_runs(20, [3.0, 3.2, 2.9], [2.0, 2.1, 1.9]), "new")
    change = faster["levels"][0]["time_taken_overhead"]
    assert change["verdict"] == stats.LOWER and change["low_pct"] < change["pct"] < change["high_pct"] < 0


def test_ab_runs_shorter_than_a_second_still_answer():
    [row] = summarise_runs(ab_runs(20, [0.2, 0.21, 0.2], [0.5, 0.5, 0.52]), "new")["levels"]
    assert row["time_taken_overhead"]["verdict"] == stats.HIGHER and row["http"]["too_short"] is None


def test_the_average_pools_the_levels_by_repeat():
    runs = ab_runs(20, [2.0, 2.0, 2.0], [3.0, 3.1, 2.9]) + ab_runs(100, [2.0, 2.0, 2.0], [4.0, 4.2, 3.8], n=2000)
    summary = summarise_runs(runs, "new")
    assert [row["concurrency"] for row in summary["levels"]] == [20, 100]
    pct = summary["average"]["time_taken_overhead"]["pct"]
    assert 70 < pct < 76      # the geometric mean of +50 % and +100 %, not their arithmetic mean (+75 % is close)
    assert summary["average"]["levels_used"] == [20, 100]


def test_h2load_cells_and_the_tls13_advantage_are_paired_by_round():
    runs = [{"connect_ms": {"mean": ms}, "count": 200, "wall_s": 3.0} for ms in (151.0, 152.0, 150.0)]
    cell = h2load_cell(runs)
    assert cell["connect_ms"]["median"] == 151.0 and cell["too_short"] is None
    assert cell["per_s"]["median"] == pytest.approx(200 / 3.0)
    change = paired_versions({"1.2": {0: 150.0, 1: 152.0, 2: 151.0}, "1.3": {0: 100.0, 1: 101.0, 2: 100.5}}, False)
    assert change["verdict"] == stats.LOWER and -34 < change["pct"] < -32
    short = paired_versions({"1.2": {0: 150.0, 1: 152.0}, "1.3": {0: 100.0, 1: 101.0}}, True)
    assert short["verdict"] == stats.TOO_SHORT


def test_an_h2load_run_with_nothing_completed_says_so_and_a_short_one_counts():
    cell = h2load_cell([{"connect_ms": {"mean": 100.0}, "count": 0, "wall_s": 0.3}] * 3)
    assert cell["too_short"] == "3 of 3 runs: nothing completed"
    assert h2load_cell([{"connect_ms": {"mean": 100.0}, "count": 50, "wall_s": 0.3}] * 3)["too_short"] is None


# --- the tables ------------------------------------------------------------------------------------

def sweep_items(runs: list, n: int = 400) -> tuple[list, dict]:
    summary = summarise_runs(runs, "new")
    items = [{"level": row["concurrency"], "n": n, "tool": "ab", "row": row} for row in summary["levels"]]
    return items, {"ab": summary["average"]}


def test_the_sweep_table_prints_medians_intervals_signed_overheads_and_rtt_multiples_at_50_ms():
    items, averages = sweep_items(ab_runs(20, [2.0, 2.1, 1.9], [4.0, 4.2, 3.8]))
    text = sweep_table("**Sweep, 50 ms RTT**", items, averages, rtt_ms=50.0)
    lines = text.splitlines()
    assert lines[0] == "**Sweep, 50 ms RTT**" and lines[2].startswith("| c | n | tool | HTTP time s |")
    [row] = [line for line in lines if line.startswith("| 20 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["20", "400", "ab"]
    assert cells[3].startswith("2.00 [") and cells[4].startswith("4.00 [")      # median [95 % interval]
    assert cells[7] == "100 ms (2.0 RTT) → 200 ms (4.0 RTT)"
    assert cells[8].startswith("+100.0 % [") and cells[8].endswith("(HTTPS slower)")
    [average] = [line for line in lines if line.startswith("| avg |")]
    assert "(HTTPS slower)" in average


def test_on_loopback_no_rtt_multiples_and_a_faster_https_side_is_negative():
    items, averages = sweep_items(ab_runs(20, [4.0, 4.2, 3.8], [2.0, 2.1, 1.9]))
    text = sweep_table("**Sweep, loopback**", items, averages, rtt_ms=None)
    assert "RTT)" not in text
    [row] = [line for line in text.splitlines() if line.startswith("| 20 |")]
    assert "-50.0 % [" in row and "(HTTPS faster)" in row and "+" not in row.split("|")[9]


def test_a_level_where_nothing_completed_says_so_instead_of_a_number():
    items, averages = sweep_items(ab_runs(20, [2.0, 2.0, 2.0], [0.5, 0.5, 0.5], done=0))
    [row] = [line for line in sweep_table("t", items, averages, 50.0).splitlines() if line.startswith("| 20 |")]
    assert "nothing completed" in row and "no data" in row and "%" not in row


def test_the_handshake_table_prints_both_versions_the_advantage_and_the_round_trips():
    change = paired_versions({"1.2": {0: 100.0, 1: 101.0, 2: 100.5}, "1.3": {0: 50.0, 1: 50.4, 2: 50.2}}, False)
    cells = {"1.2": {"ms": stats.median_interval([100.0, 101.0, 100.5]),
                     "per_s": stats.median_interval([65.0, 66.0, 64.0]), "too_short": None},
             "1.3": {"ms": stats.median_interval([50.0, 50.4, 50.2]), "per_s": None, "too_short": None}}
    text = handshake_table("**Handshakes**", [{"agents": 10, "tool": "ours", "what": "TLS handshake (p50)",
                                               "cells": cells, "change": change}], rtt_ms=50.0)
    [row] = [line for line in text.splitlines() if line.startswith("| 10 |")]
    cells_text = [c.strip() for c in row.strip("|").split("|")]
    assert cells_text[1] == "ours: TLS handshake (p50)"
    assert cells_text[2].startswith("100.5 [") and cells_text[2].endswith("ms (2.0 RTT)")
    assert cells_text[3].endswith("ms (1.0 RTT)")
    assert cells_text[4].startswith("-50.") and cells_text[4].endswith("(TLS 1.3 faster)")
    assert cells_text[5].startswith("65 [") and cells_text[6] == "–"


def test_ab_phases_are_per_level_and_scheme():
    runs = [{"level": 20, "scheme": "https", "median_ms": {"connect": 100, "processing": 101, "waiting": v,
                                                           "total": 200 + v}} for v in (100, 101, 99)]
    assert ab_phase_medians(runs) == {(20, "https"): {"connect": 100, "processing": 101, "waiting": 100,
                                                      "total": 300}}


@pytest.mark.parametrize("ms, rtt, text", [(101.4, 50.0, "101 ms (2.0 RTT)"), (0.62, 0.03, "0.62 ms"),
                                            (44.04, 0.03, "44.0 ms"), (None, 50.0, "–")])
def test_times_carry_rtt_multiples_only_from_10_ms_rtts(ms, rtt, text):
    assert with_rtt(ms, rtt) == text
