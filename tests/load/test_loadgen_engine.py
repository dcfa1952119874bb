"""The ab-style load engine (workers.load.client) against the nginx TLS lab, checked server-side.

The lab's access logs record `$ssl_protocol $ssl_cipher $ssl_session_reused $connection
$connection_requests $status "$request"`: each test reads the rows its run added, so counts of
requests, of distinct connections and of resumed sessions come from nginx, not from us.
HTTP runs request /health (the lab's HTTP / is a redirect); HTTPS runs request /.
"""

from __future__ import annotations

import multiprocessing
import time

import pytest

from tests.support.waiting import SchedulingLag
from tlsaudit.domain.abstats import decode_histogram
from workers.load.client import LoadError, merge_results, run_load
from workers.load.merge import result_from_dict
from workers.load.spec import PHASES, LoadSpec

# Every test runs on both engines (Python and C), which must agree (tests/load/conftest.py).
pytestmark = pytest.mark.usefixtures("load_engine")

NO_RESUMPTION = "load_no_resumption"
SESSION_CACHE = "load_session_cache"


def lab_spec(tls_lab, name: str, scheme: str, **kwargs) -> LoadSpec:
    port = tls_lab.port(name) if scheme == "https" else tls_lab.http_port(name)
    path = "/" if scheme == "https" else "/health"
    return LoadSpec(scheme=scheme, host="localhost", ip="127.0.0.1", port=port, path=path, **kwargs)


class LogWindow:
    """The access-log rows written since it was opened (HTTPS log or HTTP log of one fixture)."""

    def __init__(self, tls_lab, name: str, scheme: str):
        suffix = "access" if scheme == "https" else "http"
        self.path = tls_lab.directory / "logs" / f"{name}.{suffix}.log"
        self.tls_lab = tls_lab
        self.start = len(self.lines())

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def rows(self) -> list[dict]:
        from tests.support.tls_servers import LOG_FIELDS

        deadline = time.monotonic() + 2
        rows = []
        while time.monotonic() < deadline:  # nginx writes the log line after the response: allow a moment
            rows = [dict(zip(LOG_FIELDS, line.partition(' "')[0].split(" ")))
                    for line in self.lines()[self.start:]]
            if rows and len(rows) == getattr(self, "expected", len(rows)):
                break
            time.sleep(0.05)
        return rows

    def expect(self, count: int) -> list[dict]:
        self.expected = count
        rows = self.rows()
        assert len(rows) == count, f"nginx logged {len(rows)} requests, expected {count}"
        return rows


def connections(rows: list[dict]) -> set[str]:
    return {row["connection"] for row in rows}


# --- counts and connections, both schemes, both modes ---------------------------------------------

@pytest.mark.parametrize("scheme", ["http", "https"])
def test_it_completes_every_request_on_a_new_connection_each(tls_lab, scheme):
    log = LogWindow(tls_lab, NO_RESUMPTION, scheme)

    result = run_load(lab_spec(tls_lab, NO_RESUMPTION, scheme, requests=120, concurrency=6))

    c = result.counters
    assert (c.complete, c.failed, c.non_2xx, c.connections_opened) == (120, 0, 0, 120)
    rows = log.expect(120)
    assert len(connections(rows)) == 120, "every request must arrive on its own connection"
    assert {row["connection_requests"] for row in rows} == {"1"}
    assert {row["status"] for row in rows} == {"200"}
    assert c.keepalive_requests == 0
    assert len(result.samples["total"]) == 120 and len(result.samples["connect"]) == 120
    if scheme == "https":
        assert {row["ssl_session_reused"] for row in rows} == {"."}, "every handshake must be full"
        assert len(result.samples["tls"]) == 120
        assert (result.protocol, result.cipher) == ("TLSv1.3", rows[0]["ssl_cipher"])
    else:
        assert result.samples["tls"] == [] and result.protocol == ""


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_it_reuses_c_connections_with_keep_alive(tls_lab, scheme):
    log = LogWindow(tls_lab, NO_RESUMPTION, scheme)

    result = run_load(lab_spec(tls_lab, NO_RESUMPTION, scheme, requests=300, concurrency=3, keepalive=True))

    c = result.counters
    assert (c.complete, c.failed, c.connections_opened, c.keepalive_requests) == (300, 0, 3, 300)
    rows = log.expect(300)
    assert len(connections(rows)) == 3
    assert max(int(row["connection_requests"]) for row in rows) >= 100
    # ab's Connect is 0 on a reused connection: only the 3 first requests paid for a connection.
    assert sum(1 for v in result.samples["connect"] if v > 0) <= 3
    if scheme == "https":
        assert len(result.samples["tls"]) == 3


def test_it_never_resumes_a_session_even_where_the_server_could(tls_lab):
    log = LogWindow(tls_lab, SESSION_CACHE, "https")

    result = run_load(lab_spec(tls_lab, SESSION_CACHE, "https", requests=60, concurrency=3))

    assert (result.counters.complete, result.counters.failed) == (60, 0)
    rows = log.expect(60)
    assert len(connections(rows)) == 60
    assert {row["ssl_session_reused"] for row in rows} == {"."}


# --- forcing versions and suites, checked in nginx's log ----------------------------------------------

@pytest.mark.parametrize("version, ciphers, expected", [
    ("1.2", "ECDHE-RSA-AES128-GCM-SHA256", ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")),
    ("1.2", "ECDHE-RSA-CHACHA20-POLY1305", ("TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305")),
    ("1.3", None, ("TLSv1.3", None)),
])
def test_it_forces_the_tls_version_and_suite(tls_lab, version, ciphers, expected):
    log = LogWindow(tls_lab, NO_RESUMPTION, "https")

    result = run_load(lab_spec(tls_lab, NO_RESUMPTION, "https", requests=20, concurrency=2, tls_version=version,
                               ciphers=ciphers))

    assert (result.counters.complete, result.counters.failed) == (20, 0)
    rows = log.expect(20)
    assert {row["ssl_protocol"] for row in rows} == {expected[0]}
    assert result.protocol == expected[0]
    if expected[1]:
        assert {row["ssl_cipher"] for row in rows} == {expected[1]}
        assert result.cipher == expected[1]


def test_it_verifies_the_certificate_only_when_given_a_ca(tls_lab):
    trusted = run_load(lab_spec(tls_lab, NO_RESUMPTION, "https", requests=5, ca_file=str(tls_lab.ca_file)))
    untrusted = run_load(lab_spec(tls_lab, NO_RESUMPTION, "https", requests=5, insecure=False))

    assert (trusted.counters.complete, trusted.counters.failed) == (5, 0)
    assert (untrusted.counters.complete, untrusted.counters.failed_connect) == (0, 5)
    assert list(untrusted.errors) == ["connect: TLS handshake: SSLCertVerificationError"]


def test_it_refuses_a_spec_it_cannot_run(tls_lab):
    with pytest.raises(LoadError, match="concurrency must be between 1 and the number of requests"):
        run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=2, concurrency=3))
    with pytest.raises(LoadError, match="accepts no cipher"):
        run_load(lab_spec(tls_lab, NO_RESUMPTION, "https", requests=2, ciphers="NOT-A-CIPHER"))


# --- histograms, merging, processes ------------------------------------------------------------------------

def test_merging_two_runs_adds_their_counts_and_keeps_the_percentiles(tls_lab):
    first = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=150, concurrency=3)).to_dict()
    second = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=150, concurrency=3)).to_dict()

    merged = merge_results([first, second])

    assert merged["counters"]["complete"] == 300 and merged["counters"]["connections_opened"] == 300
    assert merged["spec"]["requests"] == 300 and merged["agents"] == 2
    assert merged["time_taken_s"] >= max(first["time_taken_s"], second["time_taken_s"])
    for phase in ("connect", "waiting", "processing", "total"):
        histogram = decode_histogram(merged["histograms"][phase])
        exact = sorted(first["samples"][phase] + second["samples"][phase])
        assert histogram.get_total_count() == 300 == len(merged["samples"][phase])
        for percent in (50, 90, 99):
            # HdrHistogram's percentile is the sample of rank round(n * p / 100); 3 significant
            # digits keep it within 0.1 % of that exact sample (exact below 2048 µs).
            value = exact[max(1, int(len(exact) * percent / 100 + 0.5)) - 1]
            assert abs(histogram.get_value_at_percentile(percent) - value) <= value * 0.001
    assert result_from_dict(merged).counters.complete == 300


def test_a_merge_without_samples_still_adds_the_histograms(tls_lab):
    part = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=40, concurrency=2)).to_dict()
    no_samples = {**part, "samples": None}

    merged = merge_results([part, no_samples])

    assert merged["samples"] is None
    assert decode_histogram(merged["histograms"]["total"]).get_total_count() == 80


def test_two_processes_give_exact_totals(tls_lab):
    log = LogWindow(tls_lab, NO_RESUMPTION, "http")

    result = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=301, concurrency=4, processes=2))

    assert (result.counters.complete, result.counters.failed, result.processes) == (301, 0, 2)
    assert result.spec.requests == 301 and result.spec.processes == 2
    assert len(log.expect(301)) == 301
    assert {phase: len(result.samples[phase]) for phase in PHASES} == {
        "connect": 301, "tls": 0, "waiting": 301, "processing": 301, "total": 301, "tcp": 301}


def run_in_daemon(spec_dict, results):
    results.put(run_load(LoadSpec.from_dict(spec_dict)).to_dict())


def test_a_daemonic_caller_runs_in_one_process_and_says_so(tls_lab, load_engine):
    """Celery prefork children are daemonic: they cannot start processes of their own. The C loop
    runs its loops as threads (it releases the GIL), so it still uses both: no note then."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    spec = lab_spec(tls_lab, NO_RESUMPTION, "http", requests=50, concurrency=2, processes=2)
    child = context.Process(target=run_in_daemon, args=(spec.to_dict(), results), daemon=True)
    child.start()
    result = results.get(timeout=60)
    child.join(timeout=10)

    if load_engine == "c":
        assert result["counters"]["complete"] == 50 and result["processes"] == 2 and result["engine"] == "c"
        assert result["notes"] == []
    else:
        assert result["counters"]["complete"] == 50 and result["processes"] == 1
        assert "Ran in one process instead of 2" in result["notes"][0]


# --- stopping: cancel, time limit, progress ----------------------------------------------------------------

@pytest.mark.timing
def test_cancel_stops_a_long_run_within_a_second(tls_lab):
    asked_at = []
    progress = []
    lag = SchedulingLag()

    def cancel() -> bool:
        asked_at.append(time.monotonic())
        return time.monotonic() - started > 0.6

    started = time.monotonic()
    with lag:
        result = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=10_000_000, concurrency=4,
                                   keepalive=True),
                          cancel=cancel, on_progress=lambda done, total: progress.append((time.monotonic(), done, total)))
    elapsed = time.monotonic() - started

    assert result.cancelled
    assert elapsed < 0.6 + 1.0 + lag.worst
    assert 0 < result.counters.complete < 10_000_000
    # polled every 0.5 s from the start (the first poll too); 0.25 s for a busy 2-core machine's scheduling,
    # plus the worst lateness a sleeping thread saw meanwhile (the other test process, a build beside us)
    polls = [started, *asked_at]
    assert max(b - a for a, b in zip(polls, polls[1:])) <= 0.5 + 0.25 + lag.worst, \
        f"cancel() must be polled every 0.5 s (scheduling lag seen: {lag.worst:.3f} s)"
    assert progress and all(total == 10_000_000 for _, _, total in progress)
    assert [done for _, done, _ in progress] == sorted(done for _, done, _ in progress)
    assert len(progress) <= elapsed * 4 + 2, "on_progress at most ~4 times a second"


def test_cancel_stops_a_multiprocess_run_too(tls_lab):
    started = time.monotonic()
    result = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=10_000_000, concurrency=4, keepalive=True,
                               processes=2), cancel=lambda: time.monotonic() - started > 2.0)

    assert result.cancelled and result.processes == 2
    assert time.monotonic() - started < 2.0 + 1.5  # includes spawning the children
    assert result.counters.complete > 0


def test_a_time_limit_ends_the_run_like_ab_t(tls_lab):
    result = run_load(lab_spec(tls_lab, NO_RESUMPTION, "http", requests=10_000_000, concurrency=2, keepalive=True,
                               time_limit_s=0.5))

    assert not result.cancelled
    assert 0.45 <= result.time_taken_s <= 0.8
    assert result.counters.complete > 0 and result.counters.failed == 0
