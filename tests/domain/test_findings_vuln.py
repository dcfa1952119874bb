"""Findings about known attacks, from the suites and from the probes, told as a table of servers and verdicts."""

from __future__ import annotations

from tests.domain.factories import make_facts
from tests.domain.finding_rows import ALL_TLS, Row, modern_plus, table_tests
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, Check

ROWS = [
    Row("vuln.beast", make_facts(protocols=ALL_TLS), "fail", "low",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA accepted on TLSv1.0"),
    Row("vuln.lucky13", make_facts(protocols=ALL_TLS), "info", "info", "CBC_SHA accepted on TLSv1.0, TLSv1.1"),
    Row("vuln.lucky13", make_facts(), "pass", "info"),
    Row("vuln.sweet32", make_facts(suites=modern_plus("TLS_RSA_WITH_3DES_EDE_CBC_SHA")), "fail", "medium",
        "TLS_RSA_WITH_3DES_EDE_CBC_SHA accepted on TLSv1.2"),
    Row("vuln.logjam", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1024)),
        "fail", "high", "DH group 1024 bits"),
    Row("vuln.logjam", make_facts(suites=modern_plus("TLS_DHE_RSA_EXPORT_WITH_DES40_CBC_SHA")), "fail", "high",
        "DHE_RSA_EXPORT"),
    Row("vuln.logjam", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1536)),
        "pass", "high", "DH group size 1536 bits"),
    Row("vuln.heartbleed", make_facts(heartbleed=BAD), "fail", "critical", "CVE-2014-0160"),
    Row("vuln.ccs_injection", make_facts(ccs_injection=BAD), "fail", "critical", "CVE-2014-0224"),
    Row("vuln.robot", make_facts(robot=Check(BAD, value="VULNERABLE_STRONG_ORACLE")), "fail", "critical", "strong"),
    Row("vuln.robot", make_facts(robot=Check(BAD, value="VULNERABLE_WEAK_ORACLE")), "fail", "high", "weak oracle"),
    Row("vuln.robot", make_facts(robot=Check("ok", value="NOT_VULNERABLE_RSA_NOT_SUPPORTED")), "pass", "critical",
        "RSA key exchange not offered"),
    Row("vuln.crime", make_facts(compression=BAD), "fail", "high", "DEFLATE"),
    Row("vuln.fallback_scsv", make_facts(fallback_scsv=BAD), "fail", "low", "not honoured"),
    Row("vuln.fallback_scsv", make_facts(protocols=("TLSv1.3",), fallback_scsv=BAD), "pass", "low",
        "only one protocol version"),
]

NOT_TESTED_ROWS = [
    Row("vuln.beast", make_facts(not_tested_protocols=("SSLv3",)), "not_tested", evidence="SSL 3.0"),
    Row("vuln.heartbleed", make_facts(heartbleed=NOT_TESTED), "not_tested", evidence="probe failed"),
    Row("vuln.robot", make_facts(robot=NOT_TESTED), "not_tested"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "vuln", ROWS, NOT_TESTED_ROWS)
