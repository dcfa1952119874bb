"""STARTTLS servers that lie, stall, flood or refuse (#18 item 3): each audit ends within its
deadline with an explained error, never a crash nor a hang, and grades nothing."""

from __future__ import annotations

import pytest
from aiosmtpd.controller import Controller

from tests.starttls import scripted
from tests.support import daemons
from workers.net.errors import CONNECTION_FAILED, TIMEOUT
from workers.net.reach_errors import NO_TLS, STARTTLS_REJECTED
from workers.tls.engine import run_scan

DEADLINE_S = 15.0


def audit(port: int, service: str = "smtp", **kwargs):
    return run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                    deadline_s=DEADLINE_S, service=service, **kwargs)


def assert_failed(outcome, code: str, *words: str) -> None:
    assert outcome.facts is None and outcome.error is not None
    assert outcome.error.code == code, outcome.error
    for word in words:
        assert word in outcome.error.message, outcome.error.message
    assert outcome.duration_s < DEADLINE_S


class _Accepting:
    async def handle_DATA(self, server, session, envelope):
        return "250 OK"


def test_it_says_so_when_an_smtp_server_does_not_offer_starttls():
    server = Controller(_Accepting(), hostname="127.0.0.1", port=daemons.free_port())   # no TLS context
    server.start()
    try:
        outcome = audit(server.port)
    finally:
        server.stop()

    assert_failed(outcome, STARTTLS_REJECTED, "did not offer STARTTLS", "Nothing was graded")


def test_it_says_so_when_an_ldap_server_refuses_starttls(tmp_path):
    with daemons.slapd(tmp_path / "slapd", None) as ports:     # no certificate: StartTLS fails
        outcome = audit(ports["ldap"], "ldap")

    assert_failed(outcome, STARTTLS_REJECTED, "refused the LDAP StartTLS operation", "result code")


def test_it_says_so_when_postgresql_has_ssl_off(tmp_path, service_tls):
    with daemons.postgres(tmp_path / "postgres", service_tls, ssl=False) as port:
        outcome = audit(port, "postgres")

    assert_failed(outcome, STARTTLS_REJECTED, "answered our SSLRequest with 'N'")


def test_a_server_that_agrees_to_starttls_then_sends_garbage_does_not_speak_tls():
    with scripted.scripted(scripted.garbage_after_starttls) as port:
        outcome = audit(port)

    assert_failed(outcome, NO_TLS, "agreed to start TLS", "not TLS")


def test_a_server_that_agrees_to_starttls_then_closes_fails_the_audit():
    with scripted.scripted(scripted.close_after_starttls) as port:
        outcome = audit(port)

    assert_failed(outcome, CONNECTION_FAILED, "closed it")


def test_a_server_that_agrees_to_starttls_then_resets_fails_the_audit():
    with scripted.scripted(scripted.reset_after_starttls) as port:
        outcome = audit(port)

    assert_failed(outcome, CONNECTION_FAILED, "reset it")


def test_bytes_pushed_after_the_go_ahead_are_refused():
    """They would be read as the start of the TLS session (the STARTTLS injection of RFC 3207 s. 5)."""
    with scripted.scripted(scripted.bytes_after_go_ahead) as port:
        outcome = audit(port)

    assert_failed(outcome, STARTTLS_REJECTED, "unexpected bytes after agreeing to start TLS")


def test_a_server_that_never_greets_ends_by_the_deadline():
    with scripted.scripted(scripted.never_greets) as port:
        outcome = audit(port)

    assert_failed(outcome, TIMEOUT, "never finished the clear-text exchange", "sent no greeting within 2 s")


def test_a_greeting_trickled_a_byte_at_a_time_cannot_hold_the_audit():
    """Each byte comes well within the per-read timeout: only the pre-flight's total limit stops it."""
    with scripted.scripted(scripted.trickles_its_greeting) as port:
        outcome = audit(port)

    assert_failed(outcome, TIMEOUT, "never finished the clear-text exchange", "greeting was still incomplete")


def test_an_endless_greeting_is_cut_at_64_kb():
    with scripted.scripted(scripted.floods_its_greeting) as port:
        outcome = audit(port)

    assert_failed(outcome, STARTTLS_REJECTED, "more than 65536 bytes")


@pytest.mark.parametrize("service", ["imap", "pop3", "ftp", "xmpp", "ldap", "postgres"])
def test_an_smtp_server_audited_as_another_service_is_refused_with_what_it_said(smtp_servers, service):
    outcome = audit(smtp_servers["smtp"], service)

    assert outcome.error is not None and outcome.error.code in (STARTTLS_REJECTED, TIMEOUT), outcome.error
    assert outcome.duration_s < DEADLINE_S
