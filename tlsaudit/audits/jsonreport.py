"""The whole audit as one JSON object, for `manage.py audit --json`.

Its shape is published as docs/audit-report.schema.json (JSON Schema 2020-12) and a test
validates real audits against it. The first keys are the ones the CLI printed before (kept as
they were); the rest carry every fact the report shows. A check that did not run says
`"status": "not_tested"` with its reason, never a pass; one that means nothing for the service (HSTS
of an SMTP server) says `"status": "not_applicable"` with its reason.
"""

from __future__ import annotations

from tlsaudit.domain.ciphers import classify, strength_label
from tlsaudit.domain.revocationwords import NOT_RECORDED, revocation_words
from tlsaudit.domain.scanfacts import CHECK_NAMES, NOT_TESTED, PROTOCOLS, Check
from tlsaudit.domain.trustwords import trust_error_words

SCHEMA_ID = "https://tlsaudit.example/schemas/audit-report/1.json"
# Named checks that are vulnerabilities or protections, apart from session resumption.
_RESUMPTION = ("session_id_resumption", "session_ticket_resumption", "tls13_resumption")


def audit_json(facts, report, duration_s: float) -> dict:
    grade = report.grade
    return {
        "$schema": SCHEMA_ID,
        "host": facts.host, "port": facts.port, "service": facts.service, "ip": facts.ip,
        "grade": grade.grade, "grade_ignoring_trust": grade.grade_ignoring_trust, "score": grade.score,
        "scores": dict(grade.scores),
        "caps": [{"grade": c.grade, "reason": c.reason, "rule_id": c.rule_id} for c in grade.caps],
        "warnings": [w.message for w in grade.warnings],
        # HSTS and A+ of an SMTP server: neither passed nor untested, with why
        "not_applicable": [{"rule_id": n.rule_id, "reason": n.reason} for n in grade.not_applicable],
        "trust_issues": [{"kind": t.kind, "reason": t.reason} for t in grade.trust_issues],
        "findings": [{"id": f.id, "severity": f.severity, "title": f.title, "status": f.status,
                      "evidence": f.evidence} for f in report.findings],
        "mozilla": {name: {"compliant": v.get("compliant"), "issues": v.get("issues", {})}
                    for name, v in report.mozilla.items()},
        "best_profile": report.best_profile,
        "protocols": [p for p in facts.protocols if facts.supports(p)],
        "recommendations": [_recommendation(r) for r in report.recommendations],
        "predicted_grade": report.predicted.grade if report.predicted else None,
        "duration_s": round(duration_s, 2),
        # --- the whole report ---
        "started_at": facts.started_at.isoformat(),
        "scanner": facts.scanner,
        "rules_version": report.rules_version,
        "protocol_support": {p: _check(facts.protocols.get(p)) for p in PROTOCOLS},
        "cipher_suites": {p: _suites(facts, p) for p in reversed(PROTOCOLS) if facts.suites_for(p)},
        "key_exchange_groups": {"groups": list(facts.curves), "check": _check(facts.curves_check)},
        "post_quantum": post_quantum_json(facts.post_quantum),
        "certificates": [_deployment(d) for d in facts.certificates],
        "alpn": {"protocols": list(facts.alpn), "check": _check(facts.alpn_check)},
        "resumption": {name: _check(facts.check(name)) for name in _RESUMPTION},
        "hsts": _hsts(facts),
        "vulnerabilities": {name: {**_check(facts.check(name)), "title": CHECK_NAMES[name]}
                            for name in CHECK_NAMES if name not in _RESUMPTION},
        "client_simulation": client_simulation_json(facts.client_simulation),
        "target_profile": report.target_profile,
        "snippets": dict(report.snippets),
        "scan_errors": dict(facts.errors),
        "timed_out_suite_tests": facts.timed_out_suite_tests,
    }


def client_simulation_json(sims) -> dict:
    if sims is None:
        return {"status": NOT_TESTED, "reason": "not simulated (audits before client simulation existed)",
                "clients": []}
    return {"status": "ok", "reason": "", "clients": [
        {"client": c.client, "label": c.label, "protocol": c.protocol, "suite": c.suite, "group": c.group,
         "dh_bits": c.dh_bits, "error": c.error, "tested": c.tested, "recorded": c.recorded,
         "profile": "recorded here" if c.recorded else "from published lists", "modern": c.modern} for c in sims]}


def _check(check: Check | None) -> dict:
    check = check or Check(NOT_TESTED, reason="not run")
    out = {"status": check.status, "detail": check.detail, "reason": check.reason}
    if check.value is not None:
        out["value"] = check.value
    return out


def _recommendation(r) -> dict:
    return {"id": r.id, "title": r.title, "predicted_grade": r.predicted_grade, "kind": r.kind, "why": r.why,
            "change": r.change, "impact": r.impact, "fixes": list(r.fixes)}


def _suites(facts, protocol: str) -> dict:
    """In the server's order when it imposes one; by name otherwise (no order is implied then)."""
    pref = facts.preferences.get(protocol)
    order = list(pref.order) if pref and pref.enforced else []
    suites = sorted(facts.suites_for(protocol),
                    key=lambda s: (order.index(s.name) if s.name in order else len(order), "" if order else s.name))
    return {
        "server_order": pref.enforced if pref else None,
        "order_reason": pref.reason if pref else "not probed",
        "suites": [_suite(s) for s in suites],
    }


def _suite(s) -> dict:
    info = classify(s)
    return {"name": s.name, "openssl_name": s.openssl_name, "key_size": s.key_size, "kx": info.kx,
            "kx_type": s.kx_type, "kx_bits": s.kx_bits, "kx_curve": s.kx_curve,
            "forward_secrecy": info.is_forward_secret, "aead": info.is_aead, "strength": strength_label(info)}


def post_quantum_json(pq) -> dict:
    if pq is None:
        return {"ready": None, **_check(None), "reason": "not probed (audits before the probe existed)",
                "accepted": [], "rejected": [], "draft_kyber": None, "browser_choice": None, "prefers_pq": None}
    return {"ready": pq.ready, **_check(pq.check), "accepted": list(pq.accepted), "rejected": list(pq.rejected),
            "draft_kyber": pq.draft_kyber, "browser_choice": pq.browser_choice, "prefers_pq": pq.prefers_pq}


def _deployment(d) -> dict:
    return {
        "hostname_matches": d.hostname_matches,
        "chain_complete": d.chain_complete, "chain_in_order": d.chain_in_order,
        "chain_extra": None if d.chain_extra is None else list(d.chain_extra),
        "chain_has_anchor": d.chain_has_anchor, "chain_has_sha1": d.chain_has_sha1,
        "symantec_distrusted": d.symantec_distrusted,
        "trust": [{"store": t.store, "trusted": t.chain_trusted, "error": "" if t.chain_trusted else
                   trust_error_words(t.error)} for t in d.trust],
        "ocsp_stapled": _check(d.ocsp_stapled), "must_staple": d.must_staple,
        "sct_count": d.sct_count, "is_ev": d.is_ev,
        "revocation": revocation_json(d.revocation),
        "chain": [_certificate(c) for c in d.chain],
    }


def revocation_json(r) -> dict:
    """status good / revoked / unknown / not_tested; `why` (a NOT_CHECKED_WHY code) and `reason` say why not."""
    if r is None:
        return {"status": NOT_TESTED, "method": "", "source": "", "why": "", "reason": NOT_RECORDED,
                "revocation_reason": None, "revoked_at": None, "summary": NOT_RECORDED}
    return {"status": r.status, "method": r.method, "source": r.source, "why": r.why, "reason": r.reason,
            "revocation_reason": r.revocation_reason,
            "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None, "summary": revocation_words(r)}


def _certificate(c) -> dict:
    return {"subject": c.subject, "issuer": c.issuer, "serial_hex": c.serial_hex,
            "not_before": c.not_before.isoformat(), "not_after": c.not_after.isoformat(),
            "key_type": c.key_type, "key_bits": c.key_bits, "curve": c.curve, "rsa_exponent": c.rsa_exponent,
            "signature_hash": c.signature_hash, "san_dns": list(c.san_dns), "san_ip": list(c.san_ip),
            "is_ca": c.is_ca, "self_signed": c.self_signed, "fingerprint_sha256": c.fingerprint_sha256}


def _hsts(facts) -> dict:
    h = facts.hsts
    base = {"header": None, "max_age": None, "include_subdomains": False, "preload": False, "valid": None}
    if h is not None:
        base = {"header": h.header, "max_age": h.max_age, "include_subdomains": h.include_subdomains,
                "preload": h.preload, "valid": h.valid}
    return {**base, "check": _check(facts.hsts_check)}
