"""What the findings tests of every category share: a table row, how a row is checked, small builders.

Each `test_findings_<category>.py` tells its rules as a table of servers and the verdict each one
gets. A row changes one thing on the A+ model server of the factories and names the finding it
should produce; not-tested rows check that a check whose input was not measured says "not tested",
never "pass".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from tests.domain.factories import NOW, deployment, make_facts, suite, suites_for
from tlsaudit.domain.findings import RULES, Finding, derive_findings
from tlsaudit.domain.scanfacts import NOT_TESTED, PROTOCOLS, Check, ScanFacts

MODERN = ("TLSv1.2", "TLSv1.3")
ALL_TLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")
ALL_CHECKS_UNTESTED = ("heartbleed", "ccs_injection", "robot", "compression", "fallback_scsv", "secure_renegotiation",
                       "client_renegotiation", "early_data", "extended_master_secret", "session_id_resumption",
                       "session_ticket_resumption")


def blind_server() -> ScanFacts:
    """A scan where nothing could be measured: every rule must say why it did not test."""
    return replace(
        make_facts(not_tested_protocols=PROTOCOLS, protocols=(), hsts_tested=False, without_sni=None,
                   client_auth=None, **{name: NOT_TESTED for name in ALL_CHECKS_UNTESTED}),
        suites=[], certificates=[], curves=[], curves_check=Check(NOT_TESTED, reason="not run"),
        alpn=[], alpn_check=Check(NOT_TESTED, reason="not run"))


@dataclass
class Row:
    rule: str
    facts: ScanFacts
    status: str
    severity: str | None = None
    evidence: str = ""          # a piece of the evidence (or of the reason, for not_tested)


def row_id(row: Row) -> str:
    return f"{row.rule}-{row.status}"


def modern_plus(*names, protocol="TLSv1.2", **suite_kwargs):
    return suites_for(MODERN) + [suite(n, protocol, **suite_kwargs) for n in names]


def with_deployment(**changes) -> ScanFacts:
    return make_facts(cert=replace(deployment(), **changes))


def finding(facts: ScanFacts, rule_id: str) -> Finding:
    found = {f.id: f for f in derive_findings(facts, now=NOW)}
    assert rule_id in found, f"{rule_id} produced no finding"
    return found[rule_id]


def assert_verdict(row: Row) -> None:
    f = finding(row.facts, row.rule)
    assert f.status == row.status, f"{row.rule}: {f}"
    if row.severity:
        assert f.severity == row.severity, f"{row.rule}: {f}"
    assert row.evidence in (f.evidence if f.status != "not_tested" else f.reason), f
    assert f.title and f.explanation.count(".") >= 2


def table_tests(category: str, rows: list[Row], not_tested_rows: list[Row] = ()):
    """The two tests of a category module, assigned there by name so pytest collects them:
    each row gets its verdict, and every rule of the category has a row where it speaks."""
    @pytest.mark.parametrize("row", rows + list(not_tested_rows), ids=row_id)
    def gives_each_rule_its_verdict(row: Row):
        assert_verdict(row)

    def has_a_row_where_each_rule_fails_or_informs():
        assert_rows_cover(category, rows)
    return gives_each_rule_its_verdict, has_a_row_where_each_rule_fails_or_informs


def assert_rows_cover(category: str, rows: list[Row]) -> None:
    """Every rule of `category` has a row, and one where it fails or informs (its words a site owner reads)."""
    rules = {rule_id for rule_id in RULES if rule_id.split(".")[0] == category}
    assert {r.rule for r in rows} <= rules, "a row of another category"
    assert {r.rule for r in rows if r.status in ("fail", "info")} == rules
