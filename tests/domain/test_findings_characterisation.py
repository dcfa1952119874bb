"""Characterisation of the findings: their exact ids, severities, statuses, texts and order.

The rule tables check each verdict; this file pins everything a site owner reads, word for word,
for a few servers that between them make every rule speak. It was recorded before the rules were
split into a package by category, so the split provably changed nothing. A deliberate change of a
rule's text shows up here as a diff of `golden/findings.txt`; rewrite it with

    .venv/bin/python -m tests.domain.test_findings_characterisation

(and bump RULES_VERSION in audit_report.py, since stored findings then differ from re-derived ones).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.domain.factories import (
    NOW,
    ca_cert,
    deployment,
    ec_cert,
    make_facts,
    preference,
    rsa_cert,
    suite,
    suites_for,
)
from tests.domain.finding_rows import blind_server
from tests.domain.test_findings_cert import ENTRUST_G2, LETS_ENCRYPT, caa, under_root
from tlsaudit.domain.findings import RULES, derive_findings
from tlsaudit.domain.scanfacts import (
    BAD,
    CRL,
    PQ_GROUPS,
    REVOKED,
    Check,
    PostQuantum,
    Revocation,
    ScanFacts,
    WithoutSni,
)

GOLDEN = Path(__file__).parent / "golden" / "findings.txt"


def wrecked_server() -> ScanFacts:
    """Everything a 2005 server gets wrong at once, so the failing texts of most rules appear."""
    protocols = ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1")
    weak = ["TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLS_RSA_WITH_NULL_SHA",
            "TLS_RSA_EXPORT_WITH_RC4_40_MD5", "TLS_DH_anon_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_DES_CBC_SHA"]
    suites = [suite(n, p) for p in protocols[1:] for n in weak]
    suites += [suite("TLS_DHE_RSA_WITH_AES_128_CBC_SHA", p, kx_bits=1024) for p in protocols[1:]]
    suites += [suite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLSv1.0", kx_bits=192, curve="secp192r1")]
    leaf = rsa_cert(bits=512, exponent=1, signature_hash="md5", self_signed=True,
                    not_before=NOW - timedelta(days=900), not_after=NOW - timedelta(days=2), san=("old.example",))
    cert = deployment(leaf, hostname_matches=False, trusted=False, error="self signed certificate",
                      chain_complete=False, chain_has_sha1=True, symantec_distrusted=True, must_staple=True,
                      ocsp_stapled=Check(BAD))
    cert = replace(cert, chain_in_order=False, chain_extra=("CN=Stray CA",), chain_has_anchor=True, sct_count=0, is_ev=True,
                   revocation=Revocation(REVOKED, method=CRL, source="http://crl.old.example/ca.crl",
                                         revocation_reason="superseded", revoked_at=NOW - timedelta(days=30)))
    facts = make_facts(protocols=protocols, suites=suites, cert=cert, hsts_valid=False,
                       preferences=[preference(p, enforced=False) for p in protocols[1:]],
                       heartbleed=BAD, ccs_injection=BAD, robot=Check(BAD, value="VULNERABLE_WEAK_ORACLE"),
                       compression=BAD, fallback_scsv=BAD, secure_renegotiation=BAD, client_renegotiation=BAD,
                       extended_master_secret=BAD, session_id_resumption=BAD, session_ticket_resumption=BAD)
    no_pq = PostQuantum(Check(BAD, detail="Post-quantum key exchange needs TLS 1.3, which the server does not "
                                          "offer."), rejected=PQ_GROUPS)
    return replace(facts, curves=["secp160r1", "secp192r1"], alpn=["http/1.1"], timed_out_suite_tests=40,
                   post_quantum=no_pq, without_sni=WithoutSni("other", subject="CN=default.example"),
                   client_auth="required")


def servers() -> dict[str, ScanFacts]:
    return {
        "model A+ server": make_facts(),
        "nothing measured": blind_server(),
        "wrecked 2005 server": wrecked_server(),
        "RSA 1024 + ECDSA, certificate expiring in 5 days, HSTS 1 day": make_facts(
            certs=[deployment(rsa_cert(bits=1024, not_after=NOW + timedelta(days=5))),
                   deployment(ec_cert("secp224r1", 224))], hsts_max_age=86400),
        "TLS 1.3 only, ECDSA, 0-RTT, HSTS preloaded, long-lived pre-2020 certificate": make_facts(
            protocols=("TLSv1.3",), early_data=BAD, hsts_max_age=0,
            cert=deployment(ec_cert(not_before=NOW - timedelta(days=2500)),
                            chain=(ec_cert(not_before=NOW - timedelta(days=2500)), ca_cert(signature_hash="sha1", bits=1024)))),
        "some suites without forward secrecy, server order enforced, no HSTS, certificate not yet valid": make_facts(
            suites=suites_for(("TLSv1.2", "TLSv1.3")) + [suite("TLS_RSA_WITH_AES_128_CBC_SHA")],
            preferences=[preference("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")], robot=BAD,
            hsts_max_age=None, cert=rsa_cert(not_before=NOW + timedelta(days=1))),
        "Entrust chain first logged after Chrome's distrust date": make_facts(
            cert=under_root(ENTRUST_G2, sct=datetime(2025, 1, 3, tzinfo=timezone.utc))),
        "Let's Encrypt leaf under CAA that names only Sectigo": replace(
            make_facts(cert=rsa_cert(issuer=LETS_ENCRYPT)), caa=caa('0 issue "sectigo.com"')),
        "leaf of 2026-07 that also allows clientAuth, audited 2026-08": make_facts(
            cert=deployment(replace(rsa_cert(not_before=datetime(2026, 7, 1, tzinfo=timezone.utc)),
                                    ekus=("serverAuth", "clientAuth"))),
            started_at=datetime(2026, 8, 1, tzinfo=timezone.utc)),
    }


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def render() -> str:
    """The rule table, then each server's findings in output order: one tab-separated line each."""
    lines = ["# rules: id, severity, title, ok_title, explanation"]
    lines += ["\t".join(map(_cell, (r.id, r.severity, r.title, r.ok_title, r.explanation)))
              for r in sorted(RULES.values(), key=lambda r: r.id)]
    for name, facts in servers().items():
        lines += ["", f"# {name}: status, severity, id, title, evidence, reason (explanation as in the rules)"]
        for f in derive_findings(facts, now=NOW):
            assert f.explanation == RULES[f.id].explanation, f.id
            lines.append("\t".join(map(_cell, (f.status, f.severity, f.id, f.title, f.evidence, f.reason))))
    return "\n".join(lines) + "\n"


def test_every_finding_reads_and_sorts_exactly_as_recorded():
    assert render() == GOLDEN.read_text()


def test_the_recorded_servers_make_every_rule_fail_or_inform_at_least_once():
    """Otherwise a rule's failing text could change without this file noticing."""
    spoken = {line.split("\t")[2] for line in GOLDEN.read_text().splitlines()
              if line.startswith(("fail\t", "info\t"))}
    assert set(RULES) - spoken == set()


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(render())
    print(f"wrote {GOLDEN}")
