"""Findings about the scan itself, told as a table of servers and verdicts."""

from __future__ import annotations

from dataclasses import replace

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, table_tests

ROWS = [
    Row("scan.suite_timeouts", replace(make_facts(), timed_out_suite_tests=25), "fail", "medium", "25 suite tests"),
    Row("scan.suite_timeouts", replace(make_facts(), timed_out_suite_tests=3), "pass", "medium"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "scan", ROWS)
