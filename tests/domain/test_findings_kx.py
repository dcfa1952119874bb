"""Findings about key exchange (DH group and curve sizes), told as a table of servers and verdicts."""

from __future__ import annotations

from dataclasses import replace

from tests.domain.factories import make_facts
from tests.domain.finding_rows import Row, modern_plus, table_tests
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK, Check, PostQuantum

ROWS = [
    Row("kx.weak_dh", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1536)),
        "fail", "medium", "DH group 1536 bits"),
    Row("kx.weak_dh", make_facts(suites=modern_plus("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256")), "pass", "medium",
        "DH group size 2048 bits"),
    Row("kx.weak_ecdh", make_facts(suites=modern_plus("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", kx_bits=192,
                                                      curve="secp192r1")), "fail", "medium", "secp192r1 (192 bits)"),
    Row("kx.weak_ecdh", replace(make_facts(), curves=["X25519", "secp160r1"]), "fail", "medium", "secp160r1"),
    Row("kx.weak_ecdh", make_facts(), "pass", "medium", "X25519, prime256v1"),
    Row("kx.post_quantum", make_facts(post_quantum=PostQuantum(
        Check(OK), accepted=("X25519MLKEM768",), browser_choice="X25519MLKEM768", prefers_pq=True)),
        "pass", "info", "accepts X25519MLKEM768; prefers it even when the client lists X25519 first"),
    Row("kx.post_quantum", make_facts(post_quantum=PostQuantum(
        Check(BAD, detail="Accepts none of X25519MLKEM768"), rejected=("X25519MLKEM768",), draft_kyber=True)),
        "info", "info", "Accepts none of X25519MLKEM768; also the obsolete X25519Kyber768Draft00"),
]

NOT_TESTED_ROWS = [
    Row("kx.weak_ecdh",
        replace(make_facts(), curves=[], curves_check=Check(NOT_TESTED, reason="elliptic_curves error")),
        "not_tested", evidence="elliptic_curves error"),
    Row("kx.post_quantum", make_facts(), "not_tested", evidence="did not run"),
    Row("kx.post_quantum", make_facts(post_quantum=PostQuantum(Check(NOT_TESTED, reason="probe failed: refused"))),
        "not_tested", evidence="probe failed: refused"),
]


test_it_gives_each_rule_its_verdict, test_every_rule_has_a_row_where_it_fails_or_informs = table_tests(
    "kx", ROWS, NOT_TESTED_ROWS)
