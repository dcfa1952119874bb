"""The pre-flight handshake (workers/tls/reach.py) against each hostile server: what it observes, and
the site owner's message it becomes. Real sockets, short timeouts (1 s a wait, 3 s in all)."""

from __future__ import annotations

import pytest

from tests import hostile
from workers.tls import reach
from workers.tls.errors import reach_error, specific_reach_error


def check(port: int) -> reach.Reach:
    return reach.check_tls("127.0.0.1", port, "localhost", timeout=1, total_s=3)


@pytest.mark.parametrize("server, outcome, code, words", [
    (hostile.tarpit, reach.SILENT, "timeout", "never answers the TLS handshake"),
    (hostile.blackhole, reach.CONNECT_TIMEOUT, "timeout", "the port is filtered or the server is down"),
    (hostile.reset, reach.RESET, "connection_failed", "then reset it before any TLS handshake"),
    (hostile.plain_http, reach.TLS_ERROR, "no_tls", "does not speak TLS (is it plain HTTP?)"),
    (hostile.garbage, reach.TLS_ERROR, "no_tls", "answered with another protocol"),
    (hostile.drip, reach.SLOW, "timeout", "never finished it: it answers far too slowly"),
])
def test_it_tells_each_tcp_level_hostility_apart(server, outcome, code, words):
    with server() as port:
        seen = check(port)

    assert seen.outcome == outcome, seen
    error = reach_error(seen, "localhost")
    assert error.code == code and words in error.message, error.message


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
