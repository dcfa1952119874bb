"""What to change on the server, and what grade each change would give.

Every `Recommendation` carries a pure transform (`apply(facts) -> ScanFacts`) that edits a copy
of the scan the way the server would look after the change: TLS 1.0/1.1 gone with their suites,
the DH group at 2048 bits, an HSTS header present... Grading the transformed facts gives the
predicted grade of that one change (`predicted_grade`) and, chained, of all of them
(`predict_all`). The transforms never touch the network: a prediction, not a rescan.

Each recommender below looks at the facts and returns a Recommendation or None; the order of
`_RECOMMENDERS` is the order shown (trust and critical issues first, performance last).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from tlsaudit.domain.ciphers import classify
from tlsaudit.domain.distrust import distrusts
from tlsaudit.domain.findings import Finding, derive_findings, is_trusted
from tlsaudit.domain.findings.cert import (
    LIFETIME_RULE_START,
    MAX_CERT_LIFETIME_DAYS,
    anchored_publicly,
    weak_intermediates,
)
from tlsaudit.domain.findings.registry import aware
from tlsaudit.domain.grading import GradeResult, grade
from tlsaudit.domain.mozilla import HYBRID_GROUP, Profile, get_profile, normalise_curve
from tlsaudit.domain.scanfacts import (
    BAD,
    NOT_TESTED,
    OK,
    REVOKED,
    Certificate,
    CertificateDeployment,
    Check,
    CipherSuite,
    Hsts,
    ScanFacts,
    TrustResult,
)
from tlsaudit.domain.services import is_http

HSTS_MAX_AGE = 31536000          # one year: above SSL Labs' 180 days, the preload list's minimum
HSTS_PRELOAD_MAX_AGE = 63072000  # two years, Mozilla's value
NEW_CERT_DAYS = 90               # what an ACME CA issues
PREDICTED = "predicted after the change"

Transform = Callable[[ScanFacts], ScanFacts]


@dataclass(frozen=True)
class Recommendation:
    id: str
    title: str                     # "Disable TLS 1.0 and TLS 1.1"
    why: str                       # plain words, naming the findings / grade caps it fixes
    change: str                    # the exact change to make
    kind: str                      # "security" | "performance"
    impact: str                    # what the visitor or the grade gains
    predicted_grade: str | None    # grade after applying only this change (None: cannot be graded)
    fixes: tuple[str, ...] = ()    # finding ids and grading rule ids it addresses
    transform: Transform = field(default=lambda f: f, compare=False, repr=False)

    def apply(self, facts: ScanFacts) -> ScanFacts:
        return self.transform(facts)

    def to_dict(self) -> dict:
        return {f.name: (list(getattr(self, f.name)) if f.name == "fixes" else getattr(self, f.name))
                for f in dataclasses.fields(self) if f.name != "transform"}


def recommend(facts: ScanFacts, target_profile: str = "intermediate") -> list[Recommendation]:
    """The changes that would improve this server, security first, each with its predicted grade."""
    ctx = _Context(facts, get_profile(target_profile), _safe_grade(facts),
                   {f.id: f for f in derive_findings(facts)})
    recs = []
    for recommender in _RECOMMENDERS:
        draft = recommender(ctx)
        if draft is not None:
            recs.append(_finish(ctx, draft))
    return sorted(recs, key=lambda r: r.kind != "security")  # stable: keeps the priority order inside


def grade_after(facts: ScanFacts, recommendations: list[Recommendation]) -> GradeResult | None:
    """The grade once every given recommendation is applied (in order); None if nothing gradable is left."""
    return _safe_grade(apply_all(facts, recommendations))


def apply_all(facts: ScanFacts, recommendations: list[Recommendation]) -> ScanFacts:
    for rec in recommendations:
        facts = rec.apply(facts)
    return facts


def predict_all(facts: ScanFacts, target_profile: str = "intermediate") -> tuple[ScanFacts, GradeResult | None]:
    """Apply every security recommendation together: (facts after, their grade)."""
    security = [r for r in recommend(facts, target_profile) if r.kind == "security"]
    after = apply_all(facts, security)
    return after, _safe_grade(after)


# --- plumbing ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Context:
    facts: ScanFacts
    profile: Profile
    grade: GradeResult | None
    findings: dict[str, Finding]

    def failed(self, *ids: str) -> list[Finding]:
        return [self.findings[i] for i in ids if i in self.findings and self.findings[i].status == "fail"]

    def caps(self, *rule_ids: str) -> list[str]:
        """Reasons of the grade caps / warnings / trust issues with these rule ids."""
        if not self.grade:
            return []
        g = self.grade
        items = [(c.rule_id, c.reason) for c in g.caps] + [(w.rule_id, w.message) for w in g.warnings]
        # A trust issue's reason repeats the why ("it has expired"): name the grade it removes.
        items += [(t.rule_id, f"the {t.kind} grade") for t in g.trust_issues]
        return list(dict.fromkeys(reason for rule_id, reason in items if rule_id in rule_ids))


@dataclass(frozen=True)
class _Draft:
    id: str
    title: str
    why: str
    change: str
    impact: str
    transform: Transform
    fixes: tuple[str, ...]
    kind: str = "security"


def _finish(ctx: _Context, d: _Draft) -> Recommendation:
    changed = d.transform(ctx.facts)
    after = _safe_grade(changed)
    d = dataclasses.replace(d, change=d.change + _protocols_line(ctx.facts, changed, d))
    # The why already says what is wrong: the grade's reasons and the findings' titles name what goes
    # away (the findings' evidence would say the why a third time).
    reasons = ctx.caps(*d.fixes) + [f.title for f in ctx.failed(*d.fixes)]
    why = d.why + (" Fixes: " + "; ".join(dict.fromkeys(reasons)) + "." if reasons else "")
    return Recommendation(id=d.id, title=d.title, why=why, change=d.change, kind=d.kind,
                          impact=_impact(ctx, d, after), predicted_grade=after.grade if after else None,
                          fixes=d.fixes, transform=d.transform)


def _protocols_line(before: ScanFacts, after: ScanFacts, d: _Draft) -> str:
    """A suite change that leaves a TLS 1.0/1.1-only server nothing it may keep turns TLS 1.2 (and 1.3)
    on in the prediction: the owner must be told the line that does it, or the change takes the site down
    (a rescan of such a server found no suite at all). Protocol recommendations say their own line."""
    turned_on = [v for v in ("TLSv1.2", "TLSv1.3") if after.supports(v) and not before.supports(v)]
    if not turned_on or d.id.startswith("proto."):
        return ""
    names = " ".join(v for v in ("TLSv1.2", "TLSv1.3") if after.supports(v))
    apache = " ".join(f"+{v}" for v in names.split())
    return (f" The remaining suites need {' and '.join(v.replace('v', ' ') for v in turned_on)}, which the server "
            f"does not offer now: allow them in the same change (nginx: ssl_protocols {names}; Apache: "
            f"SSLProtocol -all {apache}).")


def _impact(ctx: _Context, d: _Draft, after: GradeResult | None) -> str:
    """A draft's impact says "lifts the B cap"; when other caps keep the grade where it is, say which,
    so "grade after this change: B" beside it is not a contradiction."""
    if not (after and ctx.grade and after.caps and after.grade == ctx.grade.grade and "cap" in d.impact):
        return d.impact
    others = "; ".join(dict.fromkeys(c.reason for c in after.caps))
    return f"{d.impact} The grade stays {after.grade} until the other caps go too: {others}."


def _safe_grade(facts: ScanFacts) -> GradeResult | None:
    try:
        return grade(facts)
    except ValueError:  # no protocol or no suite left: nothing to grade
        return None


def _copy(facts: ScanFacts) -> ScanFacts:
    """A copy whose containers can be edited without touching the original."""
    return dataclasses.replace(
        facts, protocols=dict(facts.protocols), suites=list(facts.suites), preferences=dict(facts.preferences),
        curves=list(facts.curves), alpn=list(facts.alpn), certificates=list(facts.certificates),
        checks=dict(facts.checks), errors=dict(facts.errors))


def _names(items, limit: int = 40) -> str:
    items = list(dict.fromkeys(items))
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _these(n: int) -> str:
    return "this suite" if n == 1 else f"these {n} suites"


# --- transforms (pure: each returns a new ScanFacts) ------------------------------------------

def _disable_protocols(facts: ScanFacts, protocols: tuple[str, ...], profile: Profile) -> ScanFacts:
    f = _copy(facts)
    for p in protocols:
        if f.supports(p):
            f.protocols[p] = Check(BAD, detail=f"disabled ({PREDICTED})")
    f.suites = [s for s in f.suites if s.protocol not in protocols]
    f.preferences = {p: v for p, v in f.preferences.items() if p not in protocols}
    return _ensure_modern_protocol(f, profile, _had_modern(facts))


def _drop_suites(facts: ScanFacts, drop: Callable[[CipherSuite], bool], profile: Profile) -> ScanFacts:
    """Remove suites; a protocol left without suites is off; keep TLS 1.2 alive with the profile's suites."""
    f = _copy(facts)
    f.suites = [s for s in f.suites if not drop(s)]
    for p, c in list(f.protocols.items()):
        if c.status == OK and not f.suites_for(p):
            f.protocols[p] = Check(BAD, detail=f"no suite left ({PREDICTED})")
    f.preferences = {p: dataclasses.replace(v, order=tuple(n for n in v.order if n in {s.name for s in f.suites}))
                     for p, v in f.preferences.items()}
    return _ensure_modern_protocol(f, profile, _had_modern(facts))


def _ensure_modern_protocol(f: ScanFacts, profile: Profile, had_modern: bool = True) -> ScanFacts:
    """A server left with no modern version keeps TLS 1.2 with the profile's suites. One that never had
    TLS 1.2 or 1.3 is changed only when no version at all is left: it then needs the protocols line that
    turns TLS 1.2 on, which names TLS 1.3 as well (see _protocols_line), and both come on where the scan
    could test them."""
    if f.supports("TLSv1.2") or f.supports("TLSv1.3"):
        return f
    if not had_modern and any(f.supports(v) for v in ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1")):
        return f       # an old version keeps suites: the change leaves it running as it is
    f = _add_tls12_suites(f, profile)
    if had_modern or "TLSv1.3" not in profile.tls_versions or not f.protocol_tested("TLSv1.3"):
        return f
    return _enable_tls13(f, profile)


def _had_modern(facts: ScanFacts) -> bool:
    return facts.supports("TLSv1.2") or facts.supports("TLSv1.3")


def _ecdhe_aead_suites(profile: Profile) -> list[tuple[str, str]]:
    """(IANA, OpenSSL) ECDHE AEAD suites of the profile (intermediate's for modern, which has none)."""
    source = profile if profile.ciphers_iana else get_profile("intermediate")
    pairs = zip(source.ciphers_iana[:6], source.ciphers_openssl[:6])  # same six, same order in both lists
    return [(iana, ossl) for iana, ossl in pairs if iana.startswith("TLS_ECDHE_")]


def _add_tls12_suites(facts: ScanFacts, profile: Profile) -> ScanFacts:
    """Enable TLS 1.2 with the profile's ECDHE AEAD suites for the certificate types in use."""
    f = _copy(facts)
    auths = {"ECDSA" if d.leaf.key_type == "EC" else "RSA" for d in f.certificates} or {"RSA"}
    have = {(s.name, s.protocol) for s in f.suites}
    for iana, ossl in _ecdhe_aead_suites(profile):
        if any(f"_{a}_" in iana for a in auths) and (iana, "TLSv1.2") not in have:
            f.suites.append(CipherSuite(name=iana, openssl_name=ossl, protocol="TLSv1.2",
                                        key_size=256 if "256_GCM" in iana or "CHACHA" in iana else 128,
                                        kx_type="ECDH", kx_bits=253, kx_curve="X25519"))
    f.protocols["TLSv1.2"] = Check(OK, detail=PREDICTED)
    return f


def _enable_tls13(facts: ScanFacts, profile: Profile) -> ScanFacts:
    f = _copy(facts)
    f.protocols["TLSv1.3"] = Check(OK, detail=PREDICTED)
    # Every modern client would then negotiate TLS 1.3: what they got before no longer says what they get
    # (a rescan found the forward-secrecy and AEAD caps gone that the old simulation kept).
    f.client_simulation = None
    have = {s.name for s in f.suites_for("TLSv1.3")}
    for name in profile.ciphersuites:
        if name not in have:
            f.suites.append(CipherSuite(name=name, openssl_name=name, protocol="TLSv1.3",
                                        key_size=128 if "128" in name else 256,
                                        kx_type="ECDH", kx_bits=253, kx_curve="X25519"))
    return f


def _set_checks(facts: ScanFacts, **statuses: Check) -> ScanFacts:
    f = _copy(facts)
    f.checks.update(statuses)
    return f


def _good(detail: str = PREDICTED, value=None) -> Check:
    return Check(OK, detail=detail, value=value)


def _with_hsts(facts: ScanFacts, max_age: int, include_subdomains: bool, preload: bool) -> ScanFacts:
    f = _copy(facts)
    header = f"max-age={max_age}" + ("; includeSubDomains" if include_subdomains else "") + \
        ("; preload" if preload else "")
    f.hsts = Hsts(header=header, max_age=max_age, include_subdomains=include_subdomains, preload=preload)
    f.hsts_check = _good()
    return f


def _new_certificate(facts: ScanFacts, key_type: str) -> CertificateDeployment:
    """A fresh, publicly trusted 90-day certificate for the host, with its intermediate."""
    start = facts.started_at
    ec = key_type == "EC"
    leaf = Certificate(subject=f"CN={facts.host}", issuer="CN=Public CA", serial_hex="00",
                       not_before=start, not_after=start + timedelta(days=NEW_CERT_DAYS),
                       key_type="EC" if ec else "RSA", key_bits=256 if ec else 2048,
                       curve="secp256r1" if ec else None, signature_hash="sha256",
                       san_dns=(facts.host,), rsa_exponent=None if ec else 65537)
    issuer = Certificate(subject="CN=Public CA", issuer="CN=Public Root", serial_hex="01",
                         not_before=start - timedelta(days=365), not_after=start + timedelta(days=3 * 365),
                         key_type="EC" if ec else "RSA", key_bits=384 if ec else 2048,
                         curve="secp384r1" if ec else None, signature_hash="sha384" if ec else "sha256",
                         is_ca=True, rsa_exponent=None if ec else 65537)
    stores = ("Mozilla", "Apple", "Android", "Windows")
    return CertificateDeployment(
        chain=(leaf, issuer), trust=tuple(TrustResult(s, True) for s in stores), hostname_matches=True,
        chain_in_order=True, chain_extra=(), chain_complete=True, chain_has_anchor=False, chain_has_sha1=False,
        symantec_distrusted=False, ocsp_stapled=Check(BAD, detail="not stapled yet"), must_staple=False,
        sct_count=2)


def _replace_certificates(facts: ScanFacts, bad: Callable[[CertificateDeployment], bool]) -> ScanFacts:
    f = _copy(facts)
    f.certificates = [_new_certificate(f, d.leaf.key_type) if bad(d) else d for d in f.certificates]
    return f


# --- recommenders -----------------------------------------------------------------------------

def _cert_problems(f: ScanFacts, dep: CertificateDeployment) -> list[str]:
    """What is wrong with a deployed certificate that only a new certificate fixes, in this order: its dates,
    name and trust; its chain's signatures and CA; its keys and lifetime."""
    return _validity_problems(f, dep) + _chain_problems(dep) + _key_problems(dep)


def _validity_problems(f: ScanFacts, dep: CertificateDeployment) -> list[str]:
    leaf, now = dep.leaf, f.started_at
    problems = []
    # Expired / not yet valid without the date: the finding's evidence gives it, once.
    if leaf.not_after < now:
        problems.append("it has expired")
    elif (leaf.not_after - now).days < 30:
        problems.append(f"it expires on {leaf.not_after:%Y-%m-%d}")
    if leaf.not_before > now:
        problems.append("it is not valid yet")
    if not dep.hostname_matches:
        problems.append(f"it does not cover {f.host}")
    if leaf.self_signed:
        problems.append("it is self-signed")
    elif dep.trust and not is_trusted(dep, f) and dep.chain_complete is not False:
        problems.append("browsers do not trust its issuer")
    return problems


def _chain_problems(dep: CertificateDeployment) -> list[str]:
    problems = []
    if dep.chain_has_sha1:
        problems.append("its chain uses SHA-1 signatures")
    if any((c.signature_hash or "").lower() in ("md5", "md2") for c in dep.chain[:1]):
        problems.append(f"it is signed with {dep.leaf.signature_hash.upper()}")
    if dep.symantec_distrusted:
        problems.append("it chains to a distrusted Symantec root")
    for distrust in distrusts(dep):
        if distrust.applies and distrust.in_a_browser:
            problems.append(f"{distrust.entry.store} distrusts {distrust.entry.ca} certificates issued after "
                            f"{distrust.entry.after:%Y-%m-%d} (get the new one from another CA)")
    if dep.revocation is not None and dep.revocation.status == REVOKED:
        problems.append("its CA has revoked it")
    return problems


def _key_problems(dep: CertificateDeployment) -> list[str]:
    leaf, problems = dep.leaf, []
    if leaf.key_type == "RSA" and leaf.key_bits < 2048:
        problems.append(f"its RSA key has only {leaf.key_bits} bits")
    if leaf.key_type == "RSA" and leaf.rsa_exponent == 1:
        problems.append("its RSA key uses exponent 1")
    if leaf.key_type == "EC" and leaf.key_bits < 256:
        problems.append(f"its EC key has only {leaf.key_bits} bits")
    if dep.must_staple and leaf.ocsp_urls == ():
        problems.append("it demands a stapled OCSP response (must-staple) yet names no OCSP responder")
    for weak in weak_intermediates(dep):
        problems.append(f"its intermediate {weak.subject} has a {weak.key_bits}-bit {weak.key_type} key, which "
                        "OpenSSL clients refuse")
    if _lifetime_rejected(dep):
        problems.append(f"it is valid for {(leaf.not_after - leaf.not_before).days} days, more than the "
                        f"{MAX_CERT_LIFETIME_DAYS} browsers accept from a public CA")
    return problems


def _lifetime_rejected(dep: CertificateDeployment) -> bool:
    leaf = dep.leaf
    return ((leaf.not_after - leaf.not_before).days > MAX_CERT_LIFETIME_DAYS and anchored_publicly(dep)
            and aware(leaf.not_before) >= LIFETIME_RULE_START)


def _rec_certificate(ctx: _Context) -> _Draft | None:
    problems = {id(d): _cert_problems(ctx.facts, d) for d in ctx.facts.certificates}
    broken = [d for d in ctx.facts.certificates if problems[id(d)]]
    if not broken:
        return None
    only_expiry = all(all("expire" in p for p in problems[id(d)]) for d in broken)
    details = "; ".join(f"{d.leaf.subject}: {', '.join(problems[id(d)])}" for d in broken)
    kinds = sorted({"ECDSA P-256" if d.leaf.key_type == "EC" else "RSA 2048-bit" for d in broken})
    return _Draft(
        id="cert.replace",
        title="Renew the certificate" if only_expiry else "Replace the certificate",
        why=f"Browsers warn visitors or will soon: {details}.",
        change=(f"Get a new {' and '.join(kinds)} certificate for {ctx.facts.host} from "
                f"{_issuer_to_ask(ctx.facts, broken)}, SHA-256 signed, and serve it with its intermediate certificates."),
        impact="Visitors stop seeing certificate warnings; the T/M grade goes away.",
        transform=lambda f: _replace_certificates(f, lambda d: bool(_cert_problems(f, d))),
        fixes=("cert.expired", "cert.not_yet_valid", "cert.expires_soon", "cert.hostname_mismatch",
               "cert.untrusted", "cert.self_signed", "cert.sha1", "cert.md5", "cert.symantec", "cert.rsa_weak",
               "cert.rsa_exponent_1", "cert.ec_weak", "trust.expired", "trust.not_yet_valid",
               "trust.hostname_mismatch", "trust.untrusted", "trust.self_signed", "trust.sha1",
               "trust.symantec", "cap.md5_signature", "cap.rsa_exponent_1", "cert.revoked", "trust.revoked",
               "cert.lifetime", "cert.weak_intermediate", "cert.must_staple", "cert.distrusted_after",
               "trust.distrusted_after"))


def _issuer_to_ask(f: ScanFacts, broken: list[CertificateDeployment]) -> str:
    """Your own CA when it already vouches for every broken chain (only the dates or the name are
    wrong): sending the user to a public CA would be a different project, not a renewal."""
    if f.trust_use_custom_ca and all(any(t.store == "Custom CA" and (t.trusted or t.dates_only) for t in d.trust)
                                     for d in broken):
        return ("your own CA (the custom CA set for this site, which vouches for the current one) "
                "and automate its renewal")
    return "a public CA (e.g. Let's Encrypt via an ACME client that renews automatically)"


def _rec_chain(ctx: _Context) -> _Draft | None:
    deps = [d for d in ctx.facts.certificates
            if d.chain_complete is False or d.chain_in_order is False or d.chain_extra]
    if not deps:
        return None
    incomplete = any(d.chain_complete is False for d in deps)
    extra = [name for d in deps for name in d.chain_extra or ()]

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        f.certificates = [dataclasses.replace(d, chain_complete=True if d.chain_complete is False else d.chain_complete,
                                              chain_in_order=True if d.chain_in_order is False else d.chain_in_order,
                                              chain_extra=() if d.chain_extra else d.chain_extra,
                                              trust=tuple(dataclasses.replace(t, trusted=True, error="")
                                                          if t.store == "Mozilla" and d.chain_complete is False
                                                          else t for t in d.trust))
                          for d in f.certificates]
        return f
    return _Draft(
        id="cert.fix_chain", title="Serve the complete certificate chain, in order",
        why=_chain_why(incomplete, extra),
        change=("Configure the server with the 'full chain' file from your CA: the leaf certificate first, then "
                "each intermediate, and no root (nginx: ssl_certificate fullchain.pem; Apache: "
                "SSLCertificateFile with the chain appended)"
                + (f"; remove {'; '.join(extra)} from the file." if extra else ".")),
        impact=("Every client can verify the certificate; lifts the B cap." if incomplete else
                "Strict clients can verify the certificate, and every handshake is smaller."),
        transform=fix, fixes=("cert.chain_incomplete", "cert.chain_order", "cert.chain_extra", "cap.incomplete_chain"))


def _chain_why(incomplete: bool, extra: list[str]) -> str:
    if incomplete:
        return "Some clients (mobile apps, curl, API clients) cannot verify the certificate without its intermediates."
    if extra:
        return (f"The chain carries {'a certificate' if len(extra) == 1 else f'{len(extra)} certificates'} that no client needs ({'; '.join(extra)}); strict clients "
                "may stop at it, and every handshake sends its bytes.")
    return "The certificates are sent out of order; browsers reorder them, strict clients may not."


def _rec_named_check(check: str, rec_id: str, title: str, why: str, change: str, impact: str,
                     fixes: tuple[str, ...], value=None) -> Callable[[_Context], _Draft | None]:
    def recommender(ctx: _Context) -> _Draft | None:
        if ctx.facts.check(check).status != BAD:
            return None
        return _Draft(id=rec_id, title=title, why=why, change=change, impact=impact, fixes=fixes,
                      transform=lambda f: _set_checks(f, **{check: _good(value=value)}))
    return recommender


def _rec_robot(ctx: _Context) -> _Draft | None:
    if ctx.facts.check("robot").status != BAD:
        return None
    rsa = [s.name for s in ctx.facts.suites if classify(s).kx == "RSA"]
    p = ctx.profile

    def fix(f: ScanFacts) -> ScanFacts:
        f = _drop_suites(f, lambda s: classify(s).kx == "RSA", p)
        return _set_checks(f, robot=_good(value="NOT_VULNERABLE_RSA_NOT_SUPPORTED"))
    return _Draft(
        id="vuln.robot", title="Disable RSA key exchange (ROBOT)",
        why="The server's RSA key exchange leaks a padding oracle that lets attackers decrypt traffic.",
        change=(f"Remove {_these(len(set(rsa)))} with RSA key exchange: {_names(rsa)}; and update "
                "the TLS stack or load-balancer firmware."),
        impact="Removes the F grade.", transform=fix, fixes=("vuln.robot", "cap.robot"))


def _rec_disable_old_protocols(ctx: _Context) -> _Draft | None:
    f = ctx.facts
    p = ctx.profile
    old = tuple(v for v in ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1") if f.supports(v) and v not in p.tls_versions)
    if not old:
        return None
    pretty = {"SSLv2": "SSL 2.0", "SSLv3": "SSL 3.0", "TLSv1.0": "TLS 1.0", "TLSv1.1": "TLS 1.1"}
    if set(old) & {"TLSv1.0", "TLSv1.1"} and not set(old) & {"SSLv2", "SSLv3"}:
        title = "Disable TLS 1.0 and TLS 1.1"
    else:
        names = [pretty[v] for v in old]
        title = "Disable " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])
    n = sum(len(f.suites_for(v)) for v in old)
    keep_list = [v.replace("TLSv1.0", "TLSv1") for v in p.tls_versions]
    keep = " ".join(keep_list)
    turned_on = _versions_turned_on(f, p)
    also = (f" The same line turns on {' and '.join(v.replace('v', ' ') for v in turned_on)}, which the server "
            "does not offer now (TLS 1.3 needs OpenSSL 1.1.1 or later)." if turned_on else "")
    return _Draft(
        id="proto.disable_legacy", title=title,
        why=(f"{', '.join(pretty[v] for v in old)} {'are' if len(old) > 1 else 'is'} deprecated and weaker than "
             "TLS 1.2; every current browser speaks TLS 1.2 or 1.3."),
        change=(f"Allow only {' and '.join(keep_list)} (nginx: ssl_protocols {keep}; Apache: SSLProtocol -all "
                f"{' '.join('+' + v.replace('TLSv1.0', 'TLSv1') for v in p.tls_versions)}). This also removes "
                f"the {n} suite entries accepted on the old versions.{also}"),
        impact=(f"Lifts the grade cap. Clients older than the {p.name} profile's oldest supported ones "
                f"({', '.join(p.oldest_clients[:4])}, ...) can no longer connect."),
        transform=lambda facts: _allow_only_profile_versions(facts, old, p),
        fixes=("proto.sslv2", "proto.sslv3", "proto.tls10", "proto.tls11", "vuln.beast", "cap.sslv2",
               "cap.sslv3", "cap.sslv3_only", "cap.poodle_ssl3", "cap.tls10_11") + _fixes_of_turning_on(turned_on))


def _versions_turned_on(f: ScanFacts, p: Profile) -> tuple[str, ...]:
    """The profile's modern versions the server lacks, where the scan could test them: the change's
    one protocols line ("ssl_protocols TLSv1.2 TLSv1.3") turns them on as it turns the old ones off."""
    return tuple(v for v in ("TLSv1.2", "TLSv1.3") if v in p.tls_versions and not f.supports(v)
                 and f.protocol_tested(v))


def _fixes_of_turning_on(versions: tuple[str, ...]) -> tuple[str, ...]:
    fixes = {"TLSv1.2": ("proto.tls12_missing", "cap.no_tls12"), "TLSv1.3": ("proto.tls13_missing", "warn.no_tls13")}
    return tuple(i for v in versions for i in fixes[v])


def _allow_only_profile_versions(facts: ScanFacts, old: tuple[str, ...], p: Profile) -> ScanFacts:
    turned_on = _versions_turned_on(facts, p)
    f = _disable_protocols(facts, old, p)
    if "TLSv1.2" in turned_on:
        f = _add_tls12_suites(f, p)
    return _enable_tls13(f, p) if "TLSv1.3" in turned_on else f


def _rec_enable_tls12(ctx: _Context) -> _Draft | None:
    f = ctx.facts
    if f.supports("TLSv1.2") or "TLSv1.2" not in ctx.profile.tls_versions or not f.protocol_tested("TLSv1.2"):
        return None
    suites = [i for i, _ in _ecdhe_aead_suites(ctx.profile)]
    return _Draft(
        id="proto.enable_tls12", title="Enable TLS 1.2",
        why="Without TLS 1.2 (or 1.3) the grade is capped at C and modern clients fall back to deprecated versions.",
        change=f"Enable TLSv1.2 with ECDHE AEAD suites: {_names(suites)} (upgrade the TLS library if it lacks them).",
        impact="Modern security for every client; lifts the C cap.",
        transform=lambda facts: _add_tls12_suites(facts, ctx.profile), fixes=("proto.tls12_missing", "cap.no_tls12"))


def _rec_enable_tls13(ctx: _Context) -> _Draft | None:
    f = ctx.facts
    if f.supports("TLSv1.3") or not f.protocol_tested("TLSv1.3"):
        return None
    return _Draft(
        id="proto.enable_tls13", title="Enable TLS 1.3",
        why="Without TLS 1.3 the best possible grade is A-, and every new connection costs an extra round trip.",
        change=(f"Enable TLSv1.3 with {', '.join(ctx.profile.ciphersuites)} (OpenSSL 1.1.1+; nginx: add TLSv1.3 "
                "to ssl_protocols; Apache: +TLSv1.3)."),
        impact=("Removes the A- warning. TLS 1.3 completes a new handshake in one round trip instead of two; in our "
                "loopback measurements its handshakes were about 20 % faster than TLS 1.2's with less server CPU."),
        transform=lambda facts: _enable_tls13(facts, ctx.profile), fixes=("proto.tls13_missing", "warn.no_tls13"))


def _insecure(s: CipherSuite) -> bool:
    i = classify(s)
    return i.is_null or i.is_anonymous or i.is_export or i.is_rc4 or i.security_bits < 112


def _rec_insecure_suites(ctx: _Context) -> _Draft | None:
    bad = [s.name for s in ctx.facts.suites if _insecure(s)]
    if not bad:
        return None
    return _Draft(
        id="cipher.disable_insecure", title="Remove broken cipher suites",
        why="NULL, anonymous, EXPORT, RC4 and DES suites can be broken or bypassed outright.",
        change=f"Remove {_these(len(set(bad)))}: {_names(bad)} (OpenSSL: add !aNULL:!eNULL:!EXPORT:!RC4:!DES).",
        impact="Removes F-level and RC4 caps.",
        transform=lambda f: _drop_suites(f, _insecure, ctx.profile),
        fixes=("cipher.null", "cipher.anonymous", "cipher.export", "cipher.rc4", "cipher.weak_encryption",
               "vuln.logjam", "cap.export", "cap.weak_cipher", "cap.anon", "cap.rc4_only", "cap.rc4",
               "cap.rc4_tls11"))


def _rec_64bit(ctx: _Context) -> _Draft | None:
    if "TLS_RSA_WITH_3DES_EDE_CBC_SHA" in ctx.profile.ciphers_iana:
        return None  # the old profile keeps 3DES for IE8/XP on purpose
    bad = [s.name for s in ctx.facts.suites if classify(s).is_64bit_block and not _insecure(s)]
    if not bad:
        return None
    return _Draft(
        id="cipher.disable_64bit", title="Remove 3DES and other 64-bit block ciphers",
        why="64-bit block ciphers leak data on long connections (SWEET32).",
        change=f"Remove {_these(len(set(bad)))}: {_names(bad)} (OpenSSL: add !3DES:!IDEA).",
        impact="Lifts the C cap.",
        transform=lambda f: _drop_suites(f, lambda s: classify(s).is_64bit_block, ctx.profile),
        fixes=("vuln.sweet32", "cap.sweet32"))


def _rec_forward_secrecy(ctx: _Context) -> _Draft | None:
    infos = [classify(s) for s in ctx.facts.suites]
    non_fs = [i.name for i in infos if not i.is_forward_secret and i.protocol != "TLSv1.3"]
    if not non_fs:
        return None
    p = ctx.profile
    has_fs = any(i.is_forward_secret for i in infos)
    adds = [iana for iana, _ in _ecdhe_aead_suites(p)]

    def fix(f: ScanFacts) -> ScanFacts:
        f = _drop_suites(f, lambda s: not classify(s).is_forward_secret and s.protocol != "TLSv1.3", p)
        return f if any(classify(s).is_forward_secret for s in f.suites) else _add_tls12_suites(f, p)
    change = f"Remove {_these(len(set(non_fs)))} without forward secrecy: {_names(non_fs)}."
    if not has_fs:
        change += f" Add ECDHE suites instead: {_names(adds)}."
    return _Draft(
        id="cipher.forward_secrecy", title="Use only forward-secret (ECDHE) key exchange",
        why="With plain RSA key exchange, anyone who later obtains the private key can decrypt recorded traffic.",
        change=change, impact="Past traffic stays safe even if the key leaks; lifts the B cap.",
        transform=fix, fixes=("cipher.forward_secrecy", "cap.no_forward_secrecy"))


def _rec_match_profile(ctx: _Context) -> _Draft | None:
    """Whatever TLS <= 1.2 suite the profile does not list, not already covered above."""
    p = ctx.profile
    allowed = set(p.ciphers_iana)
    extra = [s for s in ctx.facts.suites if s.protocol != "TLSv1.3" and s.name not in allowed
             and not _insecure(s) and not classify(s).is_64bit_block and classify(s).is_forward_secret]
    extra13 = [s for s in ctx.facts.suites if s.protocol == "TLSv1.3" and s.name not in p.ciphersuites]
    if not extra + extra13:
        return None
    names = [s.name for s in extra + extra13]
    no_aead = not any(classify(s).is_aead for s in ctx.facts.suites)

    def fix(f: ScanFacts) -> ScanFacts:
        f = _drop_suites(f, lambda s: (s.name not in allowed if s.protocol != "TLSv1.3"
                                       else s.name not in p.ciphersuites) and not _insecure(s)
                         and not classify(s).is_64bit_block, p)
        return f if any(classify(s).is_aead for s in f.suites) else _add_tls12_suites(f, p)
    return _Draft(
        id="cipher.match_profile", title=f"Trim the cipher suites to Mozilla's {p.name} list",
        why=(f"These suites are outside the Mozilla {p.name} profile (CBC mode, unusual ciphers)"
             + ("; there is no AEAD suite at all." if no_aead else ".")),
        change=(f"Remove {_these(len(set(names)))}: {_names(names)}. Use the profile's list "
                f"(OpenSSL names): {':'.join(p.ciphers_openssl) or 'TLS 1.3 defaults only'}."),
        impact="Only modern AEAD suites remain; lifts the no-AEAD cap where it applies.",
        transform=fix, fixes=("cipher.aead", "vuln.lucky13", "cap.no_aead"))


def _rec_dh(ctx: _Context) -> _Draft | None:
    weak = [s for s in ctx.facts.suites if s.kx_type == "DH" and s.kx_bits and s.kx_bits < 2048
            and not classify(s).is_export]
    if not weak:
        return None
    size = min(s.kx_bits for s in weak)

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        f.suites = [dataclasses.replace(s, kx_bits=2048) if s.kx_type == "DH" and s.kx_bits and s.kx_bits < 2048
                    else s for s in f.suites]
        return f
    return _Draft(
        id="kx.dh_2048", title="Use a 2048-bit Diffie-Hellman group",
        why=f"The DHE suites use a {size}-bit group, weaker than the certificate itself.",
        change=("Drop the DHE suites (Mozilla's guidelines list none since 6.0: a client that speaks DHE also "
                "speaks ECDHE), or use a 2048-bit group (ffdhe2048: curl https://ssl-config.mozilla.org/ffdhe2048.txt"
                " > /path/to/dhparam; nginx: ssl_dhparam /path/to/dhparam)."),
        impact="Lifts the key-exchange cap (B).", transform=fix,
        fixes=("kx.weak_dh", "vuln.logjam", "cap.weak_key", "cap.insecure_key"))


def _rec_curves(ctx: _Context) -> _Draft | None:
    p = ctx.profile
    allowed = {normalise_curve(c) for c in p.tls_curves}
    extra = [c for c in ctx.facts.curves if normalise_curve(c) not in allowed]
    small = [s for s in ctx.facts.suites if s.kx_type == "ECDH" and s.kx_bits and s.kx_bits < 224]
    if not extra and not small:
        return None

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        f.curves = [c for c in f.curves if normalise_curve(c) in allowed] or ["X25519"]
        f.suites = [dataclasses.replace(s, kx_bits=253, kx_curve="X25519")
                    if s.kx_type == "ECDH" and s.kx_bits and s.kx_bits < 224 else s for s in f.suites]
        return f
    return _Draft(
        id="kx.curves", title="Offer only X25519, P-256 and P-384 for key exchange",
        why=f"The server accepts key-exchange groups outside Mozilla's {p.name} list: {_names(extra or [s.kx_curve or '?' for s in small])}.",
        change=(f"Set the groups to {':'.join(p.tls_curves)} (nginx: ssl_ecdh_curve; Apache: SSLOpenSSLConfCmd "
                f"Curves); {_classical_fallback(p)}"),
        impact="Only strong, widely supported curves are negotiated.", transform=fix,
        fixes=("kx.weak_ecdh", "cap.weak_key", "cap.insecure_key"))


def _rec_renegotiation(ctx: _Context) -> _Draft | None:
    secure, client = ctx.facts.check("secure_renegotiation"), ctx.facts.check("client_renegotiation")
    if secure.status != BAD and client.status != BAD:
        return None
    changes = {}
    parts = []
    if secure.status == BAD:
        changes["secure_renegotiation"] = _good()
        parts.append("support secure renegotiation (RFC 5746; any TLS library from after 2010 does)")
    if client.status == BAD:
        changes["client_renegotiation"] = _good()
        parts.append("refuse client-initiated renegotiation")
    return _Draft(
        id="tls.renegotiation", title="Fix renegotiation",
        why="Renegotiation without RFC 5746 lets attackers inject requests; client-initiated renegotiation is a DoS lever.",
        change="Update the TLS library and " + " and ".join(parts) + ".",
        impact="Removes the renegotiation warning or F grade.",
        transform=lambda f: _set_checks(f, **changes),
        fixes=("reneg.secure", "reneg.client_initiated", "cap.insecure_renegotiation", "warn.no_secure_renegotiation"))


def _rec_server_order(ctx: _Context) -> _Draft | None:
    finding = ctx.findings.get("cipher.server_preference")
    if not finding or finding.status != "fail":
        return None

    def strength(name: str, suites: dict[str, CipherSuite]) -> tuple:
        i = classify(suites[name])
        return (not i.is_forward_secret, not i.is_aead, i.is_64bit_block, -i.bits)

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        for proto, pref in list(f.preferences.items()):
            suites = {s.name: s for s in f.suites_for(proto)}
            order = tuple(sorted(suites, key=lambda n: strength(n, suites)))
            f.preferences[proto] = dataclasses.replace(pref, enforced=True, order=order)
        # The clients would now get other suites, which only a new audit can say: grade on the order.
        f.client_simulation = None
        return f
    return _Draft(
        id="cipher.server_order", title="Make the server choose the cipher suite",
        why="Weaker suites are enabled and the client's order wins, so some clients end up on them.",
        change=("Turn on server cipher preference (nginx: ssl_prefer_server_ciphers on; Apache: SSLHonorCipherOrder "
                "on; HAProxy: remove prefer-client-ciphers) with ECDHE AEAD suites first."),
        impact="Every client gets the strongest suite it supports.", transform=fix,
        fixes=("cipher.server_preference", "cap.no_forward_secrecy", "cap.no_aead"))


def _rec_hsts(ctx: _Context) -> _Draft | None:
    f = ctx.facts
    if not f.hsts_check.applicable or (not f.hsts_check.tested and f.hsts is None):
        return None  # not applicable (an SMTP server sends no HTTP header) or not measured
    h = f.hsts
    if h and h.header is not None and h.valid and h.max_age and h.max_age >= 15552000:
        return None
    keep_sub = bool(h and h.include_subdomains)
    current = f"the current header is '{h.header}'" if h and h.header is not None else "there is no header"
    return _Draft(
        id="hsts.enable", title="Add HSTS (Strict-Transport-Security)",
        why=f"HSTS makes browsers refuse plain HTTP for your site; {current}.",
        change=(f"Add HSTS with max-age ≥ 15552000 (we suggest max-age={HSTS_MAX_AGE}) on every HTTPS response "
                f"(nginx: add_header Strict-Transport-Security \"max-age={HSTS_MAX_AGE}\" always;)."),
        impact="Protects first requests from SSL stripping; needed for A+.",
        transform=lambda facts: _with_hsts(facts, HSTS_MAX_AGE, keep_sub, bool(h and h.preload)),
        fixes=("hsts.missing", "hsts.invalid", "hsts.disabled", "hsts.short_max_age", "warn.hsts_disabled",
               "warn.hsts_invalid", "plus.hsts"))


def _rec_ocsp(ctx: _Context) -> _Draft | None:
    # Only a certificate that names an OCSP responder can be stapled (nginx: "no OCSP responder URL")
    deps = [d for d in ctx.facts.certificates if d.ocsp_stapled.status == BAD and d.leaf.ocsp_urls != ()]
    if not deps:
        return None
    violation = any(d.must_staple for d in deps)

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        f.certificates = [dataclasses.replace(d, ocsp_stapled=_good())
                          if d.ocsp_stapled.status == BAD and d.leaf.ocsp_urls != () else d for d in f.certificates]
        return f
    return _Draft(
        id="cert.ocsp_stapling", title="Enable OCSP stapling",
        why=("The certificate demands a stapled OCSP response (must-staple) and gets none: Firefox refuses the site."
             if violation else "Without stapling each new visitor's browser may query the CA before trusting you."),
        change="Enable OCSP stapling (nginx: ssl_stapling on; ssl_stapling_verify on; Apache: SSLUseStapling On).",
        impact="Saves the client an OCSP lookup to the CA on first visits (faster, more private).",
        transform=fix, fixes=("cert.ocsp_stapling", "cert.must_staple"),
        kind="security" if violation else "performance")


def _rec_ecdsa(ctx: _Context) -> _Draft | None:
    deps = ctx.facts.certificates
    if not deps or any(d.leaf.key_type == "EC" for d in deps):
        return None

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        f.certificates.append(_new_certificate(f, "EC"))
        return f
    return _Draft(
        id="perf.ecdsa", title="Add an ECDSA certificate",
        why="An ECDSA P-256 key is far smaller than RSA-2048 at higher strength.",
        change=("Get an ECDSA P-256 certificate and serve it next to the RSA one (nginx and Apache accept two "
                "certificate/key pairs; clients pick the one they support)."),
        impact=("Smaller certificates and cheaper handshakes: in our TLS 1.2 measurements nginx spent about 620 µs "
                "of CPU per ECDSA handshake against 770 µs with RSA-2048."),
        transform=fix, fixes=(), kind="performance")


def _rec_resumption(ctx: _Context) -> _Draft | None:
    finding = ctx.findings.get("perf.session_resumption")
    if not finding or finding.status != "fail":
        return None
    return _Draft(
        id="perf.session_resumption", title="Enable TLS session resumption",
        why="Returning visitors repeat the full handshake on every new connection.",
        change=("Enable a shared session cache (nginx: ssl_session_cache shared:MozSSL:10m; ssl_session_timeout 1d; "
                "Apache: SSLSessionCache shmcb:...); keep session tickets off unless their keys are rotated."),
        impact="Resumed handshakes skip the key exchange: less server CPU and one round trip fewer on TLS 1.2.",
        transform=lambda f: _set_checks(f, **({"session_id_resumption": _good()} if f.check(
            "session_id_resumption").tested else {"tls13_resumption": _good()})),
        fixes=("perf.session_resumption",), kind="performance")


def _rec_http2(ctx: _Context) -> _Draft | None:
    f = ctx.facts
    if not is_http(f.service) or f.alpn_check.status == NOT_TESTED or "h2" in f.alpn:
        return None

    def fix(facts: ScanFacts) -> ScanFacts:
        facts = _copy(facts)
        facts.alpn = ["h2"] + [p for p in facts.alpn if p != "h2"] + ([] if "http/1.1" in facts.alpn else ["http/1.1"])
        facts.alpn_check = _good()
        return facts
    return _Draft(
        id="perf.http2", title="Enable HTTP/2",
        why="Without HTTP/2 browsers open several connections and queue requests on each.",
        change=("Offer h2 via ALPN (nginx 1.25.1 or later: http2 on; older nginx, such as Debian 12's 1.22: "
                "listen 443 ssl http2; Apache: Protocols h2 http/1.1; HAProxy: alpn h2,http/1.1)."),
        impact="Many requests share one connection: faster pages with many assets.",
        transform=fix, fixes=("perf.http2",), kind="performance")


def _rec_preload(ctx: _Context) -> _Draft | None:
    h = ctx.facts.hsts
    if not ctx.facts.hsts_check.applicable or not h or h.header is None or not h.max_age or h.max_age < 15552000:
        return None  # hsts.enable comes first
    if h.include_subdomains and h.preload and h.max_age >= HSTS_MAX_AGE:
        return None
    return _Draft(
        id="perf.hsts_preload", title="Get on the HSTS preload list",
        why="Browsers that know your site is HTTPS-only skip the http:// request and its redirect.",
        change=(f"Send Strict-Transport-Security: max-age={HSTS_PRELOAD_MAX_AGE}; includeSubDomains; preload "
                "(only once every subdomain serves HTTPS), then submit the domain at hstspreload.org."),
        impact="Saves the http-to-https redirect round trip on first visits and protects them from stripping.",
        transform=lambda f: _with_hsts(f, HSTS_PRELOAD_MAX_AGE, True, True),
        fixes=("hsts.preload_ready", "hsts.include_subdomains"), kind="performance")


def _classical_fallback(p: Profile) -> str:
    if p.classical_curves == p.tls_curves:
        return "every TLS library knows these names."
    return (f"{HYBRID_GROUP} needs OpenSSL 3.5 or later (Debian 13; Debian 12 and Ubuntu 24.04 ship 3.0, on which "
            f"nginx refuses to start with it: use {':'.join(p.classical_curves)} there).")


def _pq_groups(p: Profile) -> str:
    return ":".join(p.tls_curves if HYBRID_GROUP in p.tls_curves else (HYBRID_GROUP, *p.tls_curves))


def _rec_post_quantum(ctx: _Context) -> _Draft | None:
    """Only when the probe ran and found no hybrid: no grade changes, so it is listed last of security."""
    pq = ctx.facts.post_quantum
    if pq is None or pq.check.status != BAD:
        return None

    def fix(f: ScanFacts) -> ScanFacts:
        f = _copy(f)
        f.post_quantum = dataclasses.replace(pq, check=Check(OK, detail=PREDICTED), accepted=("X25519MLKEM768",),
                                             rejected=tuple(g for g in pq.rejected if g != "X25519MLKEM768"),
                                             browser_choice="X25519MLKEM768", prefers_pq=True)
        return f

    tls13 = "" if ctx.facts.supports("TLSv1.3") else "Enable TLS 1.3 first (hybrid groups exist only there); then "
    return _Draft(
        id="kx.post_quantum", title="Offer post-quantum key exchange (X25519MLKEM768)",
        why=("Browsers offer the hybrid X25519MLKEM768 first; this server takes "
             f"{pq.browser_choice or 'a classical group'} instead, so recorded traffic could be decrypted by a "
             "future quantum computer."),
        change=(f"{tls13}Upgrade to OpenSSL 3.5 or later (or BoringSSL / Go 1.24+) and put the hybrid group first "
                f"(nginx: ssl_ecdh_curve {_pq_groups(ctx.profile)}; Apache: SSLOpenSSLConfCmd Curves "
                f"{_pq_groups(ctx.profile)}; "
                "HAProxy 3.x: curves X25519MLKEM768:X25519:P-256; Caddy 2.10+ offers it unasked), as Mozilla's "
                "guidelines 6.0 do. With an older OpenSSL nginx refuses to start on the unknown name, so upgrade "
                "first."),
        impact="Today's traffic stays secret even against a future quantum computer; the grade does not change.",
        transform=fix, fixes=("kx.post_quantum",))


_RECOMMENDERS: tuple[Callable[[_Context], _Draft | None], ...] = (
    _rec_certificate,
    _rec_named_check("heartbleed", "vuln.heartbleed", "Patch OpenSSL (Heartbleed) and replace the private key",
                     "Heartbleed lets anyone read the server's memory, private key included.",
                     "Upgrade OpenSSL to a current release, restart the server, then create a new key and "
                     "certificate and revoke the old one.",
                     "Removes the F grade and stops the memory leak.", ("vuln.heartbleed", "cap.heartbleed")),
    _rec_named_check("ccs_injection", "vuln.ccs_injection", "Patch OpenSSL (CCS injection)",
                     "OpenSSL's CCS injection flaw lets an attacker in the middle decrypt traffic.",
                     "Upgrade OpenSSL to a current release and restart the server.",
                     "Removes the F grade.", ("vuln.ccs_injection", "cap.ccs_injection")),
    _rec_robot,
    _rec_disable_old_protocols,
    _rec_enable_tls12,
    _rec_insecure_suites,
    _rec_64bit,
    _rec_forward_secrecy,
    _rec_match_profile,
    _rec_dh,
    _rec_curves,
    _rec_named_check("compression", "tls.disable_compression", "Disable TLS compression",
                     "TLS compression lets attackers recover cookies from encrypted traffic (CRIME).",
                     "Disable TLS-level compression (OpenSSL: SSL_OP_NO_COMPRESSION; it is off by default since "
                     "OpenSSL 1.1.0; Apache: SSLCompression off).",
                     "Lifts the C cap.", ("vuln.crime", "cap.compression")),
    _rec_renegotiation,
    _rec_chain,
    _rec_server_order,
    _rec_enable_tls13,
    _rec_hsts,
    _rec_named_check("fallback_scsv", "tls.fallback_scsv", "Support TLS_FALLBACK_SCSV",
                     "Without it, clients that retry with an older version can be pushed onto a weaker one.",
                     "Update the TLS library (OpenSSL 1.0.1j+ supports it automatically).",
                     "Downgrade protection; needed by Mozilla's profiles.", ("vuln.fallback_scsv",)),
    _rec_named_check("extended_master_secret", "tls.extended_master_secret",
                     "Enable the Extended Master Secret extension",
                     "Without it, sessions are open to the triple-handshake attack.",
                     "Update the TLS library (OpenSSL 1.1.0+ enables RFC 7627 by default).",
                     "Closes the triple-handshake attack; needed by Mozilla's profiles.",
                     ("tls.extended_master_secret",)),
    _rec_ocsp,
    _rec_ecdsa,
    _rec_resumption,
    _rec_post_quantum,
    _rec_http2,
    _rec_preload,
)
