"""Bad input lands in ab's failure columns and the run still finishes (issue #4 "Bad input").

The servers are real (tests/load/conftest.py: small threaded TCP servers on 127.0.0.1). Tests
taking `hostile` run twice: plain HTTP and the same server behind TLS, since the engine reads and
ends TLS streams through other calls (and the TLS server ends every other connection without
close_notify, as many servers do).
"""

from __future__ import annotations

import time

import pytest

from workers.load.client import run_load
from workers.load.spec import LoadSpec

# Every test runs on both engines (Python and C), which must agree (tests/load/conftest.py).
pytestmark = pytest.mark.usefixtures("load_engine")

FAILURE_COLUMNS = ("failed_connect", "failed_receive", "failed_length", "failed_exceptions")


def local_spec(port: int, scheme: str = "http", **kwargs) -> LoadSpec:
    return LoadSpec(scheme=scheme, host="localhost", ip="127.0.0.1", port=port, **kwargs)


def columns(result) -> dict[str, int]:
    return {name: getattr(result.counters, name) for name in FAILURE_COLUMNS}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_refused_connections_are_connect_failures(refused_port, scheme):
    """On loopback the refusal surfaces at the first write (or ClientHello), not at connect()."""
    result = run_load(local_spec(refused_port, scheme, requests=8, concurrency=2))

    assert result.counters.complete == 0
    assert columns(result) == {"failed_connect": 8, "failed_receive": 0, "failed_length": 0, "failed_exceptions": 0}
    assert result.counters.failed == 8
    assert result.errors == {"connect: ConnectionRefusedError": 8}


def test_a_server_closing_mid_response_is_a_receive_failure(hostile):
    scheme, start = hostile
    result = run_load(local_spec(start("close_mid_response"), scheme, requests=6, concurrency=2))

    assert result.counters.complete == 0
    assert columns(result)["failed_receive"] == 6 and result.counters.failed == 6
    assert result.errors == {"receive: closed by the server": 6}


def test_a_server_slower_than_the_timeout_is_an_exception_and_the_run_ends(hostile):
    scheme, start = hostile
    started = time.monotonic()
    result = run_load(local_spec(start("slow"), scheme, requests=4, concurrency=2, timeout_s=0.3))
    elapsed = time.monotonic() - started

    assert columns(result)["failed_exceptions"] == 4 and result.counters.timeouts == 4
    assert result.counters.complete == 0 and result.counters.failed == 4
    # Two rounds of 0.3 s timeouts; the bound leaves room for a loaded machine but is far below
    # the 4 s the server would make a waiting client take.
    assert elapsed < 2.5, "two rounds of 0.3 s timeouts (+ the 50 ms check interval) must not take longer"


def test_non_2xx_responses_are_complete_not_failed(hostile):
    scheme, start = hostile
    result = run_load(local_spec(start("status_503"), scheme, requests=10, concurrency=2))

    assert (result.counters.complete, result.counters.non_2xx, result.counters.failed) == (10, 10, 0)
    assert result.status_codes == {"503": 10}
    assert result.document_length == 4 and result.server_software == "hostile/1"


def test_a_body_length_unlike_the_first_is_a_length_failure_but_complete(hostile):
    scheme, start = hostile
    result = run_load(local_spec(start("varying_length"), scheme, requests=10, concurrency=1))

    # Responses alternate 1 and 2 bytes: the first sets the document length, the five others differ.
    assert result.document_length == 1
    assert result.counters.complete == 10
    assert columns(result) == {"failed_connect": 0, "failed_receive": 0, "failed_length": 5, "failed_exceptions": 0}
    assert result.counters.html_bytes == 15


def test_an_unparsable_response_is_an_exception(hostile):
    scheme, start = hostile
    result = run_load(local_spec(start("garbage"), scheme, requests=5, concurrency=1))

    assert result.counters.complete == 0
    assert columns(result)["failed_exceptions"] == 5 and result.counters.timeouts == 0


@pytest.mark.parametrize("behaviour", ["no_length", "no_length_long_headers"])
def test_a_body_delimited_by_the_connection_end_is_complete(hostile, behaviour):
    scheme, start = hostile
    result = run_load(local_spec(start(behaviour), scheme, requests=5, concurrency=1))

    assert (result.counters.complete, result.counters.failed) == (5, 0)
    assert result.document_length == len(b"until-eof")


def test_it_sends_host_and_custom_headers_over_http_1_1_to_the_pinned_ip(hostile_http, echo_requests):
    port = hostile_http("ok")
    spec = LoadSpec(scheme="http", host="shop.example.test", ip="127.0.0.1", port=port, path="/p?q=1", requests=3,
                    headers=(("X-Load", "yes"), ("user-agent", "custom/1")))

    result = run_load(spec)

    assert result.counters.complete == 3
    head = echo_requests[0].decode().split("\r\n")
    assert head[0] == "GET /p?q=1 HTTP/1.1"
    assert f"Host: shop.example.test:{port}" in head
    assert "X-Load: yes" in head and "user-agent: custom/1" in head
    assert not any(line.lower().startswith("user-agent: tlsaudit") for line in head)
    assert "Connection: close" in head, "without keep-alive the server is asked to close"


def test_a_kept_alive_connection_closed_before_answering_is_retried_not_failed(hostile):
    scheme, start = hostile
    """As ab: a server closing an idle kept-alive connection is not the request's fault."""
    result = run_load(local_spec(start("keepalive_then_idle_close"), scheme, requests=6, concurrency=1, keepalive=True))

    assert (result.counters.complete, result.counters.failed) == (6, 0)
    assert result.counters.connections_opened == 6
    assert result.counters.keepalive_requests == 6


def test_a_kept_alive_response_cut_short_is_a_receive_failure(hostile):
    scheme, start = hostile
    result = run_load(local_spec(start("keepalive_then_truncated"), scheme, requests=4, concurrency=1, keepalive=True))

    assert result.counters.complete == 2
    assert columns(result) == {"failed_connect": 0, "failed_receive": 2, "failed_length": 0, "failed_exceptions": 0}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_tcp_handshake_that_completes_late_is_waited_for_and_timed_as_connect(late_accepting, scheme):
    """The engine writes (or sends its ClientHello) right after connect(), since on loopback TCP
    is usually up by then; when it is not, that write finds out and the engine waits for the
    socket to become writable, as ab does. The wait is TCP connect time, not TLS time."""
    result = run_load(local_spec(late_accepting(scheme), scheme, requests=2, concurrency=1, timeout_s=5))

    assert (result.counters.complete, result.counters.failed) == (2, 0)
    first_connect, second_connect = result.samples["connect"]
    assert first_connect >= 900_000, "the first SYN was dropped: connect waits for its retransmission (~1 s)"
    assert second_connect < 500_000, "the second connection finds the queue free"
    if scheme == "https":
        assert all(tls < 500_000 for tls in result.samples["tls"]), "the TCP wait is not counted as TLS handshake"
        assert len(result.samples["tls"]) == 2
