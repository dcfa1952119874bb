"""Findings about performance (session resumption, HTTP/2), told as a table of servers and verdicts."""

from __future__ import annotations

from dataclasses import replace

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, table_tests
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, Check

ROWS = [
    Row("perf.session_resumption", make_facts(session_id_resumption=BAD, session_ticket_resumption=BAD),
        "fail", "info", "neither session IDs nor session tickets"),
    Row("perf.session_resumption", make_facts(session_id_resumption=BAD), "pass", "info", "session tickets"),
    Row("perf.http2", replace(make_facts(), alpn=["http/1.1"]), "fail", "info", "ALPN: http/1.1"),
    Row("perf.http2", make_facts(), "pass", "info", "h2"),
]

NOT_TESTED_ROWS = [
    Row("perf.session_resumption", make_facts(session_id_resumption=BAD, session_ticket_resumption=NOT_TESTED),
        "not_tested"),
    Row("perf.http2", replace(make_facts(), alpn=[], alpn_check=Check(NOT_TESTED, reason="ALPN probe failed")),
        "not_tested", evidence="ALPN probe failed"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "perf", ROWS, NOT_TESTED_ROWS)


def test_the_same_count_of_failed_resumptions_is_said_once():
    from tests.domain.finding_rows import finding
    from tlsaudit.domain.scanfacts import NOT_TESTED, Check

    facts = make_facts()
    checks = {**facts.checks, "session_id_resumption": Check(BAD, detail="0 of 5 resumptions succeeded"),
              "session_ticket_resumption": Check(BAD, detail="0 of 5 resumptions succeeded"),
              "tls13_resumption": Check(NOT_TESTED, reason="The server does not offer TLS 1.3.")}
    evidence = finding(replace(facts, checks=checks), "perf.session_resumption").evidence
    assert evidence.count("0 of 5") == 1 and evidence.endswith("(0 of 5 resumptions succeeded with each)")


def test_tls13_tickets_count_and_say_what_does_not_resume():
    """#28 item 3: a Go server resumes by ticket (TLS 1.2 and 1.3) and keeps no session-ID cache."""
    from tests.domain.finding_rows import finding
    from tlsaudit.domain.scanfacts import Check

    facts = make_facts()
    go_like = {**facts.checks, "session_id_resumption": Check(BAD, detail="0 of 2 resumptions succeeded")}
    assert finding(replace(facts, checks=go_like), "perf.session_resumption").evidence == (
        "resumption with session tickets and TLS 1.3 tickets; not with session IDs")
    only13 = Check(NOT_TESTED, reason="The server only speaks TLS 1.3: it resumes with TLS 1.3 tickets.")
    off13 = {**facts.checks, "session_id_resumption": only13, "session_ticket_resumption": only13,
             "tls13_resumption": Check(BAD, detail="0 of 2 resumptions with TLS 1.3 tickets (PSK) succeeded")}
    tls13_off = finding(replace(facts, checks=off13), "perf.session_resumption")
    assert (tls13_off.status, tls13_off.evidence) == (
        "fail", "TLS 1.3 tickets resumed no session (0 of 2 resumptions with TLS 1.3 tickets (PSK) succeeded)")
