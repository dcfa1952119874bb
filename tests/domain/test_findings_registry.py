"""The findings registry as a whole: one module per report category, the order findings come in,
the "not tested is never a pass" promise, and the shape a finding is stored in."""

from __future__ import annotations

import json
from pathlib import Path

from tests.domain.factories import NOW, make_facts
from tests.domain.finding_rows import ALL_TLS, blind_server, finding
from tlsaudit.audits.presenters import CATEGORY_TITLES
from tlsaudit.domain.findings import RULES, SEVERITIES, STATUSES, derive_findings
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED


def category(rule_id: str) -> str:
    return rule_id.split(".")[0]


def test_each_rule_lives_in_the_module_of_its_category():
    misplaced = {r.id: r.check.__module__ for r in RULES.values()
                 if r.check.__module__ != f"tlsaudit.domain.findings.{category(r.id)}"}
    assert misplaced == {}


def test_the_categories_are_the_groups_of_the_report_page():
    assert {category(rule_id) for rule_id in RULES} == set(CATEGORY_TITLES)


def test_each_category_has_its_own_test_module():
    """Each of those modules checks that every rule of its category has a row (see table_tests)."""
    here = Path(__file__).parent
    assert {c for c in CATEGORY_TITLES if not (here / f"test_findings_{c}.py").exists()} == set()


def test_it_never_passes_a_check_whose_input_was_not_measured():
    # Given a scan where nothing could be measured, when its findings are derived
    findings = derive_findings(blind_server(), now=NOW)
    # Then nothing passes (the timeout counter describes the scan itself) and every verdict says why
    passed = [f.id for f in findings if f.status == "pass" and f.id != "scan.suite_timeouts"]
    assert passed == []
    assert all(f.reason for f in findings if f.status == "not_tested")
    assert {f.status for f in findings} == {"not_tested", "pass"}


def test_it_sorts_failures_first_by_severity_then_not_tested_info_and_passes():
    facts = make_facts(protocols=ALL_TLS, hsts_max_age=None, heartbleed=BAD, early_data=NOT_TESTED)
    findings = derive_findings(facts, now=NOW)
    keys = [(STATUSES.index(f.status), SEVERITIES.index(f.severity)) for f in findings]
    assert keys == sorted(keys)
    assert findings[0].id == "vuln.heartbleed"
    assert [f.status for f in findings[:4]] == ["fail"] * 4


def test_a_finding_serialises_to_json_with_its_category():
    f = finding(make_facts(heartbleed=BAD), "vuln.heartbleed")
    data = json.loads(json.dumps(f.to_dict()))
    assert data["id"] == "vuln.heartbleed" and data["category"] == "vuln" and data["status"] == "fail"
    assert set(data) == {"id", "severity", "status", "title", "explanation", "evidence", "reason", "category"}
