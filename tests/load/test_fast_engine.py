"""The C loop (workers/load/_fastloop.c) against the Python engine: same servers, same answers.

Each hostile server (tests/load/conftest.py: real TCP servers on 127.0.0.1, plain and behind TLS)
is loaded once by each engine; ab's failure columns, the error classes, status codes, document
length and byte counts must be equal. Then what only the C engine has: the automatic choice and
its fallback, threads instead of processes, and samples past MAX_EXACT_SAMPLES.
"""

from __future__ import annotations

import threading

import pytest

from tlsaudit.domain.abstats import decode_histogram
from workers.load import client, fast_engine
from workers.load.client import LoadError, run_load
from workers.load.spec import PHASES, LoadSpec

COMPARED = ("complete", "failed", "failed_connect", "failed_receive", "failed_length", "failed_exceptions",
            "timeouts", "non_2xx", "keepalive_requests", "connections_opened", "html_bytes", "total_bytes",
            "write_errors")


def local_spec(port: int, scheme: str, **kwargs) -> LoadSpec:
    return LoadSpec(scheme=scheme, host="localhost", ip="127.0.0.1", port=port, **kwargs)


def outcome(result) -> dict:
    return {"counters": {name: getattr(result.counters, name) for name in COMPARED}, "errors": result.errors,
            "status_codes": result.status_codes, "document_length": result.document_length,
            "server_software": result.server_software, "samples": {p: len(v) for p, v in result.samples.items()}}


def both_engines(monkeypatch, spec: LoadSpec) -> tuple[dict, dict]:
    results = {}
    for engine in ("python", "c"):
        monkeypatch.setenv(fast_engine.ENGINE_VARIABLE, engine)
        result = run_load(spec)
        assert result.engine == engine
        results[engine] = outcome(result)
    return results["python"], results["c"]


@pytest.mark.parametrize("behaviour, keepalive, expected", [
    ("ok", False, {"complete": 6}),
    ("close_mid_response", False, {"failed_receive": 6}),
    ("status_503", False, {"non_2xx": 6}),
    ("varying_length", False, {"failed_length": 3}),
    ("garbage", False, {"failed_exceptions": 6}),
    ("no_length", False, {"complete": 6}),
    ("no_length_long_headers", False, {"complete": 6}),
    # Bytes past Content-Length on a closing connection: llhttp refuses them, so complete and an exception.
    ("longer_than_its_length", False, {"complete": 6, "failed_exceptions": 6}),
    ("chunked", True, {"complete": 6, "keepalive_requests": 3}),
    ("bad_chunk_size", False, {"failed_exceptions": 6}),
    ("many_small_chunks", False, {"complete": 6}),   # the outside review: framing counted as one long head
    ("http10_keepalive", True, {"complete": 6, "keepalive_requests": 4}),
    ("no_content_204", False, {"complete": 6}),
    ("two_lengths", False, {"failed_exceptions": 6}),
    ("reset", False, {"failed_receive": 6}),
    ("keepalive_then_idle_close", True, {"complete": 6}),
    ("keepalive_then_truncated", True, {"failed_receive": 3}),
])
def test_both_engines_count_a_hostile_server_alike(hostile, monkeypatch, behaviour, keepalive, expected):
    scheme, start = hostile
    spec = local_spec(start(behaviour), scheme, requests=6, concurrency=1, keepalive=keepalive, timeout_s=5)

    python, c = both_engines(monkeypatch, spec)

    assert c == python
    for name, value in expected.items():
        assert c["counters"][name] == value, (name, c)


def test_a_slowloris_head_times_out_alike(hostile, monkeypatch):
    """A head trickled a byte every 50 ms never completes within 0.4 s: each request is a timeout."""
    scheme, start = hostile
    spec = local_spec(start("slowloris"), scheme, requests=2, concurrency=2, timeout_s=0.4)

    python, c = both_engines(monkeypatch, spec)

    assert c == python
    assert c["counters"]["timeouts"] == c["counters"]["failed_exceptions"] == 2
    assert c["errors"] == {"timeout": 2}


def test_tls_to_a_plain_http_server_is_a_handshake_failure_alike(tls_lab, monkeypatch):
    """nginx's plain port answers a ClientHello with an HTTP 400: not a TLS record."""
    spec = local_spec(tls_lab.http_port("load_no_resumption"), "https", requests=4, concurrency=2)

    python, c = both_engines(monkeypatch, spec)

    assert c == python
    assert c["counters"]["failed_connect"] == 4
    assert list(c["errors"]) == ["connect: TLS handshake: SSLError (WRONG_VERSION_NUMBER)"]


def test_the_nginx_lab_gives_both_engines_the_same_counts(tls_lab, monkeypatch):
    for scheme, keepalive in (("http", True), ("http", False), ("https", True), ("https", False)):
        port = tls_lab.port("load_no_resumption") if scheme == "https" else tls_lab.http_port("load_no_resumption")
        spec = LoadSpec(scheme=scheme, host="localhost", ip="127.0.0.1", port=port,
                        path="/" if scheme == "https" else "/health", requests=200, concurrency=8, keepalive=keepalive)
        python, c = both_engines(monkeypatch, spec)
        assert c == python, (scheme, keepalive)
        assert c["counters"]["complete"] == 200 and c["counters"]["failed"] == 0


# --- the choice, its fallback, threads, big runs ----------------------------------------------------

client_run_engine = client.run_engine


def refuse_processes(*args, **kwargs):
    raise AssertionError("the C loop must not start processes")



def test_the_c_loop_is_chosen_by_default_and_the_python_engine_when_it_is_not_built(hostile_http, monkeypatch):
    spec = local_spec(hostile_http("ok"), "http", requests=3)
    monkeypatch.delenv(fast_engine.ENGINE_VARIABLE, raising=False)

    assert run_load(spec).engine == "c"
    monkeypatch.setattr(fast_engine, "_fastloop", None)
    fallback = run_load(spec)
    assert (fallback.engine, fallback.counters.complete) == ("python", 3)
    monkeypatch.setenv(fast_engine.ENGINE_VARIABLE, "c")
    with pytest.raises(LoadError, match="not built"):
        run_load(spec)


def test_https_runs_on_the_c_loop_only_when_it_shares_pythons_openssl(tls_lab, monkeypatch):
    """The outside review: the C loop uses the SSL_CTX inside Python's SSLContext, which is only safe on
    the one OpenSSL of the process. Here they share it; a C loop built on another OpenSSL (its version
    number differs) leaves HTTPS to the Python engine, saying why, and plain HTTP on the C loop."""
    spec = LoadSpec(scheme="https", host="localhost", ip="127.0.0.1", port=tls_lab.port("load_no_resumption"),
                    requests=3, concurrency=1)
    monkeypatch.delenv(fast_engine.ENGINE_VARIABLE, raising=False)
    assert fast_engine.openssl_not_shared() is None and run_load(spec).engine == "c"

    fast_engine.openssl_not_shared.cache_clear()
    monkeypatch.setattr(fast_engine._fastloop, "OPENSSL_VERSION_NUMBER", fast_engine.ssl.OPENSSL_VERSION_NUMBER + 1)
    try:
        reason = fast_engine.why_not_fast(spec)
        fallback = run_load(spec)
        plain = fast_engine.why_not_fast(LoadSpec(scheme="http", host="localhost", ip="127.0.0.1", port=1))
    finally:
        fast_engine.openssl_not_shared.cache_clear()
    assert reason and "is not Python's ssl's" in reason
    assert (fallback.engine, fallback.counters.complete) == ("python", 3)
    assert plain is None


def test_c_loops_run_as_threads_of_one_process_with_exact_totals(tls_lab, monkeypatch):
    monkeypatch.delenv(fast_engine.ENGINE_VARIABLE, raising=False)
    monkeypatch.setattr(client, "run_in_processes", refuse_processes)
    names = []
    spec = LoadSpec(scheme="https", host="localhost", ip="127.0.0.1", port=tls_lab.port("load_no_resumption"),
                    requests=301, concurrency=6, processes=3, keepalive=True)

    monkeypatch.setattr(client, "run_engine", lambda engine, failures: (names.append(threading.current_thread().name),
                                                                         client_run_engine(engine, failures)))

    result = run_load(spec)

    assert (result.engine, result.processes, result.counters.complete, result.counters.failed) == ("c", 3, 301, 0)
    assert result.counters.connections_opened == 6
    assert sorted(names) == ["loadgen-0", "loadgen-1", "loadgen-2"], "three loops, each a thread of this process"
    assert len(result.samples["total"]) == 301 and len(result.samples["tls"]) == 6


def test_past_max_exact_samples_only_histograms_are_kept(tls_lab, monkeypatch):
    monkeypatch.setenv(fast_engine.ENGINE_VARIABLE, "c")
    monkeypatch.setattr(fast_engine, "MAX_EXACT_SAMPLES", 100)
    spec = LoadSpec(scheme="http", host="localhost", ip="127.0.0.1", port=tls_lab.http_port("load_no_resumption"),
                    path="/health", requests=250, concurrency=5, keepalive=True, processes=1)

    result = run_load(spec)

    assert result.samples is None
    assert {phase: decode_histogram(result.histograms[phase]).get_total_count() for phase in PHASES} == {
        "connect": 250, "tls": 0, "waiting": 250, "processing": 250, "total": 250, "tcp": 5}


def test_chunk_recorder_keeps_exact_samples_up_to_the_bound_then_histograms(monkeypatch):
    """Batches arrive per phase (int32 µs); the bound counts complete requests (the "total" phase)."""
    monkeypatch.setattr(fast_engine, "MAX_EXACT_SAMPLES", 4)
    recorder = fast_engine.ChunkRecorder()
    batch = fast_engine.array("i", [10, 20, 30]).tobytes()

    recorder.sink(PHASES.index("total"), batch)
    assert recorder.exact and recorder.samples["total"].tolist() == [10, 20, 30]
    recorder.sink(PHASES.index("total"), batch)
    histograms, samples = recorder.finish()

    assert samples is None
    total = decode_histogram(histograms["total"])
    assert total.get_total_count() == 6 and total.get_max_value() == 30


def test_sort_int32_sorts_in_place_negatives_first_and_refuses_other_buffers():
    values = [0, -1, 2**31 - 1, -2**31, 65536, 65535, -65536, 7, 7, 1 << 16 | 3, 3]
    samples = fast_engine.array("i", values)
    fast_engine._fastloop.sort_int32(samples)
    assert samples.tolist() == sorted(values)
    for short in (fast_engine.array("i"), fast_engine.array("i", [5])):
        fast_engine._fastloop.sort_int32(short)
    with pytest.raises(TypeError):
        fast_engine._fastloop.sort_int32(fast_engine.array("q", [2, 1]))
    with pytest.raises(BufferError):
        fast_engine._fastloop.sort_int32(bytes(8))  # read-only


def test_chunk_recorder_keeps_completion_order_and_fills_the_same_histograms():
    recorder = fast_engine.ChunkRecorder()
    total = PHASES.index("total")
    recorder.sink(total, fast_engine.array("i", [30, 10, 20]).tobytes())
    recorder.sink(total, fast_engine.array("i", [5, 30]).tobytes())
    histograms, samples = recorder.finish()
    assert samples["total"] == [30, 10, 20, 5, 30] and samples["tls"] == []
    reference = fast_engine.new_histogram()
    fast_engine.record_values(reference, [30, 10, 20, 5, 30])
    assert histograms["total"] == fast_engine.encode_histogram(reference)
