"""Findings: one small rule per check, each turning `ScanFacts` into a `Finding` a site owner can read.

Rules live in a registry (`RULES`, id -> rule) so the checks can be listed, documented and
tested one by one, the way sslyze keeps one plugin per scan command. A rule returns an
`Outcome` (or None when the check does not apply to this server, e.g. the RSA exponent rule on
an ECDSA-only site); `derive_findings` turns outcomes into findings and sorts them.

A rule whose input was not tested answers `untested(reason)`: never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from tlsaudit.domain.ciphers import SuiteInfo, classify
from tlsaudit.domain.scanfacts import (
    BAD,
    NOT_TESTED,
    OK,
    PROTOCOLS,
    Certificate,
    CertificateDeployment,
    ScanFacts,
)

SEVERITIES = ("critical", "high", "medium", "low", "info")
STATUSES = ("fail", "not_tested", "info", "pass")

HSTS_A_PLUS_AGE = 15552000        # 180 days: SSL Labs' A+ threshold
HSTS_PRELOAD_AGE = 31536000       # one year: hstspreload.org's minimum
MAX_CERT_LIFETIME_DAYS = 398      # CA/B Forum limit for certificates issued since 2020-09-01
LIFETIME_RULE_START = datetime(2020, 9, 1, tzinfo=timezone.utc)
SUITE_TIMEOUTS_LIMIT = 10


@dataclass(frozen=True)
class Finding:
    id: str              # stable, e.g. "vuln.heartbleed"
    severity: str        # how much it matters when it fails: critical / high / medium / low / info
    status: str          # fail / not_tested / info / pass
    title: str
    explanation: str     # what it is and why it matters, for a site owner
    evidence: str = ""   # the concrete data behind the verdict
    reason: str = ""     # why it was not tested

    @property
    def category(self) -> str:
        return self.id.split(".", 1)[0]

    def to_dict(self) -> dict:
        return {**asdict(self), "category": self.category}


@dataclass(frozen=True)
class Outcome:
    status: str
    evidence: str = ""
    reason: str = ""
    severity: str | None = None   # overrides the rule's severity (e.g. ROBOT weak vs strong oracle)
    title: str | None = None      # overrides the rule's title for this outcome


def fail(evidence: str, severity: str | None = None, title: str | None = None) -> Outcome:
    return Outcome("fail", evidence=evidence, severity=severity, title=title)


def ok(evidence: str = "") -> Outcome:
    return Outcome("pass", evidence=evidence)


def info(evidence: str, severity: str | None = None, title: str | None = None) -> Outcome:
    return Outcome("info", evidence=evidence, severity=severity, title=title)


def untested(reason: str) -> Outcome:
    return Outcome("not_tested", reason=reason or "not tested")


@dataclass(frozen=True)
class Context:
    facts: ScanFacts
    now: datetime
    suite_infos: tuple[SuiteInfo, ...]   # every accepted suite, classified once

    def infos(self, protocols: Iterable[str] = PROTOCOLS) -> list[SuiteInfo]:
        wanted = set(protocols)
        return [i for i in self.suite_infos if i.protocol in wanted]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str          # shown when it fails / is informative
    ok_title: str       # shown when it passes
    explanation: str
    check: Callable[[Context], Outcome | None]


RULES: dict[str, Rule] = {}


def rule(id: str, severity: str, title: str, ok_title: str, explanation: str):
    def register(fn: Callable[[Context], Outcome | None]):
        if id in RULES:
            raise ValueError(f"duplicate rule id {id}")
        RULES[id] = Rule(id, severity, title, ok_title, explanation, fn)
        return fn
    return register


def derive_findings(facts: ScanFacts, now: datetime | None = None) -> list[Finding]:
    """Every applicable check as a Finding: failures first (by severity), then not tested, info, passes.

    `now` decides expiry; like the grader it defaults to the scan's start, so re-deriving the
    findings of a stored audit gives the same answer.
    """
    ctx = Context(facts, _aware(now or facts.started_at), tuple(classify(s) for s in facts.suites))
    findings = [f for r in RULES.values() if (f := run_rule(r, ctx)) is not None]
    return sorted(findings, key=_sort_key)


def run_rule(r: Rule, ctx: Context) -> Finding | None:
    outcome = r.check(ctx)
    if outcome is None:
        return None
    if outcome.status == "not_tested":
        title = f"Not tested: {r.ok_title}"
    else:
        title = outcome.title or (r.ok_title if outcome.status == "pass" else r.title)
    return Finding(id=r.id, severity=outcome.severity or r.severity, status=outcome.status, title=title,
                   explanation=r.explanation, evidence=outcome.evidence, reason=outcome.reason)


def _sort_key(f: Finding) -> tuple:
    return (STATUSES.index(f.status), SEVERITIES.index(f.severity), f.id)


# --- shared helpers ---------------------------------------------------------------------------

_PRETTY = {"SSLv2": "SSL 2.0", "SSLv3": "SSL 3.0", "TLSv1.0": "TLS 1.0", "TLSv1.1": "TLS 1.1",
           "TLSv1.2": "TLS 1.2", "TLSv1.3": "TLS 1.3"}


def pretty(protocol: str) -> str:
    return _PRETTY.get(protocol, protocol)


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _untested_protocols(facts: ScanFacts, protocols: Iterable[str] = PROTOCOLS) -> str:
    """Reason text when any of `protocols` was not tested (their suites are then unknown), else ""."""
    parts = []
    for p in protocols:
        c = facts.protocols.get(p)
        if not c or not c.tested:
            parts.append(f"{pretty(p)}: {(c.reason if c else '') or 'not tested'}")
    return "; ".join(parts)


def suite_evidence(infos: Iterable[SuiteInfo], verb: str = "accepted", limit: int = 10) -> str:
    """'TLS_RSA_WITH_3DES_EDE_CBC_SHA accepted on TLSv1.2' style evidence, suites grouped by name."""
    by_name: dict[str, list[str]] = {}
    for i in infos:
        by_name.setdefault(i.name, [])
        if i.protocol not in by_name[i.name]:
            by_name[i.name].append(i.protocol)
    parts = [f"{name} {verb} on {', '.join(protos)}" for name, protos in by_name.items()]
    if len(parts) > limit:
        parts = parts[:limit] + [f"and {len(parts) - limit} more"]
    return "; ".join(parts)


def _suite_rule(ctx: Context, bad: Callable[[SuiteInfo], bool], protocols: Iterable[str] = PROTOCOLS,
                ok_text: str = "none accepted", severity: str | None = None) -> Outcome:
    """Fail on any accepted suite matching `bad`; untested when a protocol's suites are unknown."""
    protocols = tuple(protocols)
    hits = [i for i in ctx.infos(protocols) if bad(i)]
    if hits:
        return fail(suite_evidence(hits), severity=severity)
    gap = _untested_protocols(ctx.facts, protocols)
    return untested(gap) if gap else ok(ok_text)


def _protocol_rule(ctx: Context, protocol: str, evidence_on: str) -> Outcome:
    c = ctx.facts.protocols.get(protocol)
    if not c or not c.tested:
        return untested(c.reason if c else "not tested")
    if c.status == OK:
        return fail(evidence_on)
    return ok(f"{pretty(protocol)} refused")


def _named(ctx: Context, name: str, ok_text: str, bad_text: str) -> Outcome:
    c = ctx.facts.check(name)
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if c.status == BAD:
        return fail(c.detail or bad_text)
    return ok(c.detail or ok_text)


def _supported(facts: ScanFacts) -> list[str]:
    return [p for p in PROTOCOLS if facts.supports(p)]


# --- protocols --------------------------------------------------------------------------------

@rule("proto.sslv2", "critical", "SSL 2.0 is enabled (DROWN)", "SSL 2.0 is disabled",
      "SSL 2.0 is a 1995 protocol with broken encryption. A server that still speaks it lets attackers "
      "decrypt its modern TLS connections too (DROWN), because both share the same key.")
def sslv2(ctx: Context) -> Outcome:
    n = len(ctx.facts.suites_for("SSLv2"))
    return _protocol_rule(ctx, "SSLv2", f"SSLv2 accepted ({n} suites): vulnerable to DROWN on this host")


@rule("proto.sslv3", "high", "SSL 3.0 is enabled (POODLE)", "SSL 3.0 is disabled",
      "SSL 3.0 is obsolete. With CBC ciphers it is open to POODLE, which lets an attacker read secrets "
      "such as cookies byte by byte; no browser needs it any more.")
def sslv3(ctx: Context) -> Outcome:
    cbc = [i for i in ctx.infos(["SSLv3"]) if i.is_cbc]
    extra = f"; POODLE: {len(cbc)} CBC suites accepted on SSLv3" if cbc else ""
    return _protocol_rule(ctx, "SSLv3", f"SSLv3 accepted{extra}")


@rule("proto.tls10", "medium", "TLS 1.0 is enabled", "TLS 1.0 is disabled",
      "TLS 1.0 (1999) is deprecated by RFC 8996 and by all major browsers. It lacks modern ciphers and "
      "caps your grade at B; only very old clients still need it.")
def tls10(ctx: Context) -> Outcome:
    return _protocol_rule(ctx, "TLSv1.0", f"TLSv1.0 accepted ({len(ctx.facts.suites_for('TLSv1.0'))} suites)")


@rule("proto.tls11", "medium", "TLS 1.1 is enabled", "TLS 1.1 is disabled",
      "TLS 1.1 (2006) is deprecated by RFC 8996 and by all major browsers. It adds nothing over TLS 1.2 "
      "and caps your grade at B.")
def tls11(ctx: Context) -> Outcome:
    return _protocol_rule(ctx, "TLSv1.1", f"TLSv1.1 accepted ({len(ctx.facts.suites_for('TLSv1.1'))} suites)")


@rule("proto.tls12_missing", "high", "TLS 1.2 is not supported", "TLS 1.2 is supported",
      "TLS 1.2 is the baseline every current client speaks. Without TLS 1.2 or 1.3, clients fall back "
      "to deprecated protocols or cannot connect, and the grade is capped at C.")
def tls12_missing(ctx: Context) -> Outcome:
    f = ctx.facts
    if f.supports("TLSv1.2"):
        return ok("TLSv1.2 accepted")
    if f.supports("TLSv1.3"):
        return info("TLSv1.2 refused, TLSv1.3 accepted: clients without TLS 1.3 (some older Android, Java "
                    "and embedded clients) cannot connect", severity="low", title="Only TLS 1.3 is supported")
    gap = _untested_protocols(f, ["TLSv1.2", "TLSv1.3"])
    if gap:
        return untested(gap)
    return fail("Neither TLSv1.2 nor TLSv1.3 accepted; best protocol: "
                + (pretty(_supported(f)[-1]) if _supported(f) else "none"))


@rule("proto.tls13_missing", "low", "TLS 1.3 is not supported", "TLS 1.3 is supported",
      "TLS 1.3 is faster (one round trip fewer per new connection) and removes every legacy cipher. "
      "Without it the best grade is A-.")
def tls13_missing(ctx: Context) -> Outcome:
    c = ctx.facts.protocols.get("TLSv1.3")
    if not c or not c.tested:
        return untested(c.reason if c else "not tested")
    return ok("TLSv1.3 accepted") if c.status == OK else fail("TLSv1.3 refused")


# --- cipher suites ----------------------------------------------------------------------------

@rule("cipher.forward_secrecy", "high", "No forward secrecy", "Forward secrecy with every suite",
      "With forward secrecy (ECDHE/DHE key exchange) a stolen private key cannot decrypt recorded "
      "traffic. Suites using plain RSA key exchange lack it; a server without any forward-secret suite "
      "is capped at B.")
def forward_secrecy(ctx: Context) -> Outcome:
    infos = ctx.infos()
    gap = _untested_protocols(ctx.facts)
    if not infos:
        return untested(gap or "no cipher suites accepted")
    weak = [i for i in infos if not i.is_forward_secret]
    if not weak:
        return untested(gap) if gap else ok(f"all {len({i.name for i in infos})} accepted suites use ECDHE/DHE")
    if len(weak) == len(infos):
        return fail("no accepted suite uses ECDHE/DHE: " + suite_evidence(weak))
    return fail("some suites lack forward secrecy: " + suite_evidence(weak), severity="low",
                title="Forward secrecy only with some suites")


@rule("cipher.aead", "medium", "No AEAD cipher suite", "AEAD cipher suites offered",
      "AEAD ciphers (AES-GCM, ChaCha20-Poly1305) encrypt and authenticate in one step and avoid the "
      "padding-oracle attacks that hit CBC. A server with no AEAD suite is capped at B.")
def aead(ctx: Context) -> Outcome:
    infos = ctx.infos()
    good = [i for i in infos if i.is_aead]
    if good:
        return ok(f"{len({i.name for i in good})} AEAD suites accepted, e.g. {good[0].name}")
    gap = _untested_protocols(ctx.facts)
    if gap:
        return untested(gap)
    return fail("no AEAD suite accepted" + (": " + suite_evidence(infos, limit=5) if infos else ""))


@rule("vuln.beast", "low", "BEAST: CBC ciphers on TLS 1.0/SSL 3.0", "Not exposed to BEAST",
      "BEAST attacks CBC ciphers on SSL 3.0 and TLS 1.0. Browsers have mitigated it since 2013, so the "
      "practical risk is low, but it is one more reason to turn TLS 1.0 off.")
def beast(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: i.is_cbc, ("SSLv3", "TLSv1.0"), "no CBC suites on SSL 3.0/TLS 1.0")


@rule("vuln.lucky13", "info", "CBC suites present (LUCKY13)", "No CBC suites",
      "LUCKY13 is a timing attack on CBC-mode suites. Current TLS libraries contain it, so this is "
      "informational; preferring AEAD suites removes the question.")
def lucky13(ctx: Context) -> Outcome:
    hits = [i for i in ctx.infos(("TLSv1.0", "TLSv1.1", "TLSv1.2")) if i.is_cbc]
    if hits:
        return info(suite_evidence(hits, limit=5))
    gap = _untested_protocols(ctx.facts, ("TLSv1.0", "TLSv1.1", "TLSv1.2"))
    return untested(gap) if gap else ok("no CBC suites on TLS 1.0-1.2")


@rule("vuln.sweet32", "medium", "64-bit block ciphers (SWEET32)", "No 64-bit block ciphers",
      "3DES, IDEA and similar ciphers use 64-bit blocks; after a few hundred gigabytes on one connection "
      "an attacker can recover data (SWEET32). Offering them with TLS 1.1+ caps the grade at C.")
def sweet32(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: i.is_64bit_block, ok_text="no 3DES/IDEA/RC2/DES suites accepted")


@rule("cipher.rc4", "high", "RC4 cipher accepted", "No RC4",
      "RC4 has statistical biases that let attackers recover plaintext; RFC 7465 forbids it. Offering "
      "it caps the grade at B (C with TLS 1.1+, F if it is the only cipher).")
def rc4(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: i.is_rc4, ok_text="no RC4 suites accepted")


@rule("cipher.null", "critical", "NULL cipher accepted (no encryption)", "No NULL ciphers",
      "A NULL cipher suite sends your traffic unencrypted while still looking like HTTPS. Any client "
      "that negotiates it is fully exposed.")
def null(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: i.is_null, ok_text="no NULL suites accepted")


@rule("cipher.anonymous", "critical", "Anonymous key exchange accepted", "No anonymous suites",
      "Anonymous suites skip server authentication, so anyone in the middle can impersonate your site. "
      "SSL Labs grades them F.")
def anonymous(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: i.is_anonymous, ok_text="no anonymous suites accepted")


@rule("cipher.export", "critical", "EXPORT cipher suites accepted (FREAK)", "No EXPORT suites",
      "EXPORT suites were deliberately weakened to 40-56 bits in the 1990s. Accepting them lets an "
      "attacker downgrade connections and break them in hours (FREAK); the grade is F.")
def export(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: i.is_export, ok_text="no EXPORT suites accepted")


@rule("cipher.weak_encryption", "critical", "Encryption weaker than 112 bits", "All ciphers 112 bits or more",
      "Ciphers with fewer than 112 bits of strength, like single DES, can be brute-forced with "
      "affordable hardware. SSL Labs grades them F.")
def weak_encryption(ctx: Context) -> Outcome:
    return _suite_rule(ctx, lambda i: not i.is_null and i.security_bits < 112,
                       ok_text="every accepted suite has at least 112-bit strength")


@rule("vuln.logjam", "high", "Weak Diffie-Hellman (LOGJAM)", "Not vulnerable to LOGJAM",
      "LOGJAM breaks Diffie-Hellman groups of 1024 bits or less (and DHE_EXPORT) by precomputation. "
      "A well-funded attacker can then decrypt or downgrade connections that use them.")
def logjam(ctx: Context) -> Outcome:
    def bad(i: SuiteInfo) -> bool:
        return i.kx in ("DHE", "DH") and (i.is_export or (i.kx_rsa_bits is not None and i.kx_rsa_bits <= 1024))
    hits = [i for i in ctx.infos() if bad(i)]
    if hits:
        sizes = sorted({i.kx_rsa_bits for i in hits if i.kx_rsa_bits})
        size_text = f"DH group {'/'.join(map(str, sizes))} bits; " if sizes else ""
        return fail(size_text + suite_evidence(hits, limit=5))
    gap = _untested_protocols(ctx.facts)
    return untested(gap) if gap else ok(_dh_summary(ctx) or "no DHE suites accepted")


def _dh_summary(ctx: Context) -> str:
    sizes = sorted({s.kx_bits for s in ctx.facts.suites if s.kx_type == "DH" and s.kx_bits})
    return f"DH group size {', '.join(map(str, sizes))} bits" if sizes else ""


@rule("kx.weak_dh", "medium", "Diffie-Hellman group smaller than 2048 bits", "DH groups are 2048 bits or more",
      "DHE suites use a Diffie-Hellman group chosen by the server. Groups under 2048 bits are weak "
      "by today's standards and cap the key-exchange score (grade B).")
def weak_dh(ctx: Context) -> Outcome:
    hits = [s for s in ctx.facts.suites if s.kx_type == "DH" and s.kx_bits and s.kx_bits < 2048]
    if hits:
        sizes = sorted({s.kx_bits for s in hits})
        return fail(f"DH group {'/'.join(map(str, sizes))} bits with {len({s.name for s in hits})} DHE suite(s), "
                    f"e.g. {hits[0].name} on {hits[0].protocol}")
    gap = _untested_protocols(ctx.facts)
    return untested(gap) if gap else ok(_dh_summary(ctx) or "no DHE suites accepted")


# Bits of named curves we may meet in the curves list (SECG / OpenSSL names, lower case).
_CURVE_BITS = {
    "secp160k1": 160, "secp160r1": 160, "secp160r2": 160, "secp192k1": 192, "secp192r1": 192,
    "prime192v1": 192, "secp224k1": 224, "secp224r1": 224, "secp256k1": 256, "secp256r1": 256,
    "prime256v1": 256, "secp384r1": 384, "secp521r1": 521, "x25519": 255, "x448": 448,
    "sect163k1": 163, "sect163r1": 163, "sect163r2": 163, "sect193r1": 193, "sect193r2": 193,
    "sect233k1": 233, "sect233r1": 233, "sect239k1": 239, "sect283k1": 283, "sect283r1": 283,
    "sect409k1": 409, "sect409r1": 409, "sect571k1": 571, "sect571r1": 571,
    "brainpoolp256r1": 256, "brainpoolp384r1": 384, "brainpoolp512r1": 512,
}


@rule("kx.weak_ecdh", "medium", "Elliptic curve smaller than 224 bits", "Elliptic curves are 224 bits or more",
      "ECDHE key exchange is only as strong as its curve. Curves under 224 bits (like secp160r1 or "
      "secp192r1) give less than 112-bit security.")
def weak_ecdh(ctx: Context) -> Outcome:
    small = [c for c in ctx.facts.curves if _CURVE_BITS.get(c.lower(), 999) < 224]
    small += [f"{s.kx_curve or 'curve'} ({s.kx_bits} bits) with {s.name}" for s in ctx.facts.suites
              if s.kx_type == "ECDH" and s.kx_bits and s.kx_bits < 224]
    if small:
        return fail("accepted: " + ", ".join(dict.fromkeys(small)))
    if ctx.facts.curves_check.status == NOT_TESTED:
        return untested(ctx.facts.curves_check.reason)
    return ok("accepted curves: " + (", ".join(ctx.facts.curves) or "none"))


@rule("cipher.server_preference", "medium", "Server does not enforce its cipher order",
      "Server chooses the cipher suite",
      "When weaker suites are enabled, the server should pick the suite itself. Otherwise a client (or an "
      "attacker steering it) can end up on the weakest one the server allows.")
def server_preference(ctx: Context) -> Outcome:
    f = ctx.facts
    weak_by_proto: dict[str, list[SuiteInfo]] = {}
    for i in ctx.infos(("SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2")):
        if not i.is_forward_secret or not i.is_aead or i.is_64bit_block or i.is_rc4:
            weak_by_proto.setdefault(i.protocol, []).append(i)
    if not weak_by_proto:
        gap = _untested_protocols(f, ("SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2"))
        return untested(gap) if gap else ok("only strong suites are offered, so the order does not matter")
    not_enforced, unknown = [], []
    for proto, weak in weak_by_proto.items():
        pref = f.preferences.get(proto)
        if pref is None or pref.enforced is None:
            unknown.append(f"{pretty(proto)}: {(pref.reason if pref else '') or 'preference not measured'}")
        elif not pref.enforced:
            not_enforced.append(f"{pretty(proto)} (client order wins; weaker suites offered: "
                                f"{', '.join(dict.fromkeys(i.name for i in weak[:3]))})")
    if not_enforced:
        return fail("; ".join(not_enforced))
    if unknown:
        return untested("; ".join(unknown))
    return ok("server order enforced on " + ", ".join(pretty(p) for p in weak_by_proto))


@rule("scan.suite_timeouts", "medium", "Many cipher-suite tests timed out", "Cipher-suite tests completed",
      "Some cipher-suite tests ended in a network timeout, which the scanner counts as 'rejected'. "
      "Suites the server does accept may be missing from this report, so treat cipher results as "
      "incomplete and rescan.")
def suite_timeouts(ctx: Context) -> Outcome:
    n = ctx.facts.timed_out_suite_tests
    if n > SUITE_TIMEOUTS_LIMIT:
        return fail(f"{n} suite tests timed out during the handshake (limit {SUITE_TIMEOUTS_LIMIT})")
    return ok(f"{n} suite tests timed out" if n else "no suite test timed out")


# --- vulnerabilities and protocol features ----------------------------------------------------

@rule("vuln.heartbleed", "critical", "Vulnerable to Heartbleed", "Not vulnerable to Heartbleed",
      "Heartbleed (CVE-2014-0160) lets anyone read chunks of the server's memory, including private "
      "keys and passwords. Patch OpenSSL, then replace the keys and certificates.")
def heartbleed(ctx: Context) -> Outcome:
    return _named(ctx, "heartbleed", "not vulnerable", "vulnerable to CVE-2014-0160")


@rule("vuln.ccs_injection", "critical", "Vulnerable to OpenSSL CCS injection",
      "Not vulnerable to CCS injection",
      "CCS injection (CVE-2014-0224) lets an attacker in the middle force weak keys and decrypt traffic. "
      "It is fixed by updating OpenSSL.")
def ccs_injection(ctx: Context) -> Outcome:
    return _named(ctx, "ccs_injection", "not vulnerable", "vulnerable to CVE-2014-0224")


@rule("vuln.robot", "critical", "Vulnerable to ROBOT", "Not vulnerable to ROBOT",
      "ROBOT is a Bleichenbacher padding oracle in RSA key exchange: an attacker can decrypt recorded "
      "sessions or sign with your key. Patch the server or TLS appliance, or disable RSA key exchange.")
def robot(ctx: Context) -> Outcome:
    c = ctx.facts.check("robot")
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if c.status == OK:
        if c.value == "NOT_VULNERABLE_RSA_NOT_SUPPORTED":
            return ok("RSA key exchange not offered")
        return ok(c.detail or "no oracle found")
    if c.value == "VULNERABLE_WEAK_ORACLE":
        return fail(c.detail or "weak oracle (VULNERABLE_WEAK_ORACLE)", severity="high")
    return fail(c.detail or f"strong oracle ({c.value or 'VULNERABLE_STRONG_ORACLE'})")


@rule("vuln.crime", "high", "TLS compression enabled (CRIME)", "TLS compression disabled",
      "TLS-level compression lets an attacker who can inject requests recover cookies by watching "
      "ciphertext sizes (CRIME). It caps the grade at C.")
def crime(ctx: Context) -> Outcome:
    return _named(ctx, "compression", "compression refused", "server accepts DEFLATE compression")


@rule("vuln.fallback_scsv", "low", "No downgrade protection (TLS_FALLBACK_SCSV)",
      "Downgrade protection (TLS_FALLBACK_SCSV)",
      "TLS_FALLBACK_SCSV stops attackers from forcing clients that retry with older protocol versions "
      "onto a weaker one. Modern browsers no longer retry, so the risk is low.")
def fallback_scsv(ctx: Context) -> Outcome:
    c = ctx.facts.check("fallback_scsv")
    if c.status == BAD and len(_supported(ctx.facts)) == 1:
        return ok("only one protocol version is enabled, so there is nothing to downgrade to")
    return _named(ctx, "fallback_scsv", "supported", "TLS_FALLBACK_SCSV not honoured")


@rule("reneg.secure", "medium", "Secure renegotiation not supported", "Secure renegotiation supported",
      "Without secure renegotiation (RFC 5746) an attacker can splice their own request in front of a "
      "user's. It gives a warning (A-); combined with client-initiated renegotiation the grade is F.")
def secure_renegotiation(ctx: Context) -> Outcome:
    outcome = _named(ctx, "secure_renegotiation", "RFC 5746 supported", "RFC 5746 not supported")
    if outcome.status == "fail" and ctx.facts.check("client_renegotiation").status == BAD:
        return fail(outcome.evidence + "; clients may also renegotiate: insecure renegotiation",
                    severity="critical", title="Insecure renegotiation")
    return outcome


@rule("reneg.client_initiated", "medium", "Client-initiated renegotiation accepted",
      "Client-initiated renegotiation refused",
      "Letting clients renegotiate makes the server redo expensive handshakes on demand, an easy "
      "denial-of-service lever. Servers rarely need it.")
def client_renegotiation(ctx: Context) -> Outcome:
    return _named(ctx, "client_renegotiation", "refused", "server accepts client-initiated renegotiation")


@rule("tls.early_data", "low", "0-RTT early data accepted", "0-RTT early data refused",
      "TLS 1.3 0-RTT saves a round trip on resumed connections, but early data can be replayed by an "
      "attacker. That is fine only if the application accepts it for safe, idempotent requests.")
def early_data(ctx: Context) -> Outcome:
    if ctx.facts.protocol_tested("TLSv1.3") and not ctx.facts.supports("TLSv1.3"):
        return ok("TLS 1.3 not enabled, so no 0-RTT")
    c = ctx.facts.check("early_data")
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if c.status == BAD:
        return info(c.detail or "server accepted 0-RTT data", severity="low")
    return ok(c.detail or "0-RTT data refused")


@rule("tls.extended_master_secret", "low", "Extended master secret not supported",
      "Extended master secret supported",
      "The extended master secret (RFC 7627) binds session keys to the full handshake, closing the "
      "triple-handshake attack. Mozilla's profiles require it; current TLS libraries support it.")
def extended_master_secret(ctx: Context) -> Outcome:
    return _named(ctx, "extended_master_secret", "RFC 7627 supported", "RFC 7627 not supported")


@rule("perf.session_resumption", "info", "Session resumption disabled", "Session resumption works",
      "Session resumption (session IDs or tickets) lets returning clients skip the expensive part of the "
      "handshake, saving CPU on the server and a round trip for TLS 1.2 visitors.")
def session_resumption(ctx: Context) -> Outcome:
    ids, tickets = ctx.facts.check("session_id_resumption"), ctx.facts.check("session_ticket_resumption")
    works = [label for label, c in (("session IDs", ids), ("session tickets", tickets)) if c.status == OK]
    if works:
        return ok("resumption with " + " and ".join(works))
    if not ids.tested or not tickets.tested:
        return untested("; ".join(c.reason for c in (ids, tickets) if not c.tested))
    return fail("neither session IDs nor session tickets resumed a session"
                + (f" ({ids.detail}; {tickets.detail})" if ids.detail or tickets.detail else ""))


@rule("perf.http2", "info", "HTTP/2 not offered (no ALPN h2)", "HTTP/2 offered via ALPN",
      "HTTP/2 multiplexes requests over one connection, so pages with many assets load faster. Clients "
      "pick it during the TLS handshake through ALPN.")
def http2(ctx: Context) -> Outcome:
    c = ctx.facts.alpn_check
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if "h2" in ctx.facts.alpn:
        return ok("ALPN: " + ", ".join(ctx.facts.alpn))
    return fail("ALPN: " + (", ".join(ctx.facts.alpn) or "no protocol negotiated"))


# --- certificates -----------------------------------------------------------------------------

def _label(dep: CertificateDeployment, facts: ScanFacts) -> str:
    if len(facts.certificates) < 2:
        return ""
    return f"{dep.leaf.key_type} certificate: "


def _per_certificate(ctx: Context, check: Callable[[CertificateDeployment], Outcome | None]) -> Outcome | None:
    """Run `check` on every deployment (RSA + ECDSA give two) and merge: worst outcome wins."""
    facts = ctx.facts
    if not facts.certificates:
        return untested(facts.errors.get("certificate_info", "no certificate was retrieved"))
    outcomes = [(dep, o) for dep in facts.certificates if (o := check(dep)) is not None]
    if not outcomes:
        return None
    for status in ("fail", "not_tested", "info", "pass"):
        hits = [(dep, o) for dep, o in outcomes if o.status == status]
        if hits:
            break
    text = "; ".join(_label(dep, facts) + (o.evidence or o.reason) for dep, o in hits)
    severities = [o.severity for _, o in hits if o.severity]
    severity = min(severities, key=SEVERITIES.index) if severities else None
    title = next((o.title for _, o in hits if o.title), None)
    if status == "not_tested":
        return untested(text)
    return Outcome(status, evidence=text, severity=severity, title=title)


def _not_anchor(cert: Certificate) -> bool:
    return not (cert.self_signed and cert.is_ca)


def _chain_to_check(dep: CertificateDeployment) -> list[Certificate]:
    """The certificates whose own properties matter: every one but a self-signed root."""
    return [c for c in dep.chain if _not_anchor(c)]


def _date(dt: datetime) -> str:
    return _aware(dt).strftime("%Y-%m-%d")


@rule("cert.expired", "critical", "Certificate expired", "Certificate within its validity period",
      "An expired certificate makes every browser show a full-page warning. Renew it and set up "
      "automatic renewal (for example with an ACME client).")
def cert_expired(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        expired = [c for c in _chain_to_check(dep) if _aware(c.not_after) < ctx.now]
        if expired:
            return fail("; ".join(f"{c.subject} expired on {_date(c.not_after)}" for c in expired))
        return ok(f"valid until {_date(dep.leaf.not_after)}")
    return _per_certificate(ctx, check)


@rule("cert.not_yet_valid", "critical", "Certificate not yet valid", "Certificate already valid",
      "The certificate's start date is in the future, so browsers reject it. Usually the server clock "
      "or the issuing process is wrong.")
def cert_not_yet_valid(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        future = [c for c in _chain_to_check(dep) if _aware(c.not_before) > ctx.now]
        if future:
            return fail("; ".join(f"{c.subject} valid from {_date(c.not_before)}" for c in future))
        return ok(f"valid since {_date(dep.leaf.not_before)}")
    return _per_certificate(ctx, check)


@rule("cert.expires_soon", "low", "Certificate expires soon", "Certificate not expiring within 30 days",
      "When the certificate expires, visitors get a browser warning. Renew it now, and automate "
      "renewal so it cannot happen again.")
def cert_expires_soon(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome | None:
        left = _aware(dep.leaf.not_after) - ctx.now
        if left.total_seconds() < 0:
            return None  # cert.expired says it
        days = left.days
        text = f"expires on {_date(dep.leaf.not_after)}, in {days} days"
        if days < 7:
            return fail(text, severity="high", title="Certificate expires within 7 days")
        if days < 14:
            return fail(text, severity="medium", title="Certificate expires within 14 days")
        if days < 30:
            return fail(text, severity="low", title="Certificate expires within 30 days")
        return ok(text)
    return _per_certificate(ctx, check)


@rule("cert.hostname_mismatch", "critical", "Certificate does not match the host name",
      "Certificate matches the host name",
      "The certificate does not list this host name, so browsers refuse the connection with a "
      "warning. Issue a certificate that includes the name (or a matching wildcard).")
def cert_hostname_mismatch(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        names = ", ".join(dep.leaf.san_dns + dep.leaf.san_ip) or "no subjectAltName"
        if dep.hostname_matches:
            return ok(f"{ctx.facts.host} matches ({names})")
        return fail(f"{ctx.facts.host} is not in the certificate's names: {names}")
    return _per_certificate(ctx, check)


def is_trusted(dep: CertificateDeployment, facts: ScanFacts) -> bool:
    """Trusted by Mozilla's store, or by the organisation's own CA when it supplied one.

    Like the grader, a store that failed only on the host name ("no matching subjectAltName")
    counts as trusted: the mismatch is cert.hostname_mismatch's business.
    """
    stores = {"Mozilla", "Custom CA"} if facts.trust_use_custom_ca else {"Mozilla"}
    return any(t.trusted or _is_name_error(t.error) for t in dep.trust if t.store in stores)


def _is_name_error(error: str) -> bool:
    text = error.lower()
    return "subjectaltname" in text or "hostname" in text


@rule("cert.untrusted", "critical", "Certificate not trusted", "Certificate trusted",
      "Browsers do not trust the certificate chain, so visitors get a security warning. Typical causes: "
      "an unknown or private CA, a missing intermediate, or a distrusted root.")
def cert_untrusted(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if not dep.trust:
            return untested("trust validation did not run")
        summary = "; ".join(f"{t.store}: {'trusted' if t.trusted else (t.error or 'not trusted')}"
                            for t in dep.trust)
        if is_trusted(dep, ctx.facts):
            return ok(summary)
        return fail(summary)
    return _per_certificate(ctx, check)


@rule("cert.self_signed", "critical", "Self-signed certificate", "Certificate issued by a CA",
      "A self-signed certificate vouches for itself, so no browser can verify it and visitors see a "
      "warning. Use a certificate from a public CA such as Let's Encrypt.")
def cert_self_signed(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if dep.leaf.self_signed:
            return fail(f"{dep.leaf.subject} is signed by itself")
        return ok(f"issued by {dep.leaf.issuer}")
    return _per_certificate(ctx, check)


@rule("cert.chain_incomplete", "medium", "Certificate chain incomplete", "Certificate chain complete",
      "The server does not send the intermediate certificate(s). Desktop browsers may fetch them, but "
      "many mobile apps, API clients and tools fail. The grade is capped at B.")
def cert_chain_incomplete(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if dep.chain_complete is None:
            return untested("chain completeness could not be determined")
        if dep.chain_complete:
            return ok(f"{len(dep.chain)} certificates sent")
        return fail(f"only {len(dep.chain)} certificate(s) sent; an intermediate for {dep.leaf.issuer} is missing")
    return _per_certificate(ctx, check)


@rule("cert.chain_order", "low", "Certificate chain out of order", "Certificate chain in order",
      "The certificates are sent in the wrong order. Browsers cope, but stricter clients may fail: "
      "list the leaf first, then each issuer.")
def cert_chain_order(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if dep.chain_in_order is None:
            return untested("chain order could not be determined")
        if dep.chain_in_order:
            return ok("leaf first, then each issuer")
        return fail(" -> ".join(c.subject for c in dep.chain))
    return _per_certificate(ctx, check)


@rule("cert.chain_anchor", "info", "Root certificate sent in the chain", "Root certificate not sent",
      "The server also sends the root certificate, which clients already have. It is harmless but adds "
      "bytes to every handshake.")
def cert_chain_anchor(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if dep.chain_has_anchor is None:
            return untested("could not tell whether the root is sent")
        if dep.chain_has_anchor:
            return fail(f"root sent: {dep.chain[-1].subject}")
        return ok("root not sent")
    return _per_certificate(ctx, check)


@rule("cert.sha1", "high", "SHA-1 signature in the chain", "No SHA-1 signatures",
      "SHA-1 signatures can be forged (SHAttered, 2017), so browsers no longer trust certificates "
      "signed with it. Reissue the certificate with SHA-256.")
def cert_sha1(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        sha1 = [c.subject for c in _chain_to_check(dep) if (c.signature_hash or "").lower() == "sha1"]
        if dep.chain_has_sha1 or sha1:
            return fail("SHA-1 signed: " + (", ".join(sha1) or "a certificate in the verified chain"))
        if dep.chain_has_sha1 is None:
            return untested("the verified chain was not available")
        return ok("signatures: " + ", ".join(sorted({c.signature_hash or "none" for c in dep.chain})))
    return _per_certificate(ctx, check)


@rule("cert.md5", "critical", "MD5 or MD2 certificate signature", "No MD5/MD2 signatures",
      "MD5 and MD2 signatures are trivially forgeable; attackers have created rogue CA certificates "
      "this way. SSL Labs grades them F.")
def cert_md5(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        weak = [f"{c.subject} ({c.signature_hash})" for c in _chain_to_check(dep)
                if (c.signature_hash or "").lower() in ("md5", "md2")]
        return fail(", ".join(weak)) if weak else ok("no MD5/MD2 signature")
    return _per_certificate(ctx, check)


@rule("cert.rsa_weak", "high", "RSA key shorter than 2048 bits", "RSA key 2048 bits or more",
      "RSA keys under 2048 bits are within reach of well-funded attackers, and CAs no longer issue "
      "them. Generate a new 2048-bit (or larger) key, or switch to ECDSA P-256.")
def cert_rsa_weak(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome | None:
        leaf = dep.leaf
        if leaf.key_type != "RSA":
            return None
        if leaf.key_bits < 1024:
            return fail(f"RSA {leaf.key_bits} bits", severity="critical")
        if leaf.key_bits < 2048:
            return fail(f"RSA {leaf.key_bits} bits")
        return ok(f"RSA {leaf.key_bits} bits")
    return _per_certificate(ctx, check)


@rule("cert.rsa_exponent_1", "critical", "RSA public exponent is 1", "RSA public exponent is sane",
      "An RSA key with public exponent 1 does not encrypt at all. The key must be replaced; SSL Labs "
      "grades it F.")
def cert_rsa_exponent_1(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome | None:
        leaf = dep.leaf
        if leaf.key_type != "RSA":
            return None
        if leaf.rsa_exponent is None:
            return untested("RSA exponent not recorded")
        return fail("exponent 1") if leaf.rsa_exponent == 1 else ok(f"exponent {leaf.rsa_exponent}")
    return _per_certificate(ctx, check)


@rule("cert.ec_weak", "medium", "EC key smaller than 256 bits", "EC key 256 bits or more",
      "Elliptic-curve keys under 256 bits offer less than 128-bit security. Use P-256 or P-384.")
def cert_ec_weak(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome | None:
        leaf = dep.leaf
        if leaf.key_type != "EC":
            return None
        text = f"EC {leaf.key_bits} bits ({leaf.curve or 'unknown curve'})"
        return fail(text) if leaf.key_bits < 256 else ok(text)
    return _per_certificate(ctx, check)


@rule("cert.lifetime", "medium", "Certificate lifetime over 398 days", "Certificate lifetime 398 days or less",
      "Since September 2020 browsers reject newly issued certificates valid for more than 398 days. "
      "Shorter lifetimes limit the damage of a leaked key; automate renewal.")
def cert_lifetime(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        leaf = dep.leaf
        days = (leaf.not_after - leaf.not_before).days
        text = f"valid for {days} days ({_date(leaf.not_before)} to {_date(leaf.not_after)})"
        if days <= MAX_CERT_LIFETIME_DAYS:
            return ok(text)
        if _aware(leaf.not_before) >= LIFETIME_RULE_START:
            return fail(text + "; issued after 2020-09-01, so Apple and Chrome reject it", severity="high")
        return fail(text + "; issued before 2020-09-01", severity="low")
    return _per_certificate(ctx, check)


@rule("cert.symantec", "high", "Distrusted Symantec certificate", "Not a distrusted Symantec certificate",
      "Browsers distrusted the old Symantec PKI (Thawte, GeoTrust, RapidSSL, VeriSign roots) in 2018. "
      "Replace the certificate with one from a current CA.")
def cert_symantec(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if dep.symantec_distrusted is None:
            return untested("the verified chain was not available")
        return fail(f"chain anchored in a distrusted Symantec root (issuer {dep.leaf.issuer})") \
            if dep.symantec_distrusted else ok("not a Symantec chain")
    return _per_certificate(ctx, check)


@rule("cert.ocsp_stapling", "low", "OCSP stapling not enabled", "OCSP stapling enabled",
      "With OCSP stapling the server attaches proof that its certificate is not revoked. Browsers then do "
      "not have to ask the CA: faster first visits and better privacy for your visitors.")
def cert_ocsp_stapling(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        c = dep.ocsp_stapled
        if c.status == NOT_TESTED:
            return untested(c.reason)
        if c.status == OK:
            return ok(c.detail or "valid OCSP response stapled")
        return fail(c.detail or "no OCSP response stapled")
    return _per_certificate(ctx, check)


@rule("cert.must_staple", "high", "Must-staple certificate without a stapled OCSP response",
      "No must-staple violation",
      "The certificate promises that the server always staples an OCSP response (OCSP must-staple). "
      "The server does not, and Firefox refuses such connections outright.")
def cert_must_staple(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if not dep.must_staple:
            return ok("certificate does not require stapling")
        c = dep.ocsp_stapled
        if c.status == NOT_TESTED:
            return untested(c.reason)
        return ok("must-staple and stapled") if c.status == OK else fail("must-staple set, no OCSP response stapled")
    return _per_certificate(ctx, check)


@rule("cert.sct", "low", "No Certificate Transparency SCTs in the certificate",
      "Certificate Transparency SCTs present",
      "Browsers require proof that a certificate was logged publicly (Certificate Transparency). We saw "
      "none embedded; they may still come through the TLS extension or OCSP, which we do not check.")
def cert_sct(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome:
        if dep.sct_count is None:
            return untested("SCT count unknown")
        return ok(f"{dep.sct_count} SCTs embedded") if dep.sct_count else fail("0 SCTs embedded in the leaf")
    return _per_certificate(ctx, check)


@rule("cert.ev", "info", "Extended Validation certificate", "Extended Validation certificate",
      "An EV certificate means the CA verified the organisation behind the site. Browsers no longer "
      "show it prominently, so it brings no security or grade benefit over a DV certificate.")
def cert_ev(ctx: Context) -> Outcome | None:
    def check(dep: CertificateDeployment) -> Outcome | None:
        return info(f"EV certificate for {dep.leaf.subject}") if dep.is_ev else None
    return _per_certificate(ctx, check)


# --- HSTS -------------------------------------------------------------------------------------

def _hsts_gate(ctx: Context):
    """(Hsts, None) when the header was read, else (None, Outcome-to-return)."""
    f = ctx.facts
    if f.hsts_check.status == NOT_TESTED or f.hsts is None:
        return None, untested(f.hsts_check.reason or "HTTP headers not fetched")
    return f.hsts, None


@rule("hsts.missing", "medium", "HSTS not enabled", "HSTS enabled",
      "HTTP Strict Transport Security tells browsers to always use HTTPS for your site, so attackers "
      "cannot strip the encryption on a first plain-HTTP request. A+ needs it.")
def hsts_missing(ctx: Context) -> Outcome | None:
    h, gate = _hsts_gate(ctx)
    if gate:
        return gate
    return fail("no Strict-Transport-Security header") if h.header is None else ok(h.header)


@rule("hsts.invalid", "medium", "HSTS header invalid", "HSTS header valid",
      "The Strict-Transport-Security header could not be parsed (for example it has no max-age), so "
      "browsers ignore it. SSL Labs gives a warning (A-).")
def hsts_invalid(ctx: Context) -> Outcome | None:
    h, gate = _hsts_gate(ctx)
    if gate:
        return gate
    if h.header is None:
        return None
    return ok(h.header) if h.valid and h.max_age is not None else fail(f"header: {h.header}")


@rule("hsts.disabled", "medium", "HSTS disabled (max-age=0)", "HSTS not disabled",
      "max-age=0 tells browsers to forget HSTS for your site, switching the protection off. SSL Labs "
      "gives a warning (A-).")
def hsts_disabled(ctx: Context) -> Outcome | None:
    h, gate = _hsts_gate(ctx)
    if gate:
        return gate
    if h.header is None or h.max_age is None:
        return None
    return fail(f"header: {h.header}") if h.max_age == 0 else ok(f"max-age={h.max_age}")


@rule("hsts.short_max_age", "low", "HSTS max-age shorter than 180 days", "HSTS max-age 180 days or more",
      "A short max-age lets the protection lapse between visits. SSL Labs requires at least 180 days "
      "(15552000 s) for A+; a year or two is usual.")
def hsts_short_max_age(ctx: Context) -> Outcome | None:
    h, gate = _hsts_gate(ctx)
    if gate:
        return gate
    if h.header is None or not h.max_age:
        return None
    days = h.max_age // 86400
    if h.max_age < HSTS_A_PLUS_AGE:
        return fail(f"max-age={h.max_age} ({days} days)")
    return ok(f"max-age={h.max_age} ({days} days)")


@rule("hsts.include_subdomains", "low", "HSTS does not cover subdomains", "HSTS covers subdomains",
      "Without includeSubDomains, subdomains (and cookies scoped to the parent domain) stay exposed to "
      "downgrade attacks. Add it once every subdomain serves HTTPS.")
def hsts_include_subdomains(ctx: Context) -> Outcome | None:
    h, gate = _hsts_gate(ctx)
    if gate:
        return gate
    if h.header is None or not h.max_age:
        return None
    return ok(h.header) if h.include_subdomains else fail(f"header: {h.header}")


@rule("hsts.preload_ready", "info", "Not ready for the HSTS preload list", "Ready for the HSTS preload list",
      "Browsers ship a list of HTTPS-only sites (hstspreload.org). Being on it protects even the very "
      "first visit and saves the http-to-https redirect. It needs max-age of a year, includeSubDomains "
      "and preload.")
def hsts_preload_ready(ctx: Context) -> Outcome | None:
    h, gate = _hsts_gate(ctx)
    if gate:
        return gate
    if h.header is None or not h.max_age:
        return None
    missing = []
    if h.max_age < HSTS_PRELOAD_AGE:
        missing.append(f"max-age >= {HSTS_PRELOAD_AGE}")
    if not h.include_subdomains:
        missing.append("includeSubDomains")
    if not h.preload:
        missing.append("preload")
    if missing:
        return info("missing: " + ", ".join(missing))
    return ok(h.header)
