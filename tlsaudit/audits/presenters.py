"""Shape a finished audit for the report page (and, later, the PDF): plain dicts and lists."""

from collections import OrderedDict

from tlsaudit.audits.models import AuditFinding
from tlsaudit.audits.services import suite_row
from tlsaudit.domain.revocationwords import revocation_words
from tlsaudit.domain.scanfacts import NOT_TESTED, PROTOCOLS
from tlsaudit.domain.services import service_named

SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}
STATUS_ORDER = {"fail": 0, "not_tested": 1, "info": 2, "pass": 3}
CATEGORY_TITLES = OrderedDict([
    ("vuln", "Vulnerabilities"), ("proto", "Protocols"), ("cipher", "Cipher suites"), ("kx", "Key exchange"),
    ("cert", "Certificate"), ("hsts", "HSTS"), ("reneg", "Renegotiation"), ("tls", "TLS features"), ("perf", "Performance"), ("scan", "Scan"),
])


def present_report(audit) -> dict:
    """Everything from the audit's stored JSON (facts and report), parsed once: no query, and the
    same page for an audit whose findings/suites rows were never written (seeded history)."""
    report = audit.report or {}
    grade = report.get("grade", {})
    facts = audit.scan_facts()
    findings = finding_rows(report)
    return {
        "grade": grade,
        "scores_chart": _scores_chart(grade),
        "protocol_rows": _protocol_rows(facts),
        "suites_by_protocol": _suites_by_protocol(facts),
        "deployments": _deployments(facts),
        "finding_groups": _finding_groups(findings),
        "failing_count": sum(1 for f in findings if f.status == "fail"),
        "mozilla": report.get("mozilla", {}),
        "mozilla_guidelines": guidelines_of(report.get("mozilla", {})),
        "recommendations": report.get("recommendations", []),
        "predicted": report.get("predicted"),
        "snippets": ordered_snippets(report.get("snippets", {})),
        "target_profile": report.get("target_profile", "intermediate"),
        "facts": facts,
        "service": service_named(facts.service),
        "not_applicable": not_applicable_reasons(grade),
    }


def guidelines_of(mozilla: dict) -> str:
    """The guidelines version a stored verdict was judged on: audits before 6.0 did not say, and were 5.7."""
    versions = {entry.get("guidelines", "5.7") for entry in mozilla.values() if isinstance(entry, dict)}
    return versions.pop() if len(versions) == 1 else "5.7"


def not_applicable_reasons(grade: dict) -> list[str]:
    """Each reason once: the HSTS rules of an SMTP server share theirs (older stored grades have none)."""
    return list(dict.fromkeys(n["reason"] for n in grade.get("not_applicable") or []))


def finding_rows(report: dict) -> list:
    """Unsaved AuditFinding rows from the report's findings, as services.replace_normalised_rows writes them."""
    return [AuditFinding(finding_id=f["id"], severity=f["severity"], status=f["status"], title=f["title"][:200],
                         explanation=f.get("explanation", ""), evidence=f.get("evidence", ""),
                         reason=f.get("reason", "")) for f in report.get("findings", [])]


def _scores_chart(grade: dict) -> dict:
    scores = grade.get("scores", {})
    return {"labels": ["Protocol support (30 %)", "Key exchange (30 %)", "Cipher strength (40 %)"],
            "values": [scores.get("protocol", 0), scores.get("key_exchange", 0), scores.get("cipher", 0)]}


def _protocol_rows(facts) -> list[dict]:
    rows = []
    for name in reversed(PROTOCOLS):
        check = facts.protocols.get(name)
        status = check.status if check else "not_tested"
        good = name in ("TLSv1.2", "TLSv1.3")
        rows.append({"name": name, "status": status, "reason": check.reason if check else "not run",
                     "verdict": _protocol_verdict(status, good), "suites": len(facts.suites_for(name))})
    return rows


def _protocol_verdict(status: str, good: bool) -> str:
    if status == "not_tested":
        return "unknown"
    supported = status == "ok"
    return "good" if supported == good else ("bad" if supported else "warn")


def _suites_by_protocol(facts) -> list[dict]:
    rows = [suite_row(None, facts, s) for s in facts.suites]
    groups = []
    for name in reversed(PROTOCOLS):
        suites = [s for s in rows if s.protocol == name]
        if not suites:
            continue
        suites.sort(key=lambda s: (s.preference is None, s.preference or 0, s.name))
        pref = facts.preferences.get(name)
        groups.append({"protocol": name, "suites": suites,
                       "enforced": pref.enforced if pref else None, "pref_reason": pref.reason if pref else ""})
    return groups


def _deployments(facts) -> list[dict]:
    out = []
    for index, dep in enumerate(facts.certificates):
        out.append({"index": index, "chain": list(dep.chain), "trust": list(dep.trust),
                    "hostname_matches": dep.hostname_matches, "chain_complete": dep.chain_complete,
                    "chain_in_order": dep.chain_in_order, "chain_extra": dep.chain_extra, "ocsp": dep.ocsp_stapled, "must_staple": dep.must_staple,
                    "sct_count": dep.sct_count, "leaf": dep.leaf,
                    "revocation": dep.revocation.status if dep.revocation else NOT_TESTED,
                    "revocation_words": revocation_words(dep.revocation)})
    return out


def _finding_groups(findings) -> list[dict]:
    rows = sorted(findings, key=lambda f: (STATUS_ORDER.get(f.status, 9), SEVERITY_ORDER.get(f.severity, 9),
                                           f.finding_id))
    groups = OrderedDict((key, []) for key in CATEGORY_TITLES)
    for finding in rows:
        groups.setdefault(finding.finding_id.split(".")[0], []).append(finding)
    return [{"key": key, "title": CATEGORY_TITLES.get(key, key.title()), "findings": items,
             "failing": sum(1 for f in items if f.status == "fail")}
            for key, items in groups.items() if items]


SNIPPET_ORDER = ("nginx", "apache", "haproxy", "caddy")
ERROR_LABELS = {
    "dns": "Name does not resolve", "private_target": "Refused: not a public address", "refused": "Connection refused",
    "timeout": "Timed out", "no_tls": "No TLS on this port", "tls_handshake_failed": "TLS handshake failed",
    "sslv2_only": "Only SSL 2.0", "starttls_rejected": "STARTTLS refused", "connection_failed": "Connection failed",
    "invalid_target": "Invalid target", "worker_lost": "Interrupted",
    "address_busy": "Not started: our queue for its address was too long", "not_started": "Not started: no worker",
    "audits_per_target": "Refused: audited too often",
}


def ordered_snippets(snippets: dict) -> list[tuple[str, str]]:
    """nginx first: jsonb stores keys in its own order, so the dict's order is not ours."""
    known = [(name, snippets[name]) for name in SNIPPET_ORDER if name in snippets]
    return known + sorted((k, v) for k, v in snippets.items() if k not in SNIPPET_ORDER)


def progress_steps(progress: list[dict]) -> list[dict]:
    """One line per check with its latest status ("started" then "done" collapse into "done")."""
    latest: dict[str, dict] = {}
    for event in progress:
        latest.pop(event["name"], None)
        latest[event["name"]] = event
    return list(latest.values())


def error_label(code: str) -> str:
    return ERROR_LABELS.get(code, code.replace("_", " ").capitalize())
