"""Remediation predictions hold on a real server (issue #28, "Judged by").

Every graded server of the TLS lab is audited; each recommendation it gets is then applied, alone,
to a copy of that server's nginx configuration, the way its `change` text tells a site owner to
apply it, and the copy is rescanned: the rescan's grade must be the recommendation's
`predicted_grade` (a prediction of None, "nothing gradable left", must meet a server that no
audit can complete). One more copy per server gets every applicable recommendation at once and must
get `report.predicted` (the chained prediction). All copies run in one extra nginx.

A recommendation this file cannot apply fails the test with its id and change text, so a new
recommender cannot slip past; the only way out is EXEMPT (with the reason), for advice that the
lab's ServerSpec or its nginx/OpenSSL cannot express and whose predicted grade is, by construction,
the current one (asserted).
"""

from __future__ import annotations

import dataclasses
import re
import ssl
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

import pytest

from tests.support.tls_servers import ALL_TLS, FIXTURES, ServerSpec, TlsLab, require_nginx, start_lab
from tlsaudit.domain.audit_report import AuditReport, build_report
from tlsaudit.domain.remediation import Recommendation
from workers.tls.engine import ScanOutcome, run_scan

pytestmark = [pytest.mark.slow]

SCAN_THREADS = 3                        # 2 cores: sslyze is mostly waiting on sockets, 3 keeps both busy
GRADE_SERVERS = [name for name, spec in FIXTURES.items() if spec.role == "grade"]
ALL = "ALL (chained)"                   # the label of the copy with every recommendation applied
# A prediction of None means nothing gradable is left (no protocol or no suite): the rescan's audit fails.
NO_TLS = "error"
# What the lab's nginx reads: only these fields of a ServerSpec make a different server.
CONFIG_FIELDS = ("protocols", "ciphers", "key", "hsts", "leaf", "send_chain", "dh_group", "ecdh_curve",
                 "seclevel", "extra")

# id -> why this file cannot apply it. Each must predict the current grade (tested below).
EXEMPT = {
    "perf.ecdsa": "needs a second certificate/key pair next to the RSA one; a ServerSpec has exactly one",
    "perf.http2": "the change is `http2 on;` (nginx >= 1.25.1); the lab's nginx 1.22 takes http2 only as a "
                  "`listen` parameter, which ServerSpec (verbatim lines inside the server block) cannot set",
    "kx.post_quantum": "needs OpenSSL >= 3.5 for X25519MLKEM768; the lab's nginx runs OpenSSL 3.0 and, as the "
                       "change text itself warns, refuses to start on the unknown group name",
}


class HarnessError(Exception):
    """The change text does not say what this file expects: the mapping needs updating."""


# --- reading the change text -----------------------------------------------------------------

def grab(pattern: str, text: str) -> str:
    """The first group of `pattern` in a change text; a changed wording fails loudly, not silently."""
    match = re.search(pattern, text)
    if not match:
        raise HarnessError(f"pattern {pattern!r} not found in change text {text!r}")
    return match.group(1)


@cache
def iana_to_openssl() -> dict[str, str]:
    """IANA suite name -> OpenSSL name, as the lab's OpenSSL knows them (recommendations list IANA names,
    nginx's ssl_ciphers takes OpenSSL ones)."""
    listing = subprocess.run(["openssl", "ciphers", "-stdname", "ALL:COMPLEMENTOFALL:@SECLEVEL=0"],
                             check=True, capture_output=True, text=True).stdout
    return {parts[0]: parts[2] for parts in (line.split() for line in listing.splitlines()) if len(parts) > 2}


def openssl_names(iana_list: str) -> tuple[str, ...]:
    names = iana_list.split(", ")
    unknown = [n for n in names if n not in iana_to_openssl()]
    if unknown:  # includes a truncated list ("... and 3 more"): the harness cannot guess the rest
        raise HarnessError(f"no OpenSSL name for {unknown} (from {iana_list!r})")
    return tuple(iana_to_openssl()[n] for n in names)


def nginx_directives(text: str) -> tuple[str, ...]:
    """The `ssl_*` directives after "nginx: " in a change text, one per tuple item."""
    run = grab(r"nginx: ((?:ssl_[a-z_]+ [^;]+;\s*)+)", text)
    return tuple(f"{d.strip()};" for d in run.split(";") if d.strip())


# --- spec transforms: one per recommendation id, each doing what the change text says -----------

def with_protocol(protocols: tuple[str, ...], version: str) -> tuple[str, ...]:
    return tuple(v for v in ALL_TLS if v in protocols or v == version)


def plus(items: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    return items + tuple(m for m in more if m not in items)


PROTOCOLS_LINE = r"nginx: ssl_protocols ([^;]+);"


def protocols_line(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    """The change's `ssl_protocols` line, if it has one (a suite change that leaves a TLS 1.0-only server
    without a usable suite must also name it: the suites alone would take the site down)."""
    if not re.search(PROTOCOLS_LINE, rec.change):
        return spec
    return dataclasses.replace(spec, protocols=tuple(grab(PROTOCOLS_LINE, rec.change).split()))


def disable_legacy(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    # "nginx: ssl_protocols TLSv1.2 TLSv1.3": that one line, nothing else (the suites stay).
    grab(PROTOCOLS_LINE, rec.change)
    return protocols_line(spec, rec)


def enable_tls12(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    # "with ECDHE AEAD suites": they are TLS 1.2's suites, so first in the server's order (the old CBC
    # ones stay for TLS 1.0, which this change does not remove).
    added = openssl_names(grab(r"ECDHE AEAD suites: (.+?) \(", rec.change))
    return dataclasses.replace(spec, protocols=with_protocol(spec.protocols, "TLSv1.2"),
                               ciphers=plus(added, spec.ciphers))


def enable_tls13(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    grab(r"(nginx: add TLSv1\.3 to ssl_protocols)", rec.change)  # TLS 1.3 suites: OpenSSL's defaults = the profile's
    return dataclasses.replace(spec, protocols=with_protocol(spec.protocols, "TLSv1.3"))


def match_profile(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    listed = grab(r"Use the profile's list \(OpenSSL names\): (TLS 1\.3 defaults only|[^ ]+)\.", rec.change)
    ciphers = () if listed == "TLS 1.3 defaults only" else tuple(listed.split(":"))
    return protocols_line(dataclasses.replace(spec, ciphers=ciphers), rec)


def disable_insecure(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    # "(OpenSSL: add !aNULL:!eNULL:...)": appended to the cipher string as written.
    excluded = tuple(grab(r"\(OpenSSL: add ([^)]+)\)", rec.change).split(":"))
    return protocols_line(dataclasses.replace(spec, ciphers=spec.ciphers + excluded), rec)


def forward_secrecy(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    removed = set(openssl_names(grab(r"without forward secrecy: ([^.]+)\.", rec.change)))
    added = openssl_names(grab(r"Add ECDHE suites instead: ([^.]+)\.", rec.change)) \
        if "Add ECDHE suites instead" in rec.change else ()
    kept = tuple(c for c in spec.ciphers if c not in removed)
    return protocols_line(dataclasses.replace(spec, ciphers=plus(kept, added)), rec)


def curves(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    """As an owner reads the advice: the hybrid group's list with OpenSSL 3.5+, the one it names for older."""
    groups = grab(r"Set the groups to (\S+) \(nginx: ssl_ecdh_curve", rec.change)
    if ssl.OPENSSL_VERSION_INFO < (3, 5) and "X25519MLKEM768" in groups:
        groups = grab(r"use (\S+) there\)", rec.change)
    return dataclasses.replace(spec, ecdh_curve=groups)


def dh_2048(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    grab(r"(ffdhe2048)", rec.change)  # the lab's "dh2048" is RFC 7919 ffdhe2048, the group the text fetches
    return dataclasses.replace(spec, dh_group="dh2048")


def hsts_enable(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    return dataclasses.replace(spec, hsts=grab(r'add_header Strict-Transport-Security "([^"]+)" always', rec.change))


def hsts_preload(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    return dataclasses.replace(spec, hsts=grab(r"Send Strict-Transport-Security: (.+?) \(only", rec.change))


NEW_CERT_KEYS = {"RSA 2048-bit": "rsa2048", "ECDSA P-256": "ec256"}


def replace_certificate(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    kind = grab(r"Get a new (.+?) certificate for", rec.change)
    if kind not in NEW_CERT_KEYS:  # "RSA 2048-bit and ECDSA P-256": two certificates, one ServerSpec
        raise HarnessError(f"cannot issue {kind!r} as one lab certificate")
    grab(r"(serve it with its intermediate)", rec.change)
    # The lab CA is the scan's custom CA, i.e. "your own CA" or the stand-in for a public one.
    return dataclasses.replace(spec, leaf="good", key=NEW_CERT_KEYS[kind], send_chain=True)


def fix_chain(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    grab(r"('full chain' file)", rec.change)
    return dataclasses.replace(spec, send_chain=True)


def add_directives(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    # OCSP stapling on a lab certificate without an OCSP URL: nginx warns and staples nothing, as it
    # would for such a certificate anywhere; the grade must not move either way.
    return dataclasses.replace(spec, extra=plus(spec.extra, nginx_directives(rec.change)))


def session_resumption(spec: ServerSpec, rec: Recommendation) -> ServerSpec:
    grab(r"(keep session tickets off)", rec.change)
    return add_directives(dataclasses.replace(spec, extra=plus(spec.extra, ("ssl_session_tickets off;",))), rec)


SpecTransform = Callable[[ServerSpec, Recommendation], ServerSpec]
TRANSFORMS: dict[str, SpecTransform] = {
    "proto.disable_legacy": disable_legacy,
    "proto.enable_tls12": enable_tls12,
    "proto.enable_tls13": enable_tls13,
    "cipher.match_profile": match_profile,
    "cipher.disable_insecure": disable_insecure,
    "cipher.forward_secrecy": forward_secrecy,
    "kx.curves": curves,
    "kx.dh_2048": dh_2048,
    "hsts.enable": hsts_enable,
    "perf.hsts_preload": hsts_preload,
    "cert.replace": replace_certificate,
    "cert.fix_chain": fix_chain,
    "cert.ocsp_stapling": add_directives,
    "perf.session_resumption": session_resumption,
}


def needs_seclevel_zero(spec: ServerSpec) -> bool:
    """OpenSSL 3's default security level refuses these; the lab adds @SECLEVEL=0 only for them, so a copy
    whose change removed the last of them drops it, as the real server never had it."""
    offered = [c for c in spec.ciphers if not c.startswith("!")]
    return (bool({"TLSv1", "TLSv1.1"} & set(spec.protocols)) or spec.key == "rsa1024" or spec.dh_group == "dh1024"
            or any("NULL" in c or c.startswith(("AECDH", "ADH")) for c in offered))


def config(spec: ServerSpec) -> tuple:
    return tuple(getattr(spec, f) for f in CONFIG_FIELDS)


def apply(spec: ServerSpec, recs: list[Recommendation]) -> ServerSpec:
    for rec in recs:
        spec = TRANSFORMS[rec.id](spec, rec)
    return dataclasses.replace(spec, seclevel=0 if needs_seclevel_zero(spec) else None)


# --- audits, copies, rescans -------------------------------------------------------------------

@dataclass(frozen=True)
class Audit:
    outcome: ScanOutcome
    report: AuditReport


@dataclass(frozen=True)
class Copy:
    server: str
    label: str              # a recommendation id, or ALL
    predicted: str          # a grade, or NO_TLS
    spec: ServerSpec


@dataclass
class Plan:
    copies: list[Copy]
    problems: list[str]     # recommendations this file cannot apply: each one fails the test


@dataclass(frozen=True)
class Rescan:
    grade: str              # the grade, or NO_TLS when the audit failed
    notes: str              # caps, warnings and trust issues, or the error


def scan(lab: TlsLab, name: str) -> ScanOutcome:
    return run_scan("localhost", lab.port(name), ip="127.0.0.1", ca_file=str(lab.ca_file),
                    allow_private=True, network_timeout=3, max_retries=1)


def scan_all(lab: TlsLab, names: list[str]) -> dict[str, ScanOutcome]:
    with ThreadPoolExecutor(SCAN_THREADS) as pool:
        return dict(zip(names, pool.map(lambda n: scan(lab, n), names)))


@pytest.fixture(scope="module")
def audits(tls_lab) -> dict[str, Audit]:
    outcomes = scan_all(tls_lab, GRADE_SERVERS)
    failed = {n: o.error for n, o in outcomes.items() if o.error is not None}
    assert not failed, f"the original audits failed: {failed}"
    return {n: Audit(o, build_report(o.facts, o.mozilla)) for n, o in outcomes.items()}


def unapplicable(server: str, rec: Recommendation, why: str) -> str:
    return f"{server}: {rec.id} ({why}); change: {rec.change!r}"


def copies_of(server: str, audit: Audit) -> tuple[list[Copy], list[str]]:
    """One copy per applicable recommendation, plus the chained copy. That one also gets the performance
    advice (`report.predicted` chains the security changes only): a site owner applies everything, and
    performance advice must not move the grade. It leaves out EXEMPT advice (grade-neutral, tested) and
    is skipped when a change cannot be applied: it would be compared with a prediction that has it."""
    original = FIXTURES[server]
    copies, problems, applied = [], [], []
    for rec in audit.report.recommendations:
        if rec.id in EXEMPT:
            continue
        if rec.id not in TRANSFORMS:
            problems.append(unapplicable(server, rec, "no transform in TRANSFORMS and not EXEMPT"))
            continue
        try:
            changed = apply(original, [rec])
        except HarnessError as error:
            problems.append(unapplicable(server, rec, str(error)))
            continue
        if config(changed) == config(original):
            problems.append(unapplicable(server, rec, "the transform changed nothing"))
            continue
        applied.append(rec)
        copies.append(Copy(server, rec.id, rec.predicted_grade or NO_TLS, changed))
    if applied and len(applied) + sum(r.id in EXEMPT for r in audit.report.recommendations) == \
            len(audit.report.recommendations):
        predicted = audit.report.predicted.grade if audit.report.predicted else NO_TLS
        copies.append(Copy(server, ALL, predicted, apply(original, applied)))
    return copies, problems


@pytest.fixture(scope="module")
def plan(audits) -> Plan:
    copies, problems = [], []
    for server, audit in audits.items():
        more, trouble = copies_of(server, audit)
        copies += more
        problems += trouble
    return Plan(copies, problems)


def notes_of(outcome: ScanOutcome) -> tuple[str, str]:
    if outcome.error is not None:
        return NO_TLS, getattr(outcome.error, "message", str(outcome.error))
    g = build_report(outcome.facts, outcome.mozilla).grade
    items = [f"cap: {c.reason}" for c in g.caps] + [f"warn: {w.message}" for w in g.warnings]
    items += [f"trust: {t.reason}" for t in g.trust_issues]
    return g.grade, "; ".join(items) or "-"


@pytest.fixture(scope="module")
def rescans(plan) -> dict[tuple, Rescan]:
    """Every distinct changed configuration in one extra nginx, each scanned once (several
    recommendations lead to the same server, e.g. HSTS added to any plain row-1 server)."""
    require_nginx()
    unique = {config(c.spec): c.spec for c in plan.copies}
    specs = {f"copy{i:03d}": dataclasses.replace(s, name=f"copy{i:03d}") for i, s in enumerate(unique.values())}
    with start_lab(specs=specs) as lab:
        outcomes = scan_all(lab, list(specs))
    return {config(specs[n]): Rescan(*notes_of(o)) for n, o in outcomes.items()}


# --- the tests ---------------------------------------------------------------------------------

def table(rows: list[tuple[Copy, Rescan]]) -> str:
    head = f"{'server':26} {'recommendation':24} {'predicted':9} {'rescanned':9} caps / warnings of the rescan"
    lines = [f"{c.server:26} {c.label:24} {c.predicted:9} {r.grade:9} {r.notes}" for c, r in rows]
    return "\n".join([head, *lines])


def compare(plan: Plan, rescans: dict[tuple, Rescan], chained: bool) -> None:
    rows = [(c, rescans[config(c.spec)]) for c in plan.copies if (c.label == ALL) == chained]
    print(f"\n{table(rows)}")  # the whole table with -s, or beside a failure
    wrong = [(c, r) for c, r in rows if r.grade != c.predicted]
    assert rows, "no copies were rescanned"
    assert not wrong, f"{len(wrong)} of {len(rows)} rescans differ from the prediction:\n{table(wrong)}"


def test_the_seclevel_rule_reproduces_the_lab():
    """The copies drop @SECLEVEL=0 by this rule; it must say exactly what the fixtures say."""
    differ = [n for n, s in FIXTURES.items() if needs_seclevel_zero(s) != (s.seclevel == 0)]
    assert not differ, differ


def test_every_recommendation_can_be_applied_to_a_lab_copy(plan):
    assert not plan.problems, "recommendations this test cannot apply (add a transform or, for an " \
        "inexpressible grade-neutral change, an EXEMPT entry):\n" + "\n".join(plan.problems)


def test_exempt_recommendations_predict_no_grade_change(audits):
    wrong = [f"{server}: {rec.id} predicts {rec.predicted_grade}, the grade is {audit.report.grade.grade}"
             for server, audit in audits.items() for rec in audit.report.recommendations
             if rec.id in EXEMPT and rec.predicted_grade != audit.report.grade.grade]
    assert not wrong, "an EXEMPT recommendation must not move the grade (else it needs a transform):\n" + \
        "\n".join(wrong)


def test_each_change_alone_gets_its_predicted_grade(plan, rescans):
    compare(plan, rescans, chained=False)


def test_all_changes_together_get_the_chained_prediction(plan, rescans):
    compare(plan, rescans, chained=True)
