"""The pre-flight handshake (workers/net/reach.py) against each hostile server: what it observes, and
the site owner's message it becomes. Real sockets, short timeouts (1 s a wait, 3 s in all)."""

from __future__ import annotations

from functools import partial

import pytest

from tests import hostile
from workers.net import reach
from workers.net.reach_errors import reach_error, specific_reach_error


def check(port: int) -> reach.Reach:
    return reach.check_tls("127.0.0.1", port, "localhost", timeout=1, total_s=3)


@pytest.mark.parametrize("server, outcome, code, words", [
    (hostile.tarpit, reach.SILENT, "timeout", "never answers the TLS handshake"),
    (hostile.blackhole, reach.CONNECT_TIMEOUT, "timeout", "the port is filtered or the server is down"),
    (hostile.reset, reach.RESET, "connection_failed", "then reset it before any TLS handshake"),
    (hostile.plain_http, reach.TLS_ERROR, "no_tls", "does not speak TLS (is it plain HTTP?)"),
    (hostile.garbage, reach.TLS_ERROR, "no_tls", "answered with another protocol"),
    (hostile.drip, reach.SLOW, "timeout", "never finished it: it answers far too slowly"),
    (hostile.drip_record, reach.SLOW, "timeout", "never finished it: it answers far too slowly"),
    (hostile.drip_server_hello, reach.SLOW, "timeout", "never finished it: it answers far too slowly"),
    # 5 bytes in 1 s: OpenSSL's verdict before this check's 3 s (the engines wait 10 s; at 1 byte a second it
    # comes after 5 s; slower still, the total deadline ends it as SLOW)
    (partial(hostile.drip_noise, interval_s=0.2), reach.TLS_ERROR, "no_tls", "answered with another protocol"),
])
def test_it_tells_each_tcp_level_hostility_apart(server, outcome, code, words):
    with server() as port:
        seen = check(port)

    assert seen.outcome == outcome, seen
    error = reach_error(seen, "localhost")
    assert error.code == code and words in error.message, error.message


@pytest.mark.parametrize("server, no_tls", [(partial(hostile.drip_noise, interval_s=0.2), True),
                                             (hostile.plain_http, True),
                                             (hostile.garbage, True), (hostile.drip_record, False)])
def test_first_bytes_that_are_no_tls_record_tell_the_audit_to_stop_there(server, no_tls):
    from workers.net.reach_errors import speaks_no_tls

    with server() as port:
        seen = check(port)

    assert speaks_no_tls(seen) is no_tls, seen


def test_an_ssl2_answer_is_not_taken_for_another_protocol():
    from workers.net.outcomes import WIRE_SSL2
    from workers.net.reach_errors import speaks_no_tls

    ssl2_error = b"\x80\x03\x00\x00\x01"  # SSL 2.0 record of 3 bytes: ERROR, no-cipher
    seen = reach.Reach(reach.TLS_ERROR, "127.0.0.1", 443, 1.0, first_bytes=ssl2_error)
    assert seen.wire == WIRE_SSL2 and not speaks_no_tls(seen)  # sslyze, which speaks SSL 2.0, decides


def test_a_slow_server_is_given_up_on_at_the_total_deadline_not_per_read():
    with hostile.drip(interval_s=0.2) as port:
        seen = check(port)

    assert seen.outcome == reach.SLOW and 2.9 < seen.elapsed_s < 3.5
    assert 10 <= seen.received <= 20, "a byte every 0.2 s for 3 s"
    assert "sent only" in reach_error(seen, "localhost").message


@pytest.mark.parametrize("server, reason, words", [
    ("wrong_sni", "TLSV1_UNRECOGNIZED_NAME", "does not serve localhost"),
    ("big_chain", "EXCESSIVE_MESSAGE_SIZE", "certificate chain larger than TLS clients accept"),
])
def test_tls_level_hostility_is_named_even_when_sslyze_only_says_the_handshake_failed(tls_lab, tmp_path, server,
                                                                                    reason, words):
    factory = {"wrong_sni": lambda: hostile.wrong_sni(tls_lab.pki),
               "big_chain": lambda: hostile.big_chain(tls_lab.pki, tmp_path)}[server]
    with factory() as port:
        seen = check(port)

    assert (seen.outcome, seen.tls_reason) == (reach.TLS_ERROR, reason)
    assert words in specific_reach_error(seen, "localhost").message


def test_a_server_that_hangs_after_the_handshake_passes_the_pre_flight(tls_lab):
    with hostile.handshake_then_hang(tls_lab.pki) as port:
        seen = check(port)

    assert seen.ok and reach_error(seen, "localhost") is None
    assert specific_reach_error(seen, "localhost") is None


def test_a_refused_port_is_refused():
    seen = check(hostile.closed_port())

    assert seen.outcome == reach.REFUSED
    assert reach_error(seen, "localhost").message.endswith("refused the connection: nothing is listening there.")
