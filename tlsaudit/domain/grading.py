"""The SSL Labs-style grade of one scan (SSL Server Rating Guide 2009r), as pure data.

`grade(facts)` reads only a `ScanFacts` and returns a `GradeResult`; it never prints, saves
or touches the network, so a stored audit can be re-graded when the rules change. The
spec is /work/shared/grading.md; docs/grading.md lists every rule and every deviation.

Semantics worth knowing before reading the rules:
* "Negotiated" where SSL Labs asks what clients get (forward secrecy and AEAD with modern
  clients, 3DES and RC4 on TLS 1.1+ only when a client negotiates them): read from the audit's
  client simulation (`facts.client_simulation`). Without one (audits before it, or no client
  completing a handshake), "offered": a weak suite counts as soon as the server accepts it.
* A rule whose input could not be measured is reported in `not_tested`, never passed.
* A rule that means nothing for the service (HSTS of an SMTP server) is reported in
  `not_applicable` with why; A is then the best grade, since A+ is the HSTS lift (docs/grading.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import NamedTuple

from tlsaudit.domain.ciphers import SuiteInfo, classify, ephemeral_rsa_bits, rsa_equivalent_bits
from tlsaudit.domain.distrust import Distrust, basis_words, distrusts
from tlsaudit.domain.revocationwords import NOT_RECORDED, revocation_words, revoked_words
from tlsaudit.domain.scanfacts import (
    BAD,
    GOOD,
    PROTOCOLS,
    REVOKED,
    Certificate,
    CertificateDeployment,
    Check,
    CipherSuite,
    ClientHandshake,
    ScanFacts,
)
from tlsaudit.domain.trustwords import trust_error_words

RULESET = "2009r"
HSTS_MIN_MAX_AGE = 15552000  # 180 days, needed for A+
GRADES = ("A+", "A", "A-", "B", "C", "D", "E", "F")  # best first; T and M sit outside
PROTOCOL_SCORES = {"SSLv2": 20, "SSLv3": 80, "TLSv1.0": 90, "TLSv1.1": 95, "TLSv1.2": 100, "TLSv1.3": 100}
PROTOCOL_LABELS = {"SSLv2": "SSL 2.0", "SSLv3": "SSL 3.0", "TLSv1.0": "TLS 1.0",
                   "TLSv1.1": "TLS 1.1", "TLSv1.2": "TLS 1.2", "TLSv1.3": "TLS 1.3"}
WEIGHTS = {"protocol": 30, "key_exchange": 30, "cipher": 40}

# rule_id, effect, what it means, the fix a site owner can apply.
_RULE_TABLE = (
    ("cap.sslv2", "F", "SSL 2.0 is supported (this also exposes the RSA key to DROWN)", "Disable SSL 2.0"),
    ("cap.sslv3_only", "F", "SSL 3.0 is the best protocol supported", "Enable TLS 1.2 and TLS 1.3"),
    ("cap.export", "F", "Export-grade suites are accepted (FREAK, Logjam)", "Disable the export cipher suites"),
    ("cap.weak_cipher", "F", "A suite with less than 112-bit encryption is accepted (NULL, DES, 40/56-bit)",
     "Disable NULL, DES and other suites weaker than 112 bits"),
    ("cap.anon", "F", "Anonymous suites (no server authentication) are accepted",
     "Disable the anonymous (aNULL) cipher suites"),
    ("cap.rc4_only", "F", "Only RC4 suites are accepted", "Offer AES-GCM or ChaCha20 suites and disable RC4"),
    ("cap.insecure_key", "F", "A certificate key or DH/ECDH parameter is weaker than 1024-bit RSA",
     "Use a certificate key and DH groups of at least 2048 bits (or P-256)"),
    ("cap.md5_signature", "F", "A certificate in the chain is signed with MD2 or MD5",
     "Reissue the certificate with a SHA-256 signature"),
    ("cap.rsa_exponent_1", "F", "The RSA certificate key uses public exponent 1",
     "Replace the certificate key with a normal RSA key (exponent 65537)"),
    ("cap.insecure_renegotiation", "F",
     "Insecure renegotiation: RFC 5746 is missing and client-initiated renegotiation is accepted",
     "Enable secure renegotiation (RFC 5746) and refuse client-initiated renegotiation"),
    ("cap.heartbleed", "F", "Vulnerable to Heartbleed (CVE-2014-0160)",
     "Upgrade OpenSSL (Heartbleed) and replace the private key"),
    ("cap.ccs_injection", "F", "Vulnerable to OpenSSL CCS injection (CVE-2014-0224)",
     "Upgrade OpenSSL (CCS injection)"),
    ("cap.robot", "F", "Vulnerable to ROBOT (Bleichenbacher oracle on RSA key exchange)",
     "Patch the TLS stack or disable the RSA key-exchange suites (ROBOT)"),
    ("cap.poodle_tls", "F", "POODLE against TLS (CBC padding not checked)", "Patch the TLS stack (POODLE-TLS)"),
    ("cap.zombie_poodle", "F", "Zombie POODLE padding oracle", "Patch the TLS stack (Zombie POODLE)"),
    ("cap.goldendoodle", "F", "GOLDENDOODLE padding oracle", "Patch the TLS stack (GOLDENDOODLE)"),
    ("cap.sleeping_poodle", "F", "Sleeping POODLE padding oracle", "Patch the TLS stack (Sleeping POODLE)"),
    ("cap.cve_2016_2107", "F", "OpenSSL AES-NI padding oracle (CVE-2016-2107)", "Upgrade OpenSSL (CVE-2016-2107)"),
    ("cap.cve_2019_1559", "F", "OpenSSL 0-length padding oracle (CVE-2019-1559)", "Upgrade OpenSSL (CVE-2019-1559)"),
    ("cap.ticketbleed", "F", "Vulnerable to Ticketbleed (CVE-2016-9244)", "Patch the F5 firmware (Ticketbleed)"),
    ("cap.drown_shared_key", "F", "DROWN: another host with the same RSA key speaks SSL 2.0",
     "Disable SSL 2.0 everywhere the RSA key is used"),
    ("cap.debian_weak_key", "F", "The key was made by the broken Debian OpenSSL generator (2006-2008)",
     "Generate a new key"),
    ("cap.no_tls12", "C", "Neither TLS 1.2 nor TLS 1.3 is supported", "Enable TLS 1.2 and TLS 1.3"),
    ("cap.poodle_ssl3", "C", "SSL 3.0 is supported with CBC suites (POODLE)", "Disable SSL 3.0"),
    ("cap.sweet32", "C", "A 64-bit block cipher (3DES, IDEA, RC2) is accepted with TLS 1.1 or newer (SWEET32)",
     "Disable the 3DES, IDEA and RC2 suites"),
    ("cap.rc4_tls11", "C", "RC4 is accepted with TLS 1.1 or newer", "Disable the RC4 suites"),
    ("cap.compression", "C", "TLS compression is enabled (CRIME)", "Disable TLS compression"),
    ("cap.tls10_11", "B", "TLS 1.0 or TLS 1.1 is supported", "Disable TLS 1.0 and TLS 1.1"),
    ("cap.sslv3", "B", "SSL 3.0 is supported", "Disable SSL 3.0"),
    ("cap.rc4", "B", "RC4 suites are accepted", "Disable the RC4 suites"),
    ("cap.weak_key", "B", "The weakest certificate key or DH/ECDH parameter is below 2048-bit RSA strength",
     "Use a certificate key and DH groups of at least 2048 bits (or P-256)"),
    ("cap.no_forward_secrecy", "B", "Modern clients get no forward secrecy",
     "Offer ECDHE suites (and TLS 1.3) and prefer them"),
    ("cap.no_aead", "B", "Modern clients get no AEAD suite (AES-GCM, ChaCha20-Poly1305)",
     "Offer AES-GCM or ChaCha20-Poly1305 suites (and TLS 1.3) and prefer them"),
    ("cap.incomplete_chain", "B", "The server does not send every intermediate certificate",
     "Serve the intermediate certificates along with the leaf"),
    ("warn.no_tls13", "A-", "TLS 1.3 is not supported", "Enable TLS 1.3"),
    ("warn.hsts_disabled", "A-", "The HSTS header disables HSTS (max-age=0)",
     f"Send HSTS with max-age >= {HSTS_MIN_MAX_AGE}"),
    ("warn.hsts_invalid", "A-", "The HSTS header cannot be parsed or has no max-age",
     f"Send a valid HSTS header with max-age >= {HSTS_MIN_MAX_AGE}"),
    ("warn.no_secure_renegotiation", "A-", "Secure renegotiation (RFC 5746) is not supported",
     "Enable secure renegotiation (RFC 5746)"),
    ("plus.hsts", "A+", f"A valid HSTS header with max-age >= {HSTS_MIN_MAX_AGE} (180 days) lifts A to A+",
     f"Add HSTS with max-age >= {HSTS_MIN_MAX_AGE} (180 days)"),
    ("trust.untrusted", "T", "The chain is not trusted by the Mozilla store (or the custom CA, when one is set)",
     "Use a certificate issued by a publicly trusted CA (or by your custom CA, for an internal site)"),
    ("trust.expired", "T", "The certificate has expired", "Renew the certificate"),
    ("trust.not_yet_valid", "T", "The certificate is not valid yet",
     "Check the certificate's start date and the server clock"),
    ("trust.self_signed", "T", "The certificate is self-signed",
     "Replace the self-signed certificate with one from a publicly trusted CA"),
    ("trust.sha1", "T", "A certificate in the chain is signed with SHA-1",
     "Reissue the certificate and intermediates with SHA-256 signatures"),
    ("trust.symantec", "T", "The chain ends at a distrusted Symantec root",
     "Replace the certificate issued under the distrusted Symantec PKI"),
    ("trust.revoked", "T", "The certificate has been revoked", "Replace the revoked certificate"),
    ("trust.distrusted_after", "T", "A browser distrusts this CA for certificates issued after a date, and this one "
     "was issued after it", "Replace the certificate with one from another CA"),
    ("trust.hostname_mismatch", "M", "The certificate does not cover the hostname",
     "Use a certificate whose subjectAltName covers the hostname"),
)
RULES: dict[str, str] = {rule_id: text for rule_id, _, text, _ in _RULE_TABLE}
RULE_EFFECTS: dict[str, str] = {rule_id: effect for rule_id, effect, _, _ in _RULE_TABLE}
_FIXES = {rule_id: fix for rule_id, _, _, fix in _RULE_TABLE}

# Rules our scanner has no probe for: always reported as not tested (when they can apply).
UNDECIDABLE: dict[str, str] = {
    "cap.poodle_tls": "POODLE against TLS was not tested: the scanner has no CBC padding probe",
    "cap.zombie_poodle": "Zombie POODLE was not tested: the scanner has no CBC padding-oracle probe",
    "cap.goldendoodle": "GOLDENDOODLE was not tested: the scanner has no CBC padding-oracle probe",
    "cap.sleeping_poodle": "Sleeping POODLE was not tested: the scanner has no CBC padding-oracle probe",
    "cap.cve_2016_2107": "The OpenSSL padding oracle CVE-2016-2107 was not tested: the scanner has no probe for it",
    "cap.cve_2019_1559": "The OpenSSL 0-length padding oracle CVE-2019-1559 was not tested: "
                         "the scanner has no probe for it",
    "cap.ticketbleed": "Ticketbleed (CVE-2016-9244) was not tested: the scanner has no probe for it",
    "cap.drown_shared_key": "DROWN through other hosts was not tested: it needs a scan of every host "
                            "that uses the same RSA key",
    "cap.debian_weak_key": "Debian weak keys (2006-2008 OpenSSL bug) were not looked up: "
                           "we do not ship the blacklist",
}
_CBC_ORACLES = ("cap.poodle_tls", "cap.zombie_poodle", "cap.goldendoodle", "cap.sleeping_poodle",
                "cap.cve_2016_2107", "cap.cve_2019_1559")
# Which rule a protocol's support feeds, for the not-tested report.
_PROTOCOL_RULES = {"SSLv2": "cap.sslv2", "SSLv3": "cap.sslv3", "TLSv1.0": "cap.tls10_11",
                   "TLSv1.1": "cap.tls10_11", "TLSv1.2": "cap.no_tls12", "TLSv1.3": "warn.no_tls13"}
_CERTIFICATE_RULES = ("trust.untrusted", "trust.expired", "trust.not_yet_valid", "trust.self_signed",
                      "trust.sha1", "trust.symantec", "trust.revoked", "trust.distrusted_after", "trust.hostname_mismatch",
                      "cap.incomplete_chain",
                      "cap.md5_signature", "cap.rsa_exponent_1", "cap.weak_key", "cap.insecure_key")
_CHECK_RULES = {"heartbleed": "cap.heartbleed", "ccs_injection": "cap.ccs_injection",
                "robot": "cap.robot", "compression": "cap.compression"}


@dataclass(frozen=True)
class Cap:
    grade: str          # the best grade still possible: "F", "C", "B"
    reason: str
    rule_id: str


@dataclass(frozen=True)
class GradeWarning:
    rule_id: str
    message: str


@dataclass(frozen=True)
class TrustIssue:
    kind: str           # "T" (trust) or "M" (name mismatch)
    rule_id: str
    reason: str


class NotTested(NamedTuple):
    rule_id: str
    reason: str


@dataclass(frozen=True)
class GradeResult:
    grade: str                      # A+ A A- B C D E F, or T / M
    grade_ignoring_trust: str
    score: int                      # 0..100, before caps
    scores: dict[str, int]          # protocol / key_exchange / cipher, 0..100 each
    weighted: dict[str, int]        # the same, weighted 30/30/40 (truncated)
    caps: list[Cap] = field(default_factory=list)
    warnings: list[GradeWarning] = field(default_factory=list)
    trust_issues: list[TrustIssue] = field(default_factory=list)
    not_tested: list[NotTested] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    ruleset: str = RULESET
    # Rules that mean nothing for this service (HSTS of an SMTP server), with why: neither passed nor untested.
    not_applicable: list[NotTested] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["not_tested"] = [n._asdict() for n in self.not_tested]
        data["not_applicable"] = [n._asdict() for n in self.not_applicable]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "GradeResult":
        return cls(
            **{**data,
               "caps": [Cap(**c) for c in data["caps"]],
               "warnings": [GradeWarning(**w) for w in data["warnings"]],
               "trust_issues": [TrustIssue(**t) for t in data["trust_issues"]],
               "not_tested": [NotTested(**n) for n in data["not_tested"]],
               # older stored grades have no such list
               "not_applicable": [NotTested(**n) for n in data.get("not_applicable", [])]})


@dataclass(frozen=True)
class _Key:
    label: str          # "the RSA 1024-bit certificate key", "the 1024-bit DH group of TLS_DHE_..."
    rsa_bits: int


@dataclass(frozen=True)
class _Scan:
    """The facts plus what every rule derives from them, computed once."""
    facts: ScanFacts
    now: datetime
    protocols: tuple[str, ...]      # supported, oldest first
    suites: tuple[SuiteInfo, ...]   # accepted on a supported protocol
    weakest_key: _Key | None        # certificate or ephemeral, by RSA-equivalent bits
    handshakes: tuple["Handshake", ...] = ()   # simulated clients that completed a handshake

    @property
    def best_protocol(self) -> str:
        return self.protocols[-1]

    def supports(self, *protocols: str) -> bool:
        return any(p in self.protocols for p in protocols)


def grade(facts: ScanFacts, now: datetime | None = None) -> GradeResult:
    """Grade one scan by the SSL Labs rating guide 2009r.

    1. Refuse scans with no protocol or no suite: there is nothing to grade.
    2. Score protocol / key exchange / cipher, weight them 30/30/40 (truncating).
    3. Letter from the score, lowered by every cap that applies.
    4. With no cap and an A: any warning gives A-, otherwise good HSTS gives A+.
    5. A trust problem shows "T", a name mismatch "M" (T wins); the letter is kept aside.
    `now` decides certificate expiry; it defaults to the scan's start so grades are reproducible.
    """
    scan = _prepare(facts, now or facts.started_at)
    scores = _category_scores(scan)
    weighted = {name: scores[name] * WEIGHTS[name] // 100 for name in scores}
    total = 0 if 0 in scores.values() else sum(weighted.values())
    caps = _collect_caps(scan)
    warnings = _collect_warnings(scan)
    letter = _adjust_a_grade(_apply_caps(_letter(total), caps), caps, warnings, _hsts_state(facts))
    trust = _collect_trust_issues(scan)
    return GradeResult(
        grade=_trust_grade(trust) or letter,
        grade_ignoring_trust=letter,
        score=total,
        scores=scores,
        weighted=weighted,
        caps=caps,
        warnings=warnings,
        trust_issues=trust,
        not_tested=_collect_not_tested(scan),
        improvements=_improvements(scan, letter, caps, warnings, trust),
        not_applicable=_not_applicable(facts),
    )


# --- 1. input ----------------------------------------------------------------------------

def _prepare(facts: ScanFacts, now: datetime) -> _Scan:
    protocols = tuple(p for p in PROTOCOLS if facts.supports(p))
    if not protocols:
        raise ValueError(f"cannot grade {facts.host}:{facts.port}: no SSL/TLS protocol is supported")
    accepted = [s for s in facts.suites if s.protocol in protocols]
    if not accepted:
        raise ValueError(f"cannot grade {facts.host}:{facts.port}: no cipher suite was accepted")
    keys = _certificate_keys(facts) + _ephemeral_keys(accepted)
    return _Scan(facts=facts, now=_as_utc(now), protocols=protocols,
                 suites=tuple(classify(s) for s in accepted),
                 weakest_key=min(keys, key=lambda k: k.rsa_bits) if keys else None,
                 handshakes=negotiated(facts))


def _as_utc(moment: datetime) -> datetime:
    # Naive datetimes in facts are UTC by the engine's convention.
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


# --- 2. scores ---------------------------------------------------------------------------

def _category_scores(scan: _Scan) -> dict[str, int]:
    return {"protocol": _protocol_score(scan), "key_exchange": _key_exchange_score(scan),
            "cipher": _cipher_score(scan)}


def _protocol_score(scan: _Scan) -> int:
    return (PROTOCOL_SCORES[scan.best_protocol] + PROTOCOL_SCORES[scan.protocols[0]]) // 2


def _key_exchange_score(scan: _Scan) -> int:
    if any(s.is_anonymous for s in scan.suites):
        return 0
    weakest = scan.weakest_key
    score = _key_size_score(weakest.rsa_bits) if weakest else 100
    if any(s.is_export for s in scan.suites):
        score = min(score, 40)
    return score


def _key_size_score(rsa_bits: int) -> int:
    for limit, score in ((512, 20), (1024, 40), (2048, 80), (4096, 90)):
        if rsa_bits < limit:
            return score
    return 100


def _cipher_score(scan: _Scan) -> int:
    bits = [s.grading_bits for s in scan.suites]
    return (_cipher_bits_score(max(bits)) + _cipher_bits_score(min(bits))) // 2


def _cipher_bits_score(bits: int) -> int:
    if bits == 0:
        return 0
    if bits < 128:
        return 20
    return 80 if bits < 256 else 100


def _letter(total: int) -> str:
    for floor, letter in ((80, "A"), (65, "B"), (50, "C"), (35, "D"), (20, "E")):
        if total >= floor:
            return letter
    return "F"


def _certificate_keys(facts: ScanFacts) -> list[_Key]:
    keys = []
    for deployment in facts.certificates:
        leaf = deployment.leaf
        bits = rsa_equivalent_bits(leaf.key_type, leaf.key_bits)
        keys.append(_Key(f"the {leaf.key_type} {leaf.key_bits}-bit certificate key", bits))
    return keys


def _ephemeral_keys(suites: list[CipherSuite]) -> list[_Key]:
    keys = []
    for suite in suites:
        rsa_bits = ephemeral_rsa_bits(suite)
        if rsa_bits is not None:
            kind = "DH group" if (suite.kx_type or "").upper() == "DH" else "ECDH key"
            keys.append(_Key(f"the {suite.kx_bits}-bit {kind} of {suite.name}", rsa_bits))
    return keys


# --- 3. caps -----------------------------------------------------------------------------

def _cap(rule_id: str, reason: str) -> Cap:
    return Cap(grade=RULE_EFFECTS[rule_id], reason=reason, rule_id=rule_id)


def _apply_caps(letter: str, caps: list[Cap]) -> str:
    return max([letter] + [c.grade for c in caps], key=GRADES.index)


def _collect_caps(scan: _Scan) -> list[Cap]:
    found = [cap for rule in _CAP_RULES for cap in rule(scan)]
    return sorted(found, key=lambda c: -GRADES.index(c.grade))  # worst first, stable


def _protocol_caps(scan: _Scan) -> list[Cap]:
    caps = []
    if scan.supports("SSLv2"):
        caps.append(_cap("cap.sslv2", "SSL 2.0 is supported (grade F since 2013; also exposes the key to DROWN)"))
    if scan.best_protocol == "SSLv3":
        caps.append(_cap("cap.sslv3_only", "SSL 3.0 is the best protocol supported (grade F since December 2014)"))
    elif scan.supports("SSLv3"):
        caps.append(_cap("cap.sslv3", "SSL 3.0 is supported (cap B since December 2014)"))
    if any(s.protocol == "SSLv3" and s.is_cbc for s in scan.suites):
        caps.append(_cap("cap.poodle_ssl3", "SSL 3.0 is supported with CBC suites, open to POODLE (cap C)"))
    if not scan.supports("TLSv1.2", "TLSv1.3"):
        caps.append(_cap("cap.no_tls12", "Neither TLS 1.2 nor TLS 1.3 is supported (cap C since January 2017)"))
    old = [PROTOCOL_LABELS[p] for p in ("TLSv1.0", "TLSv1.1") if scan.supports(p)]
    if old:
        verb = "are" if len(old) > 1 else "is"
        caps.append(_cap("cap.tls10_11", f"{' and '.join(old)} {verb} supported (cap B since January 2020)"))
    return caps


def _suite_caps(scan: _Scan) -> list[Cap]:
    caps = []
    export = _names(scan, lambda s: s.is_export)
    if export:
        caps.append(_cap("cap.export", f"Export-grade suites are accepted: {export} (grade F since 2015)"))
    weak = _names(scan, lambda s: s.security_bits < 112)
    if weak:
        caps.append(_cap("cap.weak_cipher", f"Suites with less than 112-bit encryption are accepted: {weak} "
                                            "(grade F since 2017)"))
    anon = _names(scan, lambda s: s.is_anonymous)
    if anon:
        caps.append(_cap("cap.anon", f"Anonymous suites are accepted, so anyone can impersonate the server: "
                                     f"{anon} (grade F)"))
    return caps + _rc4_caps(scan) + _sweet32_caps(scan)


def _rc4_caps(scan: _Scan) -> list[Cap]:
    if not any(s.is_rc4 for s in scan.suites):
        return []
    if all(s.is_rc4 for s in scan.suites):
        return [_cap("cap.rc4_only", "Only RC4 suites are accepted (grade F since 2015)")]
    caps = [_cap("cap.rc4", f"RC4 suites are accepted: {_names(scan, lambda s: s.is_rc4)} (cap B)")]
    if scan.handshakes:
        return caps + rc4_negotiated_caps(scan.handshakes)
    modern = _names(scan, lambda s: s.is_rc4 and s.protocol in ("TLSv1.1", "TLSv1.2"))
    if modern:
        caps.append(_cap("cap.rc4_tls11", f"RC4 is accepted with TLS 1.1 or newer: {modern} (cap C)"))
    return caps


def _sweet32_caps(scan: _Scan) -> list[Cap]:
    if scan.handshakes:
        return sweet32_negotiated_caps(scan.handshakes)
    found = _names(scan, lambda s: s.is_64bit_block and s.protocol in ("TLSv1.1", "TLSv1.2"))
    if not found:
        return []
    return [_cap("cap.sweet32", f"64-bit block ciphers are accepted with TLS 1.1 or newer (SWEET32): {found} "
                                "(cap C since January 2017)")]


# --- client simulation: what the clients negotiate -----------------------------------------

class Handshake(NamedTuple):
    """One simulated client's completed handshake, its suite classified."""
    client: ClientHandshake
    suite: SuiteInfo


def negotiated(facts: ScanFacts) -> tuple[Handshake, ...]:
    """The handshakes the simulated clients completed; () without a simulation. Only suites the
    facts list as accepted count: a recommendation's predicted facts drop suites, and a client
    that got a dropped suite can no longer say what it would get."""
    accepted = {(s.protocol, s.name) for s in facts.suites if facts.supports(s.protocol)}
    return tuple(Handshake(c, classify(CipherSuite(c.suite, "", c.protocol, 0)))
                 for c in facts.client_simulation or () if (c.protocol, c.suite) in accepted)


def modern_client_caps(handshakes: tuple[Handshake, ...]) -> list[Cap] | None:
    """SSL Labs 2009p: B when modern clients get no forward secrecy, or no AEAD suite.

    A cap when a modern client completes a handshake without the property (each client
    named); None when no modern client completed one: the simulation cannot answer then.
    """
    modern = [h for h in handshakes if h.client.modern]
    if not modern:
        return None
    caps = []
    no_fs = [h for h in modern if not h.suite.is_forward_secret]
    if no_fs:
        caps.append(_cap("cap.no_forward_secrecy", f"Some modern clients get no forward secrecy: {_got(no_fs)} "
                                                   "(cap B since 2018)"))
    no_aead = [h for h in modern if not h.suite.is_aead]
    if no_aead:
        caps.append(_cap("cap.no_aead", f"Some modern clients get no AEAD suite: {_got(no_aead)} (cap B since 2018)"))
    return caps


def sweet32_negotiated_caps(handshakes: tuple[Handshake, ...]) -> list[Cap]:
    """C when some simulated client (old ones included) negotiates a 64-bit block cipher on TLS 1.1+."""
    found = [h for h in handshakes if h.suite.is_64bit_block and h.suite.protocol in ("TLSv1.1", "TLSv1.2")]
    if not found:
        return []
    return [_cap("cap.sweet32", f"Clients negotiate a 64-bit block cipher with TLS 1.1 or newer (SWEET32): "
                                f"{_got(found)} (cap C since January 2017)")]


def rc4_negotiated_caps(handshakes: tuple[Handshake, ...]) -> list[Cap]:
    """C when some simulated client negotiates RC4 on TLS 1.1+ (RC4 merely accepted stays B)."""
    found = [h for h in handshakes if h.suite.is_rc4 and h.suite.protocol in ("TLSv1.1", "TLSv1.2")]
    if not found:
        return []
    return [_cap("cap.rc4_tls11", f"Clients negotiate RC4 with TLS 1.1 or newer: {_got(found)} (cap C)")]


def _got(handshakes: list[Handshake]) -> str:
    """'Chromium 156 gets TLS_RSA_WITH_AES_128_GCM_SHA256, Java 17 gets ...', at most four named."""
    named = [f"{h.client.label} gets {h.suite.name}" for h in handshakes[:4]]
    more = len(handshakes) - len(named)
    return ", ".join(named) + (f" and {more} more" if more else "")


def _modern_client_caps(scan: _Scan) -> list[Cap]:
    """Forward secrecy and AEAD: SSL Labs asks what modern clients negotiate.

    With client simulation, what the modern clients got (`modern_client_caps`). Without it
    we cap when no suite has the property at all (testssl.sh), or when the server imposes an
    order on its best protocol and its first choice lacks it.
    """
    simulated = modern_client_caps(scan.handshakes)
    if simulated is not None:
        return simulated
    caps = []
    first = _preferred_suite(scan)
    if not any(s.is_forward_secret for s in scan.suites):
        caps.append(_cap("cap.no_forward_secrecy", "No suite with forward secrecy is accepted (cap B since 2018)"))
    elif first and not first.is_forward_secret:
        caps.append(_cap("cap.no_forward_secrecy", f"The server prefers {first.name}, which has no forward "
                                                   "secrecy, so modern clients get none (cap B since 2018)"))
    if not any(s.is_aead for s in scan.suites):
        caps.append(_cap("cap.no_aead", "No AEAD suite (AES-GCM, ChaCha20-Poly1305) is accepted (cap B since 2018)"))
    elif first and not first.is_aead:
        caps.append(_cap("cap.no_aead", f"The server prefers {first.name}, which is not AEAD, so modern clients "
                                        "do not get one (cap B since 2018)"))
    return caps


def _preferred_suite(scan: _Scan) -> SuiteInfo | None:
    preference = scan.facts.preferences.get(scan.best_protocol)
    if not (preference and preference.enforced and preference.order):
        return None
    return next((s for s in scan.suites if s.name == preference.order[0]
                 and s.protocol == scan.best_protocol), None)


def _key_caps(scan: _Scan) -> list[Cap]:
    weakest = scan.weakest_key
    if weakest is None:
        return []
    size_score = _key_size_score(weakest.rsa_bits)
    if size_score <= 40:
        return [_cap("cap.insecure_key", f"The weakest key, {weakest.label}, is below 1024-bit RSA strength "
                                         f"(key-exchange score {size_score}; grade F)")]
    if size_score == 80:
        return [_cap("cap.weak_key", f"The weakest key, {weakest.label}, is below 2048-bit RSA strength "
                                     "(key-exchange score 80; cap B)")]
    return []


def _certificate_caps(scan: _Scan) -> list[Cap]:
    caps = []
    for deployment in scan.facts.certificates:
        if deployment.chain_complete is False:
            caps.append(_cap("cap.incomplete_chain", "The server does not send the intermediate certificates, "
                                                     "so some clients cannot verify it (cap B)"))
        for cert in _non_root_chain(deployment):
            if (cert.signature_hash or "").lower() in ("md2", "md5"):
                caps.append(_cap("cap.md5_signature", f"{cert.subject} is signed with "
                                                      f"{cert.signature_hash.upper()} (grade F)"))
        leaf = deployment.leaf
        if leaf.key_type == "RSA" and leaf.rsa_exponent == 1:
            caps.append(_cap("cap.rsa_exponent_1", "The RSA certificate key uses public exponent 1, "
                                                   "which means no encryption at all (grade F)"))
    return _unique(caps)


def _vulnerability_caps(scan: _Scan) -> list[Cap]:
    facts = scan.facts
    reasons = {"heartbleed": "Vulnerable to Heartbleed (CVE-2014-0160): memory can be read remotely (grade F)",
               "ccs_injection": "Vulnerable to OpenSSL CCS injection (CVE-2014-0224) (grade F)",
               "robot": "Vulnerable to ROBOT: the RSA key exchange leaks a padding oracle (grade F)",
               "compression": "TLS compression is enabled, open to CRIME (cap C)"}
    caps = [_cap(_CHECK_RULES[name], reason) for name, reason in reasons.items()
            if facts.check(name).status == BAD]
    if _insecure_renegotiation(scan):
        caps.append(_cap("cap.insecure_renegotiation", "Secure renegotiation is missing and client-initiated "
                                                       "renegotiation is accepted (grade F)"))
    return caps


def _insecure_renegotiation(scan: _Scan) -> bool:
    facts = scan.facts
    return (_renegotiation_applies(scan) and facts.check("secure_renegotiation").status == BAD
            and facts.check("client_renegotiation").status == BAD)


def _renegotiation_applies(scan: _Scan) -> bool:
    # TLS 1.3 has no renegotiation, so the rules only concern servers with older protocols.
    return any(p != "TLSv1.3" for p in scan.protocols)


_CAP_RULES = (_protocol_caps, _suite_caps, _modern_client_caps, _key_caps, _certificate_caps, _vulnerability_caps)


def _names(scan: _Scan, wanted) -> str:
    """Distinct names of the suites matching `wanted`, as one readable string."""
    names = list(dict.fromkeys(s.name for s in scan.suites if wanted(s)))
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _non_root_chain(deployment: CertificateDeployment) -> list[Certificate]:
    # A root's own signature is never checked, so its hash does not matter.
    return [c for i, c in enumerate(deployment.chain) if i == 0 or not (c.self_signed and c.is_ca)]


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


# --- 4. warnings, A- and A+ --------------------------------------------------------------

def _collect_warnings(scan: _Scan) -> list[GradeWarning]:
    warnings = []
    if not scan.supports("TLSv1.3"):
        warnings.append(GradeWarning("warn.no_tls13", "TLS 1.3 is not supported (A- at best since May 2025)"))
    state = _hsts_state(scan.facts)
    if state == "disabled":
        warnings.append(GradeWarning("warn.hsts_disabled", "The HSTS header has max-age=0, which turns HSTS off"))
    if state == "invalid":
        header = scan.facts.hsts.header if scan.facts.hsts else ""
        warnings.append(GradeWarning("warn.hsts_invalid", f"The HSTS header {header!r} cannot be used: "
                                                          "it cannot be parsed or has no max-age"))
    if (_renegotiation_applies(scan) and scan.facts.check("secure_renegotiation").status == BAD
            and not _insecure_renegotiation(scan)):
        warnings.append(GradeWarning("warn.no_secure_renegotiation",
                                     "Secure renegotiation (RFC 5746) is not supported"))
    return warnings


def _hsts_state(facts: ScanFacts) -> str:
    """One of: not_applicable, untested, absent, invalid, disabled, short, good."""
    hsts = facts.hsts
    if not facts.hsts_check.applicable:
        return "not_applicable"  # whatever `hsts` holds: an SMTP server has no header to judge
    if hsts is None and not facts.hsts_check.tested:
        return "untested"
    if hsts is None or hsts.header is None:
        return "absent"
    if not hsts.valid or hsts.max_age is None:
        return "invalid"
    if hsts.max_age == 0:
        return "disabled"
    return "good" if hsts.max_age >= HSTS_MIN_MAX_AGE else "short"


def _adjust_a_grade(letter: str, caps: list[Cap], warnings: list[GradeWarning], hsts: str) -> str:
    # Any cap blocks both A+ and A- (testssl.sh run_rating; 2009r "capped at A-").
    if letter != "A" or caps:
        return letter
    if warnings:
        return "A-"
    return "A+" if hsts == "good" else "A"


# --- 5. trust ----------------------------------------------------------------------------

def _collect_trust_issues(scan: _Scan) -> list[TrustIssue]:
    issues = [issue for d in scan.facts.certificates for issue in _deployment_trust_issues(scan, d)]
    return _unique(issues)


def _deployment_trust_issues(scan: _Scan, deployment: CertificateDeployment) -> list[TrustIssue]:
    leaf = deployment.leaf
    trusted = _is_trusted(scan.facts, deployment)
    issues = []
    if leaf.self_signed and trusted is False:
        issues.append(TrustIssue("T", "trust.self_signed", f"The certificate for {leaf.subject} is self-signed, "
                                                           "so browsers cannot trust it"))
    elif trusted is False:
        issues.append(TrustIssue("T", "trust.untrusted", _untrusted_reason(scan.facts, deployment)))
    issues += _validity_issues(scan.now, leaf)
    if _has_sha1(deployment):
        issues.append(TrustIssue("T", "trust.sha1", "A certificate in the chain is signed with SHA-1, "
                                                    "which browsers no longer accept"))
    if deployment.symantec_distrusted:
        issues.append(TrustIssue("T", "trust.symantec", "The chain ends at a Symantec root that browsers "
                                                        "distrusted in 2018"))
    issues += [TrustIssue("T", "trust.distrusted_after", distrusted_words(d)) for d in distrusts(deployment)
               if d.applies and d.in_a_browser]
    if deployment.revocation is not None and deployment.revocation.status == REVOKED:
        issues.append(TrustIssue("T", "trust.revoked", f"The certificate for {leaf.subject} has been "
                                                       f"{revoked_words(deployment.revocation)}"))
    if not deployment.hostname_matches:
        issues.append(TrustIssue("M", "trust.hostname_mismatch",
                                 f"The certificate does not cover {scan.facts.host} "
                                 f"(it covers: {', '.join(leaf.san_dns + leaf.san_ip) or 'no names'})"))
    return issues


def distrusted_words(d: Distrust) -> str:
    entry = d.entry
    return (f"{entry.store} distrusts {entry.ca} certificates issued after {entry.after:%Y-%m-%d}, and this one's "
            f"{basis_words(d.basis_used)[4:]} is {d.issued:%Y-%m-%d}: {entry.store} refuses it, although the root "
            "is still in its store")


def _is_trusted(facts: ScanFacts, deployment: CertificateDeployment) -> bool | None:
    """Trusted by Mozilla (what SSL Labs means), or by the organisation's own CA when it set one.

    None when no such store was asked. sslyze checks the hostname during path validation, so
    a store fails with "no matching subjectAltName" for a mismatch alone: that is the M
    grade's business, not T's.
    """
    results = [t for t in deployment.trust if t.store in _trust_stores(facts)]
    if not results:
        return None
    return any(t.trusted or t.dates_only or _is_name_error(t.error) for t in results)


def _trust_stores(facts: ScanFacts) -> set[str]:
    return {"Mozilla", "Custom CA"} if facts.trust_use_custom_ca else {"Mozilla"}


def _is_name_error(error: str) -> bool:
    return trust_error_words(error) == "the certificate does not cover the host name"


def _untrusted_reason(facts: ScanFacts, deployment: CertificateDeployment) -> str:
    store = "the Mozilla store or your custom CA" if facts.trust_use_custom_ca else "the Mozilla store"
    reasons = dict.fromkeys(trust_error_words(t.error) for t in deployment.trust
                            if t.store in _trust_stores(facts) and t.error)
    detail = f": {'; '.join(reasons)}" if reasons else ""
    return f"The certificate chain for {deployment.leaf.subject} is not trusted by {store}{detail}"


def _validity_issues(now: datetime, leaf: Certificate) -> list[TrustIssue]:
    # The dates are the findings' evidence (cert.expired, cert.not_yet_valid): the grade line names
    # the fact and its cap, so the report says each date once.
    if _as_utc(leaf.not_after) < now:
        return [TrustIssue("T", "trust.expired", RULES["trust.expired"])]
    if _as_utc(leaf.not_before) > now:
        return [TrustIssue("T", "trust.not_yet_valid", RULES["trust.not_yet_valid"])]
    return []


def _has_sha1(deployment: CertificateDeployment) -> bool:
    if deployment.chain_has_sha1 is not None:
        return deployment.chain_has_sha1
    # No verified chain to ask about: look at what the server sent.
    return any((c.signature_hash or "").lower() == "sha1" for c in _non_root_chain(deployment))


def _trust_grade(issues: list[TrustIssue]) -> str | None:
    kinds = {i.kind for i in issues}
    if "T" in kinds:
        return "T"
    return "M" if "M" in kinds else None


# --- not tested --------------------------------------------------------------------------

def _collect_not_tested(scan: _Scan) -> list[NotTested]:
    found = (_undecidable(scan) + _untested_protocols(scan.facts) + _untested_checks(scan)
             + _untested_hsts(scan.facts) + _untested_certificates(scan.facts) + _unknown_key_sizes(scan))
    return _unique(found)


def _undecidable(scan: _Scan) -> list[NotTested]:
    # The padding oracles need CBC suites on TLS: without any, they cannot apply.
    has_tls_cbc = any(s.is_cbc and s.protocol.startswith("TLS") for s in scan.suites)
    return [NotTested(rule_id, why) for rule_id, why in UNDECIDABLE.items()
            if has_tls_cbc or rule_id not in _CBC_ORACLES]


def _untested_protocols(facts: ScanFacts) -> list[NotTested]:
    return [NotTested(_PROTOCOL_RULES[p], f"{PROTOCOL_LABELS[p]} support was not tested "
                                          f"({facts.protocols[p].reason if p in facts.protocols else 'not run'}); "
                                          "graded as not supported")
            for p in PROTOCOLS if not facts.protocol_tested(p)]


def _untested_checks(scan: _Scan) -> list[NotTested]:
    facts = scan.facts
    found = [NotTested(rule_id, _untested_reason(name, facts.check(name)))
             for name, rule_id in _CHECK_RULES.items() if not facts.check(name).tested]
    if not _renegotiation_applies(scan):
        return found
    secure, client = facts.check("secure_renegotiation"), facts.check("client_renegotiation")
    if not secure.tested:
        found.append(NotTested("cap.insecure_renegotiation", _untested_reason("secure_renegotiation", secure)))
        found.append(NotTested("warn.no_secure_renegotiation", _untested_reason("secure_renegotiation", secure)))
    elif secure.status == BAD and not client.tested:
        found.append(NotTested("cap.insecure_renegotiation", _untested_reason("client_renegotiation", client)))
    return found


def _untested_reason(name: str, check: Check) -> str:
    return f"The {name.replace('_', ' ')} check did not run ({check.reason or 'no reason given'})"


_HSTS_RULES = ("plus.hsts", "warn.hsts_disabled", "warn.hsts_invalid")


def _not_applicable(facts: ScanFacts) -> list[NotTested]:
    """HSTS of a service that is not HTTP: A+ is SSL Labs' lift for HSTS, so A is the best grade here.
    testssl.sh, the one rater of STARTTLS services, caps them all at T; we grade the TLS and say why A+
    cannot apply (docs/grading.md, "Services other than HTTPS")."""
    if _hsts_state(facts) != "not_applicable":
        return []
    why = (facts.hsts_check.reason or "HSTS is an HTTP header, and this service is not HTTP").rstrip(". ")
    lift = NotTested("plus.hsts", f"{why}; A+ is the lift HSTS gives, so A is the best grade for this service")
    return [lift, *(NotTested(rule_id, why) for rule_id in _HSTS_RULES[1:])]


def _untested_hsts(facts: ScanFacts) -> list[NotTested]:
    if _hsts_state(facts) != "untested":
        return []
    why = f"The HTTP headers could not be read ({facts.hsts_check.reason or 'no reason given'})"
    return [NotTested(rule_id, why) for rule_id in _HSTS_RULES]


def _untested_certificates(facts: ScanFacts) -> list[NotTested]:
    found = []
    if not facts.certificates:
        why = "No certificate was retrieved, so trust, expiry, hostname and key size were not checked"
        found += [NotTested(rule_id, why) for rule_id in _CERTIFICATE_RULES]
    for deployment in facts.certificates:
        subject = deployment.leaf.subject
        if deployment.chain_complete is None:
            found.append(NotTested("cap.incomplete_chain", f"Chain completeness of {subject} is unknown"))
        if _is_trusted(facts, deployment) is None:
            found.append(NotTested("trust.untrusted", f"{subject} was not validated against "
                                                      f"{' or '.join(sorted(_trust_stores(facts)))}"))
        if deployment.symantec_distrusted is None:
            found.append(NotTested("trust.symantec", f"Symantec distrust of {subject} is unknown "
                                                     "(no verified chain)"))
        found += _unknown_revocation(deployment)
    return found


def _unknown_revocation(deployment: CertificateDeployment) -> list[NotTested]:
    """Only a good or revoked answer decides trust.revoked; anything else says why it could not."""
    revocation = deployment.revocation
    if revocation is not None and revocation.status in (GOOD, REVOKED):
        return []
    words = NOT_RECORDED if revocation is None else revocation_words(revocation)
    return [NotTested("trust.revoked", f"Revocation of {deployment.leaf.subject}: {words}")]


def _unknown_key_sizes(scan: _Scan) -> list[NotTested]:
    # nassl lists a suite as accepted without a key when it refuses a tiny DH group.
    unknown = _names(scan, lambda s: s.kx in ("DHE", "ECDHE", "TLS13") and not s.is_anonymous
                     and s.kx_rsa_bits is None)
    if not unknown:
        return []
    return [NotTested("cap.insecure_key", f"The ephemeral key size of {unknown} was not reported, "
                                          "so a weak DH group (Logjam) cannot be ruled out")]


# --- improvements ------------------------------------------------------------------------

def _improvements(scan: _Scan, letter: str, caps: list[Cap], warnings: list[GradeWarning],
                  trust: list[TrustIssue]) -> list[str]:
    """What would raise the grade, most important first, each fix once."""
    steps = [(_FIXES[i.rule_id], f"removes the {i.kind} grade") for i in trust]
    steps += [(_FIXES[c.rule_id], f"lifts the {c.grade} cap") for c in caps]
    steps += [(_FIXES[w.rule_id], "removes the A- warning") for w in warnings]
    if not caps and letter in ("A", "A-") and _hsts_state(scan.facts) in ("absent", "short"):
        steps.append((_FIXES["plus.hsts"], "gives A+" if letter == "A" else "gives A+ once the warnings are fixed"))
    seen: dict[str, str] = {}
    for fix, effect in steps:
        seen.setdefault(fix, f"{fix}: {effect}")
    return list(seen.values())
