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
    from tlsaudit.domain.scanfacts import Check

    facts = make_facts()
    checks = {**facts.checks, "session_id_resumption": Check(BAD, detail="0 of 5 resumptions succeeded"),
              "session_ticket_resumption": Check(BAD, detail="0 of 5 resumptions succeeded")}
    evidence = finding(replace(facts, checks=checks), "perf.session_resumption").evidence
    assert evidence.count("0 of 5") == 1 and evidence.endswith("(0 of 5 resumptions succeeded with each)")
