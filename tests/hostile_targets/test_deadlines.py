"""Each engine's deadline against the servers built to defeat per-operation timeouts (tests/hostile.py:
a trickle of one byte a second, a ServerHello started and never finished, bytes that never form a
record, a real TLS server that stalls one connection in N, slowloris on the HTTP side, a page whose
script never ends). Real sockets, real sslyze, real Chromium; each engine is run in a thread with a
bound on the wait, so a hang fails the test instead of hanging it. Deadlines are shortened through
the engines' own parameters (same code path); tests/hostile_targets/test_cli.py keeps one audit at
the default deadline through the real CLI.

After each run: no client socket is left towards the hostile port, and no thread of sslyze's runs.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time

import pytest

from tests import hostile
from tests.support.hostile_targets import client_sockets_to, sslyze_threads
from tests.support.waiting import settled
from workers.net.deadline import Deadline, DeadlineExceeded

SLACK_S = 6.0     # the machine is shared and busy: how much later than its bound a run may end


def ends_within(seconds: float, call):
    """call() in a daemon thread; its value, or AssertionError when it is still running after `seconds`."""
    box = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="engine-under-test")
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:.0f} s: the deadline did not hold"
    if "error" in box:
        raise box["error"]
    return box["value"], time.monotonic() - started


def assert_nothing_left(port: int) -> None:
    assert settled(lambda: client_sockets_to(port), lambda held: not held) == [], "sockets to the hostile port"
    assert settled(sslyze_threads, lambda names: not names) == [], "sslyze threads still running"


def audit(port: int, pki, deadline_s: float, network_timeout: float = 3):
    from workers.tls.engine import run_scan

    return run_scan("localhost", port, ip="127.0.0.1", ca_file=str(pki.ca_file), allow_private=True,
                    network_timeout=network_timeout, max_retries=1, deadline_s=deadline_s)


@pytest.fixture
def pki(tls_lab):
    return tls_lab.pki


# --- the deadline itself --------------------------------------------------------------------------

def test_a_trickle_cannot_stretch_a_connection_past_its_lifetime():
    # Given a connection limited to 3 s, each read to 2.5 s, to a server sending a byte a second
    with hostile.drip_record() as port:
        deadline = Deadline(30, connection_s=3)
        sock = deadline.connect("127.0.0.1", port, per_op=2.5)
        started, received = time.monotonic(), b""
        # When we read what it sends
        with pytest.raises(DeadlineExceeded, match="still unfinished after 3 s"):
            while chunk := sock.recv(100):
                received += chunk
        elapsed = time.monotonic() - started
        sock.close()

    # Then every read got its byte in time, and the connection ended at its lifetime all the same
    assert 2.5 < elapsed < 3 + SLACK_S and len(received) >= 5
    assert (deadline.cut_connections, deadline.overran) == (1, 0)


def test_past_the_deadline_no_connection_opens_and_a_read_in_flight_ends_at_it():
    with hostile.drip() as port:
        deadline = Deadline(2, connection_s=30)
        sock = deadline.connect("127.0.0.1", port, per_op=5)
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="time budget of 2 s ran out"):
            while sock.recv(100):
                pass
        assert time.monotonic() - started < 2 + SLACK_S
        sock.close()
        with pytest.raises(DeadlineExceeded):
            deadline.connect("127.0.0.1", port, per_op=5)
    assert deadline.overran == 2


# --- audits ------------------------------------------------------------------------------------------

def test_an_audit_of_a_server_that_stalls_one_connection_in_seven_ends_at_its_deadline(pki):
    # Given a real TLS server that trickles every 7th connection (the pre-flight and sslyze's
    # connectivity test pass; its scan threads stall one by one)
    with hostile.trickle_every(pki, nth=7) as port:
        # When it is audited with a 20 s deadline
        outcome, elapsed = ends_within(20 + SLACK_S, lambda: audit(port, pki, deadline_s=20))
        # Then the audit ends by then, failed, saying why, and leaves nothing behind
        assert_nothing_left(port)

    assert outcome.facts is None and outcome.error.code == "timeout", outcome.error
    assert outcome.error.message.startswith(f"The audit of 127.0.0.1:{port} did not finish within its 20 s deadline: ")
    # how many of the stalled connections are open at the deadline depends on the scan's timing: 1 or more
    assert re.search(r"\d+ of our connections (was|were) still unfinished after 10 s", outcome.error.message)
    assert "sends its answers a few bytes at a time" in outcome.error.message
    assert outcome.timings["sslyze"] < 20, "sslyze ends before the deadline, leaving our probes their reserve"


def test_an_audit_whose_connectivity_test_meets_a_stalled_connection_says_so(pki):
    with hostile.trickle_every(pki, nth=3) as port:
        outcome, elapsed = ends_within(20 + SLACK_S, lambda: audit(port, pki, deadline_s=40))
        assert_nothing_left(port)

    assert outcome.error.code == "timeout" and elapsed < 20, (outcome.error, elapsed)
    assert outcome.error.message.startswith(f"The audit of 127.0.0.1:{port} was stopped after ")
    assert "1 of our connections was still unfinished after 10 s" in outcome.error.message


def test_bytes_that_never_form_a_record_stop_the_audit_at_the_pre_flight(pki):
    # Given a server that sends noise a byte a second: sslyze would wait 5-7 s on each of ~600 connections
    with hostile.drip_noise() as port:
        outcome, elapsed = ends_within(15 + SLACK_S, lambda: audit(port, pki, deadline_s=50))
        assert_nothing_left(port)

    # Then the pre-flight's "no TLS here" ends it: sslyze never starts
    assert outcome.error.code == "no_tls" and "answered with another protocol" in outcome.error.message
    assert "sslyze" not in outcome.timings and elapsed < 15


def test_a_slowloris_http_side_is_graded_with_hsts_not_tested_and_why(pki):
    # Given a server whose TLS is fine but whose HTTP answers trickle forever
    with hostile.slow_http(pki) as port:
        outcome, elapsed = ends_within(45 + SLACK_S, lambda: audit(port, pki, deadline_s=45))
        assert_nothing_left(port)

    # Then the audit is done (sslyze's HTTP command and our HSTS read each cut at 10 s), HSTS explained
    assert outcome.error is None, outcome.error
    assert outcome.facts.hsts_check.status == "not_tested"
    assert outcome.facts.hsts_check.reason == ("Our HTTP request for / got no complete answer: the connection was "
                                               "still unfinished after 10 s, so the HSTS header could not be read.")
    assert elapsed < 45


def test_an_aia_download_that_trickles_ends_at_the_connection_limit():
    from workers.tls.aia import fetch_certificate

    with hostile.drip_noise() as port:
        limit = Deadline(30, connection_s=2)
        with pytest.raises(DeadlineExceeded, match="still unfinished after 2 s"):
            # (each read may wait 3 s: the server's byte a second always comes in time)
            ends_within(2 + SLACK_S, lambda: fetch_certificate(f"http://127.0.0.1:{port}/ca.der", allow_private=True,
                                                               timeout=3, deadline=limit))
        assert_nothing_left(port)


# --- load and handshake runs --------------------------------------------------------------------------

def test_a_load_run_against_a_slowloris_ends_at_its_stall_bound(pki):
    from workers.load.client import run_load
    from workers.load.spec import LoadSpec

    # Given 200 requests, 2 at a time, each allowed 1 s: 100 s if every one waits out its timeout
    with hostile.slow_http(pki) as port:
        spec = LoadSpec(scheme="https", host="localhost", port=port, ip="127.0.0.1", requests=200, concurrency=2,
                        timeout_s=1, stall_s=3)
        result, elapsed = ends_within(3 + SLACK_S, lambda: run_load(spec))
        assert_nothing_left(port)

    # Then it ends once nothing completed for 3 s, and says so
    assert result.stalled and result.counters.complete == 0 and not result.cancelled
    assert 2 <= result.counters.timeouts <= 8 and elapsed < 3 + SLACK_S


@pytest.fixture
def slow_reset():
    """Accepts, waits half a second, then resets: every request fails, slowly, but is answered."""
    def handle(conn, state):
        state.stop.wait(0.5)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    with hostile.serve(handle) as port:
        yield port


def test_requests_that_fail_with_an_answer_are_not_a_stall(slow_reset):
    from workers.load.client import run_load
    from workers.load.handshake import run_handshakes
    from workers.load.spec import HandshakeSpec, LoadSpec

    # Given a server that resets each connection after 0.5 s: 12 requests one at a time take 6 s
    load = LoadSpec(scheme="http", host="localhost", port=slow_reset, ip="127.0.0.1", requests=12, concurrency=1,
                    timeout_s=1, stall_s=2)
    handshakes = HandshakeSpec(host="localhost", port=slow_reset, ip="127.0.0.1", agents=1, per_agent=12,
                               timeout_s=1, stall_s=2)
    # When the stall bound is 2 s
    result, _ = ends_within(6 + SLACK_S, lambda: run_load(load))
    shaken, _ = ends_within(6 + SLACK_S, lambda: run_handshakes(handshakes))

    # Then the runs go to their end: a failure the server answered is not a stall
    assert not result.stalled and result.counters.failed_receive == 12, result.errors
    assert not shaken["stalled"] and shaken["failures"] == {"connection reset": 12}


def test_a_handshake_run_against_a_stalled_server_hello_ends_at_its_stall_bound():
    from workers.load.handshake import run_handshakes
    from workers.load.spec import HandshakeSpec

    with hostile.drip_server_hello() as port:
        spec = HandshakeSpec(host="localhost", port=port, ip="127.0.0.1", version="1.2", agents=2, per_agent=50,
                             timeout_s=1, stall_s=3)
        result, elapsed = ends_within(3 + SLACK_S, lambda: run_handshakes(spec))
        assert_nothing_left(port)

    assert result["stalled"] and result["count"] == 0 and result["failures"]["timeout"] >= 2


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_resumed_handshakes_are_measured_against_a_server_that_never_answers_http(pki, version):
    """#30 item 14: a resumed run primes each agent with one request (its TLS 1.3 tickets come after
    the handshake). Against a server that completes handshakes and never answers, priming waited out
    each request's timeout and a handshake run ran to its organization's cap (124 s): priming ends as
    soon as the session is resumable, so the run ends at its own time limit, with its figures."""
    from workers.load.handshake import run_handshakes
    from workers.load.spec import HandshakeSpec

    with hostile.handshake_then_hang(pki) as port:
        spec = HandshakeSpec(host="localhost", port=port, ip="127.0.0.1", version=version, agents=4, per_agent=200,
                             resume=True, timeout_s=10, time_limit_s=2, stall_s=15)
        result, elapsed = ends_within(2 + SLACK_S, lambda: run_handshakes(spec))
        assert_nothing_left(port)

    assert result["count"] > 0 and result["resumption"] == "supported", result
    assert not result["failures"] and not result["stalled"], result


def test_a_handshake_run_ends_at_its_time_limit_while_handshakes_still_complete(pki):
    from workers.load.handshake import run_handshakes
    from workers.load.spec import HandshakeSpec

    # Given a server that completes two handshakes in three and trickles the third
    with hostile.trickle_every(pki, nth=3) as port:
        spec = HandshakeSpec(host="localhost", port=port, ip="127.0.0.1", version="1.3", agents=2, per_agent=100,
                             timeout_s=2, time_limit_s=4, stall_s=10)
        result, elapsed = ends_within(4 + SLACK_S, lambda: run_handshakes(spec))
        assert_nothing_left(port)

    # A run that reaches its time limit is whole (like ab -t), neither stopped nor stalled
    assert not result["cancelled"] and not result["stalled"] and 0 < result["count"] < 200


# --- browser probes ------------------------------------------------------------------------------------

def test_a_probe_whose_script_never_ends_fails_at_its_first_https_load(pki):
    from workers.browser.probe import run_probe
    from workers.browser.spec import ProbeSpec

    # Given a page whose script trickles forever, probed over HTTPS and HTTP, twice each
    with hostile.slow_subresource(pki) as port:
        spec = ProbeSpec(host="localhost", https_port=port, http_port=port, ip="127.0.0.1",
                         ca_pem=pki.ca_file.read_text(), runs=2, timeout_s=4)
        result, elapsed = ends_within(30 + SLACK_S, lambda: run_probe(spec, allow_private=True))
        assert_nothing_left(port)

    # Then the first HTTPS load times out and ends the probe: nothing else waits out its timeout
    assert result["error"]["code"] == "timeout" and result["error"]["message"] == (
        "The page did not finish loading within 4 s.")
    assert [(load["variant"], load["ok"]) for load in result["loads"]] == [("https", False)]


def test_a_probe_deadline_shortens_the_page_timeout(pki):
    from workers.browser.probe import run_probe
    from workers.browser.spec import ProbeSpec

    with hostile.slow_http(pki) as port:
        spec = ProbeSpec(host="localhost", https_port=port, http_port=port, ip="127.0.0.1",
                         ca_pem=pki.ca_file.read_text(), runs=1, variants=("https",), timeout_s=60, deadline_s=6)
        result, elapsed = ends_within(25 + SLACK_S, lambda: run_probe(spec, allow_private=True))

    assert result["error"]["code"] == "timeout" and result["duration_s"] < 6 + SLACK_S
