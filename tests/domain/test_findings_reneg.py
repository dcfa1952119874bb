"""Findings about renegotiation, told as a table of servers and verdicts."""

from __future__ import annotations

import pytest

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, assert_rows_cover, assert_verdict, row_id
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


@pytest.mark.parametrize("row", ROWS + NOT_TESTED_ROWS, ids=row_id)
def test_it_gives_each_reneg_rule_its_verdict(row: Row):
    assert_verdict(row)


def test_every_reneg_rule_has_a_row_where_it_fails_or_informs():
    assert_rows_cover("reneg", ROWS)
