"""Findings about renegotiation, told as a table of servers and verdicts."""

from __future__ import annotations

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, table_tests
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED

ROWS = [
    Row("reneg.secure", make_facts(secure_renegotiation=BAD), "fail", "medium", "RFC 5746 not supported"),
    Row("reneg.secure", make_facts(secure_renegotiation=BAD, client_renegotiation=BAD), "fail", "critical",
        "insecure renegotiation"),
    Row("reneg.client_initiated", make_facts(client_renegotiation=BAD), "fail", "medium", "client-initiated"),
]

NOT_TESTED_ROWS = [
    Row("reneg.secure", make_facts(secure_renegotiation=NOT_TESTED), "not_tested"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "reneg", ROWS, NOT_TESTED_ROWS)
