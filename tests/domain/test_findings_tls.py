"""Findings about TLS features (0-RTT, extended master secret), told as a table of servers and verdicts."""

from __future__ import annotations

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, table_tests
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED

ROWS = [
    Row("tls.early_data", make_facts(early_data=BAD), "info", "low", "0-RTT"),
    Row("tls.early_data", make_facts(protocols=("TLSv1.2",), early_data=BAD), "pass", "low", "TLS 1.3 not enabled"),
    Row("tls.extended_master_secret", make_facts(extended_master_secret=BAD), "fail", "low", "RFC 7627"),
]

NOT_TESTED_ROWS = [
    Row("tls.early_data", make_facts(early_data=NOT_TESTED), "not_tested"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "tls", ROWS, NOT_TESTED_ROWS)
