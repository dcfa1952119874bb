"""Everything an audit shows, derived from its stored inputs. Pure.

`build_report(facts, mozilla)` is what the Celery task, the CLI and `regrade` all call, so a
grade on the page, in `manage.py audit --json` and after a rules change come from one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tlsaudit.domain.findings import Finding, derive_findings
from tlsaudit.domain.grading import GradeResult, grade
from tlsaudit.domain.mozilla import (
    DATES_FAIL,
    GUIDELINES_VERSION,
    PROFILE_NAMES,
    best_profile,
    explain_issues,
    profile_report,
)
from tlsaudit.domain.remediation import Recommendation, grade_after, recommend
from tlsaudit.domain.scanfacts import ScanFacts
from tlsaudit.domain.snippets import config_snippets

RULES_VERSION = "2009r+tlsaudit.10"  # bump when grading, findings or recommendations change


@dataclass(frozen=True)
class AuditReport:
    grade: GradeResult
    findings: list[Finding]
    recommendations: list[Recommendation]
    predicted: GradeResult | None          # grade after every security recommendation
    mozilla: dict                          # profile -> {compliant, issues, explained, source}
    best_profile: str | None
    target_profile: str
    snippets: dict[str, str]               # server -> config for the target profile
    rules_version: str = RULES_VERSION

    def to_dict(self) -> dict:
        return {
            "grade": self.grade.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "recommendations": [r.to_dict() for r in self.recommendations],
            "predicted": self.predicted.to_dict() if self.predicted else None,
            "mozilla": self.mozilla,
            "best_profile": self.best_profile,
            "target_profile": self.target_profile,
            "snippets": self.snippets,
            "rules_version": self.rules_version,
        }


def build_report(facts: ScanFacts, mozilla: dict | None = None, *, target_profile: str = "intermediate",
                 now: datetime | None = None) -> AuditReport:
    """1. grade, 2. findings, 3. Mozilla verdicts (sslyze's when the scan ran it on the pinned
    guidelines, else ours: an audit judged on older guidelines is judged again on today's),
    4. recommendations towards `target_profile` with the grade predicted after all of them."""
    source = mozilla if _complete(mozilla) else profile_report(facts)
    verdicts = explain_mozilla(accept_custom_ca(source, facts), "sslyze" if _complete(mozilla) else "tlsaudit")
    recommendations = recommend(facts, target_profile)  # once: predicting from them is what predict_all does
    return AuditReport(
        grade=grade(facts, now=now),
        findings=derive_findings(facts, now=now),
        recommendations=recommendations,
        predicted=grade_after(facts, [r for r in recommendations if r.kind == "security"]),
        mozilla=verdicts,
        best_profile=best_profile(verdicts),
        target_profile=target_profile,
        snippets=config_snippets(target_profile, facts),
    )


def explain_mozilla(report: dict, source: str) -> dict:
    """Add one plain sentence per issue to each profile's verdict."""
    explained = {}
    for name in PROFILE_NAMES:
        entry = dict(report.get(name) or {"compliant": None, "issues": {}})
        issues = {k: v for k, v in (entry.get("issues") or {}).items() if k != "incomplete"}
        entry["explained"] = explain_issues(name, issues)
        entry["source"] = source
        entry["guidelines"] = GUIDELINES_VERSION
        explained[name] = entry
    return explained


def dated_by_custom_ca(report: dict, facts: ScanFacts) -> dict:
    """The organization's CA vouches for the chain and only the dates fail: path validation still
    fails, but for the dates, so the verdict says so (and is not explained as "get a public CA")."""
    dated = facts.trust_use_custom_ca and facts.certificates and all(
        any(t.store == "Custom CA" and (t.trusted or t.dates_only) for t in dep.trust) for dep in facts.certificates)
    if not dated:
        return report
    why = f"Certificate path validation failed for {facts.certificates[0].leaf.subject}: {DATES_FAIL}."
    return {name: {**entry, "issues": {k: (why if k == "certificate_path_validation" else v)
                                       for k, v in (entry.get("issues") or {}).items()}}
            for name, entry in report.items()}


def accept_custom_ca(report: dict, facts: ScanFacts) -> dict:
    """sslyze's checker validates against the public stores only. For an organization that
    supplied its own CA (internal PKI), a chain that CA validates passes, as in the grader."""
    trusted = facts.trust_use_custom_ca and facts.certificates and all(
        any(t.store == "Custom CA" and t.trusted for t in dep.trust) for dep in facts.certificates)
    if not trusted:
        return dated_by_custom_ca(report, facts)
    adjusted = {}
    for name, entry in report.items():
        issues = {k: v for k, v in (entry.get("issues") or {}).items() if k != "certificate_path_validation"}
        compliant = entry.get("compliant")
        if compliant is False and not {k for k in issues if k != "incomplete"}:
            compliant = None if "incomplete" in issues else True
        adjusted[name] = {**entry, "issues": issues, "compliant": compliant}
    return adjusted


def _complete(mozilla: dict | None) -> bool:
    return bool(mozilla) and all(name in mozilla and mozilla[name].get("compliant") is not None
                                 and mozilla[name].get("guidelines") == GUIDELINES_VERSION
                                 for name in PROFILE_NAMES)
