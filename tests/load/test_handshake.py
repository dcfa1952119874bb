"""workers.load.handshake against the nginx TLS lab: forcing checked in nginx's access log,
full vs resumed, the matrix, exact merges, failures and cancel. Speeds are never asserted."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from hdrh.histogram import HdrHistogram

from tests.support.tls_servers import free_ports
from workers.load.handshake import (
    TLS13_STANDARD_SUITES,
    HandshakeError,
    handshake_matrix,
    iana_name,
    merge_handshake_results,
    run_handshakes,
)
from workers.load.spec import HandshakeSpec

RESUMING, NOT_RESUMING = "load_session_cache", "load_no_resumption"
ECDHE_RSA_AES128 = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"


def spec_for(lab, name, **kwargs) -> HandshakeSpec:
    return HandshakeSpec(**{"host": "localhost", "port": lab.port(name), "ip": "127.0.0.1", **kwargs})


def run_logged(lab, name, **kwargs) -> tuple[dict, list[dict]]:
    """Run with one HTTP request per connection and return the result and nginx's rows for this run."""
    before = len(lab.read_access_log(name))
    result = run_handshakes(spec_for(lab, name, **kwargs), http_probe=True)
    return result, lab.read_access_log(name)[before:]


@pytest.mark.parametrize("version, suite, nginx_protocol, nginx_cipher", [
    ("1.2", ECDHE_RSA_AES128, "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256"),
    ("1.2", "ECDHE-RSA-CHACHA20-POLY1305", "TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305"),
    *[("1.3", s, "TLSv1.3", s) for s in TLS13_STANDARD_SUITES],
])
def test_it_forces_version_and_suite_on_every_full_handshake(tls_lab, version, suite, nginx_protocol, nginx_cipher):
    # given the server that resumes when asked: full handshakes must still be full
    result, rows = run_logged(tls_lab, RESUMING, version=version, suite=suite, agents=3, per_agent=4)
    assert (result["count"], result["failures"], result["flagged"]) == (12, {}, {})
    assert result["mode"] == "full" and result["version"] == version
    assert result["suite"] == iana_name(suite)
    assert len(rows) == 12
    assert {(r["ssl_protocol"], r["ssl_cipher"], r["ssl_session_reused"], r["connection_requests"]) for r in rows} \
        == {(nginx_protocol, nginx_cipher, ".", "1")}
    assert len({r["connection"] for r in rows}) == 12  # a new connection per handshake


def test_it_reports_the_negotiated_suite_by_its_iana_name(tls_lab):
    result, _ = run_logged(tls_lab, NOT_RESUMING, version="1.2", suite="ECDHE-RSA-AES256-GCM-SHA384",
                           agents=1, per_agent=2)
    assert result["suite"] == "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"


@pytest.mark.parametrize("version, protocol", [("1.2", "TLSv1.2"), ("1.3", "TLSv1.3")])
def test_it_times_resumed_handshakes_where_the_server_resumes(tls_lab, version, protocol):
    result, rows = run_logged(tls_lab, RESUMING, version=version, agents=2, per_agent=5, resume=True)
    assert (result["mode"], result["resumption"], result["count"]) == ("resumed", "supported", 10)
    assert (result["failures"], result["flagged"]) == ({}, {})
    # one priming full handshake per agent, then only resumed ones
    assert sorted(r["ssl_session_reused"] for r in rows) == ["."] * 2 + ["r"] * 10
    assert {r["ssl_protocol"] for r in rows} == {protocol}


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_it_says_resumption_is_unsupported_instead_of_counting_full_handshakes(tls_lab, version):
    result, rows = run_logged(tls_lab, NOT_RESUMING, version=version, agents=2, per_agent=5, resume=True)
    assert (result["resumption"], result["count"], result["mean_ms"]) == ("unsupported", 0, None)
    assert "did not resume" in result["resumption_note"]
    assert {r["ssl_session_reused"] for r in rows} == {"."}
    assert len(rows) <= 4  # it stops after the first attempt per agent instead of doing 10 full handshakes


def test_a_suite_the_server_refuses_is_counted_as_failures_with_the_reason(tls_lab):
    # a_plus_ecdsa_p384_only has an ECDSA certificate: ECDHE-RSA cannot be negotiated
    result = run_handshakes(spec_for(tls_lab, "a_plus_ecdsa_p384_only", version="1.2", suite=ECDHE_RSA_AES128,
                                     agents=2, per_agent=3))
    assert result["count"] == 0 and result["mean_ms"] is None
    assert result["failures"] == {"tls error: alert handshake failure": 6}


def test_a_version_the_server_does_not_speak_is_a_failure(tls_lab):
    result = run_handshakes(spec_for(tls_lab, "a_minus_tls12_only", version="1.3", agents=1, per_agent=2))
    assert result["count"] == 0
    assert sum(result["failures"].values()) == 2
    assert all(reason.startswith("tls error") for reason in result["failures"])


def test_a_refused_port_is_counted_not_raised():
    [port] = free_ports(1)
    result = run_handshakes(HandshakeSpec(host="localhost", port=port, ip="127.0.0.1", agents=3, per_agent=2))
    assert result["failures"] == {"connection refused": 6}
    assert (result["count"], result["cancelled"]) == (0, False)


def test_it_refuses_a_spec_it_cannot_run():
    with pytest.raises(HandshakeError, match="not a TLS 1.2 cipher suite"):
        run_handshakes(HandshakeSpec(host="h", port=1, version="1.2", suite="TLS_AES_128_GCM_SHA256"))
    with pytest.raises(HandshakeError, match="unknown TLS 1.2 cipher suite"):
        run_handshakes(HandshakeSpec(host="h", port=1, version="1.2", suite="TLS_MADE_UP_WITH_NOTHING"))
    with pytest.raises(HandshakeError, match="TLS version must be one of"):
        run_handshakes(HandshakeSpec(host="h", port=1, version="1.1"))


def test_merging_two_agents_equals_the_counts_of_their_runs(tls_lab):
    # given two agents' results (as two Celery tasks would return them)
    a = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=2, per_agent=5))
    b = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=3, per_agent=5))
    merged = merge_handshake_results([a, b])
    # then the merge is exact: counts and every histogram bucket add up
    assert (merged["count"], merged["agents"], merged["per_agent"]) == (25, 5, 5)
    for phase in ("tls", "tcp"):
        one = HdrHistogram(1, 60_000_000, 3)
        one.decode_and_add(a["histograms"][phase])
        one.decode_and_add(b["histograms"][phase])
        both = HdrHistogram.decode(merged["histograms"][phase].encode())
        assert both.get_total_count() == 25
        assert list(both.counts) == list(one.counts)
    # b ran after a: the cell's wall time spans both, from a's start to b's end
    assert merged["wall_s"] == pytest.approx(b["wall_started_at"] + b["wall_s"] - a["wall_started_at"], abs=1e-5)
    assert merged["wall_s"] >= a["wall_s"] + b["wall_s"] - 1e-5


def test_the_matrix_has_one_cell_per_version_suite_and_agents_level(tls_lab):
    cells = handshake_matrix("localhost", tls_lab.port(RESUMING), ip="127.0.0.1", agents_levels=(1, 3),
                             per_agent=2, resume=True, repeats=1, warmup=False)
    full = [c for c in cells if c["mode"] == "full"]
    rsa12 = ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
             "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"]
    assert sorted((c["version"], c["requested_suite"], c["agents"]) for c in full) == sorted(
        [("1.2", s, a) for s in rsa12 for a in (1, 3)] + [("1.3", s, a) for s in TLS13_STANDARD_SUITES for a in (1, 3)])
    for c in full:
        assert (c["count"], c["failures"], c["flagged"]) == (c["agents"] * 2, {}, {})
        assert c["suite"] == c["requested_suite"]
        assert {"mean_ms", "sd_ms", "p50_ms", "p95_ms", "p99_ms", "handshakes_per_s"} <= set(c)
    resumed = [c for c in cells if c["mode"] == "resumed"]
    assert sorted((c["version"], c["resumption"], c["count"]) for c in resumed) == [
        ("1.2", "supported", 2), ("1.3", "supported", 2)]


def test_the_matrix_skips_tls12_on_a_tls13_only_server_and_says_why(tls_lab):
    cells = handshake_matrix("localhost", tls_lab.port("a_plus_ecdsa_tls13_hsts"), ip="127.0.0.1",
                             agents_levels=(1,), per_agent=1, repeats=1, warmup=False)
    [skipped] = [c for c in cells if c["version"] == "1.2"]
    assert "accepted none of the ECDHE AEAD suites over TLS 1.2" in skipped["skipped"]
    assert sorted(c["requested_suite"] for c in cells if c["version"] == "1.3") == sorted(TLS13_STANDARD_SUITES)


def test_the_matrix_runs_only_the_given_suites(tls_lab):
    cells = handshake_matrix("localhost", tls_lab.port(NOT_RESUMING), ip="127.0.0.1", agents_levels=(2,),
                             per_agent=3, suites=["ECDHE-RSA-AES256-GCM-SHA384", "TLS_AES_128_GCM_SHA256"],
                             repeats=1, warmup=False)
    assert sorted((c["version"], c["requested_suite"], c["count"]) for c in cells) == [
        ("1.2", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 6), ("1.3", "TLS_AES_128_GCM_SHA256", 6)]


def test_the_matrix_repeats_every_cell_in_rounds_after_a_discarded_warm_up(tls_lab):
    progress: list[tuple[int, int]] = []
    before = len(tls_lab.read_access_log(NOT_RESUMING))
    cells = handshake_matrix("localhost", tls_lab.port(NOT_RESUMING), ip="127.0.0.1", agents_levels=(2,),
                             per_agent=3, suites=[ECDHE_RSA_AES128, "TLS_AES_128_GCM_SHA256"], repeats=3,
                             on_progress=lambda done, total: progress.append((done, total)))
    warmups = [c for c in cells if c.get("warmup")]
    assert [(c["version"], c["count"]) for c in warmups] == [("1.2", 6), ("1.3", 6)]   # 2 agents x 3, first
    timed = [c for c in cells if not c.get("warmup")]
    # Rounds in order, the versions' order alternating: 1.2 1.3 | 1.3 1.2 | 1.2 1.3
    assert [(c["repeat"], c["version"]) for c in timed] == [(0, "1.2"), (0, "1.3"), (1, "1.3"), (1, "1.2"),
                                                            (2, "1.2"), (2, "1.3")]
    assert all(c["count"] == 6 and c["handshakes_per_s"] == round(6 / c["wall_s"], 1) for c in timed)
    assert progress[-1] == (8 * 6, 8 * 6)
    assert len(tls_lab.read_access_log(NOT_RESUMING)) == before   # no HTTP request was sent


def test_the_rate_is_over_the_whole_call_set_up_included(tls_lab):
    result = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=2, per_agent=10))
    assert result["count"] == 20 and result["wall_s"] >= result["loop_s"] > 0
    assert result["handshakes_per_s"] == round(20 / result["wall_s"], 1)


def test_a_ca_file_verifies_the_certificate_and_an_other_ca_is_not_trusted(tls_lab):
    import certifi

    trusted = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=1, per_agent=2,
                                      ca_file=str(tls_lab.ca_file), insecure=False))
    assert (trusted["count"], trusted["failures"]) == (2, {})
    # Public roots only (the test PKI caches its root key per process: a second TestPki is the same CA).
    refused = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=1, per_agent=2,
                                      ca_file=certifi.where(), insecure=False))
    assert refused["count"] == 0
    [(reason, count)] = refused["failures"].items()
    assert count == 2 and reason.startswith("certificate not trusted: unable to get local issuer certificate")


def test_cancel_stops_a_long_run_within_a_second(tls_lab):
    cancel = threading.Event()
    progress: list[tuple[int, int]] = []
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    result = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=4, per_agent=5000),
                            cancel=cancel, on_progress=lambda done, total: progress.append((done, total)))
    stopped_after = time.monotonic() - started - 0.3
    assert result["cancelled"] is True
    assert 0 < result["count"] < 20_000
    assert progress and progress[-1][1] == 20_000
    assert stopped_after < 1.0, f"took {stopped_after:.2f} s to stop"


def test_a_late_tcp_handshake_is_timed_as_tcp_not_tls(late_accepting):
    """The server's accept queue drops the first SYN, so the first connection's TCP handshake takes
    the ~1 s SYN retransmission: the wait lands in the TCP time, and the ClientHello is only made
    once TCP is up, so the TLS time holds none of it. (A kernel's RTO, not a speed, is asserted.)"""
    result = run_handshakes(HandshakeSpec(host="localhost", port=late_accepting("https"), ip="127.0.0.1",
                                          version="1.3", agents=1, per_agent=2, timeout_s=5))
    assert (result["count"], result["failures"], result["flagged"]) == (2, {}, {})
    tcp = HdrHistogram.decode(result["histograms"]["tcp"])
    assert tcp.get_max_value() >= 900_000 and tcp.get_min_value() < 500_000
    assert HdrHistogram.decode(result["histograms"]["tls"]).get_max_value() < 500_000


def test_a_server_that_never_answers_the_client_hello_is_a_timeout():
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # the kernel completes TCP; nobody ever reads the ClientHello
    try:
        started = time.monotonic()
        result = run_handshakes(HandshakeSpec(host="localhost", port=silent.getsockname()[1], ip="127.0.0.1",
                                              agents=2, per_agent=2, timeout_s=0.3))
        elapsed = time.monotonic() - started
    finally:
        silent.close()
    assert result["failures"] == {"timeout": 4}
    assert (result["count"], result["cancelled"]) == (0, False)
    assert elapsed < 2.5, "two rounds of 0.3 s deadlines (checked every 50 ms), not a hang"


def test_a_cell_sized_by_time_ends_at_its_limit_whole_not_stopped(tls_lab):
    # like ab -t: a handshake count far beyond what fits, a limit of 0.5 s: the run ends there, complete
    result = run_handshakes(spec_for(tls_lab, NOT_RESUMING, version="1.3", agents=2, per_agent=100_000,
                                     time_limit_s=0.5))
    assert result["cancelled"] is False and result["stalled"] is False
    assert result["count"] > 10 and result["count"] < 200_000
    assert 0.5 <= result["wall_s"] < 3
