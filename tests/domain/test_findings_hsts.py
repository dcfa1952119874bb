"""Findings about HSTS, told as a table of servers and verdicts."""

from __future__ import annotations

from dataclasses import replace

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, table_tests
from tlsaudit.domain.scanfacts import Hsts

ROWS = [
    Row("hsts.missing", make_facts(hsts_max_age=None), "fail", "medium", "no Strict-Transport-Security header"),
    Row("hsts.missing", make_facts(), "pass", "medium", "max-age=31536000"),
    Row("hsts.invalid", make_facts(hsts_valid=False), "fail", "medium", 'max-age="soon"'),
    Row("hsts.disabled", make_facts(hsts_max_age=0), "fail", "medium", "max-age=0"),
    Row("hsts.short_max_age", make_facts(hsts_max_age=86400), "fail", "low", "max-age=86400 (1 days)"),
    Row("hsts.include_subdomains", make_facts(), "info", "info", "max-age=31536000"),
    Row("hsts.preload_ready", make_facts(), "info", "info", "missing: includeSubDomains, preload"),
    Row("hsts.preload_ready",
        replace(make_facts(), hsts=Hsts("max-age=63072000; includeSubDomains; preload", 63072000, True, True)),
        "pass", "info"),
]

NOT_TESTED_ROWS = [
    Row("hsts.missing", make_facts(hsts_tested=False), "not_tested", evidence="BUG_IN_SSLYZE"),
    Row("hsts.preload_ready", make_facts(hsts_tested=False), "not_tested"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "hsts", ROWS, NOT_TESTED_ROWS)
