"""Findings about cipher suites, told as a table of servers and verdicts."""

from __future__ import annotations

from tests.domain.factories import make_facts, preference
from tests.domain.finding_rows import Row, modern_plus, table_tests

ROWS = [
    Row("cipher.forward_secrecy", make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256"]),
        "fail", "high", "TLS_RSA_WITH_AES_128_GCM_SHA256 accepted on TLSv1.2"),
    Row("cipher.forward_secrecy", make_facts(suites=modern_plus("TLS_RSA_WITH_AES_256_GCM_SHA384")),
        "fail", "low", "some suites lack forward secrecy"),
    Row("cipher.forward_secrecy", make_facts(), "pass", "high", "all 6 accepted suites"),
    # Anonymous suites are ephemeral: not "forward secrecy only with some suites", only the anonymous finding.
    Row("cipher.forward_secrecy", make_facts(suites=modern_plus("TLS_ECDH_anon_WITH_AES_128_CBC_SHA")),
        "pass", "high", "all 6 accepted suites use ECDHE/DHE (and 1 anonymous suite(s), ephemeral too"),
    Row("cipher.anonymous", make_facts(suites=modern_plus("TLS_ECDH_anon_WITH_AES_128_CBC_SHA")),
        "fail", "critical", "TLS_ECDH_anon_WITH_AES_128_CBC_SHA"),
    Row("cipher.forward_secrecy",
        make_facts(suites=modern_plus("TLS_DH_anon_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256")),
        "fail", "low", "TLS_RSA_WITH_AES_128_GCM_SHA256 accepted"),
    Row("cipher.aead", make_facts(protocols=("TLSv1.2",), suites=["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"]),
        "fail", "medium", "no AEAD suite accepted"),
    Row("cipher.aead", make_facts(), "pass", "medium", "AEAD suites accepted"),
    Row("cipher.rc4", make_facts(suites=modern_plus("TLS_RSA_WITH_RC4_128_SHA")), "fail", "high",
        "TLS_RSA_WITH_RC4_128_SHA accepted on TLSv1.2"),
    Row("cipher.null", make_facts(suites=modern_plus("TLS_RSA_WITH_NULL_SHA256")), "fail", "critical", "NULL_SHA256"),
    Row("cipher.anonymous", make_facts(suites=modern_plus("TLS_DH_anon_WITH_AES_128_GCM_SHA256")),
        "fail", "critical", "TLS_DH_anon_WITH_AES_128_GCM_SHA256"),
    Row("cipher.export", make_facts(suites=modern_plus("TLS_RSA_EXPORT_WITH_RC4_40_MD5")), "fail", "critical",
        "EXPORT_WITH_RC4_40_MD5"),
    Row("cipher.weak_encryption", make_facts(suites=modern_plus("TLS_RSA_WITH_DES_CBC_SHA")), "fail", "critical",
        "TLS_RSA_WITH_DES_CBC_SHA"),
    Row("cipher.weak_encryption", make_facts(), "pass", "critical"),
    Row("cipher.server_preference",
        make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_CBC_SHA"),
                   preferences=[preference("TLSv1.2", "TLS_RSA_WITH_AES_128_CBC_SHA", enforced=False)]),
        "fail", "medium", "TLS 1.2 (client order wins"),
    Row("cipher.server_preference",
        make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_CBC_SHA"),
                   preferences=[preference("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")]),
        "pass", "medium", "server order enforced on TLS 1.2"),
    Row("cipher.server_preference", make_facts(), "pass", "medium", "only strong suites"),
]

NOT_TESTED_ROWS = [
    Row("cipher.rc4", make_facts(not_tested_protocols=("TLSv1.0",)), "not_tested", evidence="TLS 1.0"),
    Row("cipher.server_preference", make_facts(suites=modern_plus("TLS_RSA_WITH_AES_128_CBC_SHA")), "not_tested",
        evidence="preference not measured"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "cipher", ROWS, NOT_TESTED_ROWS)
