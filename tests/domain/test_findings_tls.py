"""Findings about TLS features (0-RTT, extended master secret, SNI, client certificates), told as a table of
servers and verdicts."""

from __future__ import annotations

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, table_tests
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, WithoutSni

ROWS = [
    Row("tls.early_data", make_facts(early_data=BAD), "info", "low", "0-RTT"),
    Row("tls.early_data", make_facts(protocols=("TLSv1.2",), early_data=BAD), "pass", "low", "TLS 1.3 not enabled"),
    Row("tls.extended_master_secret", make_facts(extended_master_secret=BAD), "fail", "low", "RFC 7627"),
    # #28 item 8: testssl.sh's "SNI mandatory", and a server asking for client certificates
    Row("tls.sni_required", make_facts(without_sni=WithoutSni("other", subject="CN=default.example")), "info",
        "info", "without SNI the server sends another certificate: CN=default.example"),
    Row("tls.sni_required", make_facts(without_sni=WithoutSni("refused", detail="unrecognized name")), "info",
        "info", "without SNI the handshake fails: unrecognized name"),
    Row("tls.sni_required", make_facts(), "pass", "info", "the same certificate is served without SNI"),
    Row("tls.client_auth", make_facts(client_auth="optional"), "info", "info", "goes on without one"),
    Row("tls.client_auth", make_facts(client_auth="required"), "info", "medium", "clients without one cannot"),
    Row("tls.client_auth", make_facts(), "pass", "info", "no client certificate requested"),
]

NOT_TESTED_ROWS = [
    Row("tls.early_data", make_facts(early_data=NOT_TESTED), "not_tested"),
    Row("tls.sni_required", make_facts(without_sni=None), "not_tested"),
    Row("tls.client_auth", make_facts(client_auth=None), "not_tested"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "tls", ROWS, NOT_TESTED_ROWS)
