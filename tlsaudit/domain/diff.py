"""What changed between two audits of a site, from their stored facts and reports. Pure.

`diff_audits(old, new)` takes each audit as a `Snapshot` (its facts dict and report dict, as
stored on the Audit row) and returns an `AuditDiff` with one field per category the history page
shows: protocols, suites, certificate, findings, grade (and the caps that moved it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tlsaudit.domain.scanfacts import OK, PROTOCOLS

FAILING = "fail"


@dataclass(frozen=True)
class Snapshot:
    facts: dict
    report: dict


@dataclass(frozen=True)
class CertSummary:
    subject: str
    issuer: str
    not_after: str          # ISO 8601, as stored
    key: str                # "RSA 2048", "EC 256"
    fingerprint_sha256: str
    serial_hex: str


@dataclass(frozen=True)
class FindingChange:
    id: str
    title: str
    severity: str
    old_status: str | None  # None = the rule did not report it then
    new_status: str | None


@dataclass(frozen=True)
class GradeChange:
    old: str
    new: str
    old_score: int | None
    new_score: int | None
    caps_added: list[dict] = field(default_factory=list)    # {"rule_id", "grade", "reason"}
    caps_removed: list[dict] = field(default_factory=list)

    @property
    def direction(self) -> str:
        return "down" if rank(self.new) > rank(self.old) else "up" if rank(self.new) < rank(self.old) else "same"


@dataclass(frozen=True)
class AuditDiff:
    protocols_added: list[str]
    protocols_removed: list[str]
    suites_added: list[tuple[str, str]]     # (protocol, IANA name)
    suites_removed: list[tuple[str, str]]
    certificate: tuple[CertSummary | None, CertSummary | None] | None  # (old, new) when replaced
    findings_appeared: list[FindingChange]
    findings_fixed: list[FindingChange]
    grade: GradeChange

    @property
    def changed(self) -> bool:
        return bool(self.protocols_added or self.protocols_removed or self.suites_added or self.suites_removed
                     or self.certificate or self.findings_appeared or self.findings_fixed
                     or self.grade.old != self.grade.new or self.grade.caps_added or self.grade.caps_removed)


GRADE_ORDER = ("A+", "A", "A-", "B", "C", "D", "E", "F", "T", "M")


def rank(grade: str) -> int:
    return GRADE_ORDER.index(grade) if grade in GRADE_ORDER else len(GRADE_ORDER)


def grades_at_or_below(best: str) -> tuple[str, ...]:
    """`best` and every worse grade ("B or worse": B, C, D, E, F, T, M), for the API's `grade_max`
    and the portfolio page's filter alike. GRADE_ORDER runs from best to worst, T and M after F."""
    return GRADE_ORDER[GRADE_ORDER.index(best):]


def diff_audits(old: Snapshot, new: Snapshot) -> AuditDiff:
    old_protocols, new_protocols = supported_protocols(old.facts), supported_protocols(new.facts)
    old_suites, new_suites = accepted_suites(old.facts), accepted_suites(new.facts)
    return AuditDiff(
        protocols_added=[p for p in PROTOCOLS if p in new_protocols - old_protocols],
        protocols_removed=[p for p in PROTOCOLS if p in old_protocols - new_protocols],
        suites_added=sorted(new_suites - old_suites),
        suites_removed=sorted(old_suites - new_suites),
        certificate=certificate_change(leaf(old.facts), leaf(new.facts)),
        findings_appeared=finding_changes(old.report, new.report, appeared=True),
        findings_fixed=finding_changes(old.report, new.report, appeared=False),
        grade=grade_change(old.report, new.report),
    )


def supported_protocols(facts: dict) -> set[str]:
    return {p for p, check in (facts.get("protocols") or {}).items() if check.get("status") == OK}


def accepted_suites(facts: dict) -> set[tuple[str, str]]:
    return {(s["protocol"], s["name"]) for s in facts.get("suites") or []}


def leaf(facts: dict) -> CertSummary | None:
    deployments = facts.get("certificates") or []
    if not deployments or not deployments[0].get("chain"):
        return None
    cert = deployments[0]["chain"][0]
    return CertSummary(subject=cert["subject"], issuer=cert["issuer"], not_after=cert["not_after"],
                       key=f"{cert['key_type']} {cert['key_bits']}", fingerprint_sha256=cert.get("fingerprint_sha256", ""),
                       serial_hex=cert.get("serial_hex", ""))


def certificate_change(old: CertSummary | None, new: CertSummary | None):
    """(old, new) when the leaf is another certificate: any identifying field differs."""
    return None if old == new else (old, new)


def finding_changes(old_report: dict, new_report: dict, *, appeared: bool) -> list[FindingChange]:
    """Findings failing now and not before (appeared), or failing before and not now (fixed)."""
    old, new = findings_by_id(old_report), findings_by_id(new_report)
    before, after = (old, new) if appeared else (new, old)
    changes = []
    for fid, finding in after.items():
        if finding["status"] == FAILING and before.get(fid, {}).get("status") != FAILING:
            was, now = old.get(fid, {}).get("status"), new.get(fid, {}).get("status")
            changes.append(FindingChange(id=fid, title=finding["title"], severity=finding["severity"],
                                         old_status=was, new_status=now))
    return sorted(changes, key=lambda c: c.id)


def findings_by_id(report: dict) -> dict[str, dict]:
    return {f["id"]: f for f in report.get("findings") or []}


def grade_change(old_report: dict, new_report: dict) -> GradeChange:
    old, new = old_report.get("grade") or {}, new_report.get("grade") or {}
    old_caps, new_caps = caps_by_rule(old), caps_by_rule(new)
    return GradeChange(
        old=old.get("grade", ""), new=new.get("grade", ""), old_score=old.get("score"), new_score=new.get("score"),
        caps_added=[new_caps[r] for r in sorted(new_caps.keys() - old_caps.keys())],
        caps_removed=[old_caps[r] for r in sorted(old_caps.keys() - new_caps.keys())],
    )


def caps_by_rule(grade: dict) -> dict[str, dict]:
    return {c["rule_id"]: c for c in grade.get("caps") or []}
