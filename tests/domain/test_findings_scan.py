"""Findings about the scan itself, told as a table of servers and verdicts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, assert_rows_cover, assert_verdict, row_id

ROWS = [
    Row("scan.suite_timeouts", replace(make_facts(), timed_out_suite_tests=25), "fail", "medium", "25 suite tests"),
    Row("scan.suite_timeouts", replace(make_facts(), timed_out_suite_tests=3), "pass", "medium"),
]


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_it_gives_each_scan_rule_its_verdict(row: Row):
    assert_verdict(row)


def test_every_scan_rule_has_a_row_where_it_fails_or_informs():
    assert_rows_cover("scan", ROWS)
