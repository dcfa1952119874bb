"""Findings about protocol versions (SSL 2.0 to TLS 1.3), told as a table of servers and verdicts."""

from __future__ import annotations

from tests.domain.factories import make_facts
from tests.domain.finding_rows import ALL_TLS, MODERN, Row, table_tests

ROWS = [
    Row("proto.sslv2", make_facts(protocols=("SSLv2",) + MODERN), "fail", "critical", "DROWN"),
    Row("proto.sslv2", make_facts(), "pass", "critical", "SSL 2.0 refused"),
    Row("proto.sslv3", make_facts(protocols=("SSLv3",) + MODERN), "fail", "high", "POODLE: 2 CBC suites"),
    Row("proto.tls10", make_facts(protocols=ALL_TLS), "fail", "medium", "TLSv1.0 accepted (2 suites)"),
    Row("proto.tls11", make_facts(protocols=("TLSv1.1",) + MODERN), "fail", "medium", "TLSv1.1 accepted"),
    Row("proto.tls12_missing", make_facts(protocols=("TLSv1.0", "TLSv1.1")), "fail", "high", "best protocol: TLS 1.1"),
    Row("proto.tls12_missing", make_facts(protocols=("TLSv1.3",)), "info", "low", "TLSv1.2 refused"),
    Row("proto.tls13_missing", make_facts(protocols=("TLSv1.2",)), "fail", "low", "TLSv1.3 refused"),
]

NOT_TESTED_ROWS = [
    Row("proto.sslv2", make_facts(not_tested_protocols=("SSLv2",)), "not_tested", evidence="timed out"),
    Row("proto.tls10", make_facts(not_tested_protocols=("TLSv1.0",)), "not_tested", evidence="timed out"),
    Row("proto.tls13_missing", make_facts(protocols=("TLSv1.2",), not_tested_protocols=("TLSv1.3",)), "not_tested"),
    Row("proto.tls12_missing", make_facts(protocols=("TLSv1.0",), not_tested_protocols=("TLSv1.2", "TLSv1.3")),
        "not_tested", evidence="TLS 1.2: handshakes timed out"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "proto", ROWS, NOT_TESTED_ROWS)
