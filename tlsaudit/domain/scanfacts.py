"""The normalised facts of one TLS scan: the contract between the scan engine and the rules.

The engine (workers/tls) turns sslyze's results and our own probes into a `ScanFacts`;
the grader, the findings rules and the recommender read only this. It round-trips through
JSON (`to_dict` / `from_dict`) so an audit keeps its inputs and its grade can be re-derived
when the rules change.

Tri-state checks: a check that could not run is `Check(status=NOT_TESTED, reason=...)`,
never a pass.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

PROTOCOLS = ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")

# Check statuses.
OK = "ok"                  # tested, the good outcome (e.g. not vulnerable, supported)
BAD = "bad"                # tested, the bad outcome (vulnerable, missing protection)
NOT_TESTED = "not_tested"  # could not run: `reason` says why; never shown as a pass
# means nothing for this service (HSTS of an SMTP server): `reason` says why; neither pass nor gap
NOT_APPLICABLE = "not_applicable"


@dataclass(frozen=True)
class Check:
    status: str                 # OK / BAD / NOT_TESTED / NOT_APPLICABLE
    detail: str = ""            # evidence in words ("3 of 3 resumptions succeeded")
    reason: str = ""            # why NOT_TESTED
    value: Any = None           # raw value where useful (ROBOT enum name, counts...)

    @property
    def tested(self) -> bool:
        return self.status not in (NOT_TESTED, NOT_APPLICABLE)

    @property
    def applicable(self) -> bool:
        return self.status != NOT_APPLICABLE


@dataclass(frozen=True)
class CipherSuite:
    """One accepted suite. Classification (kx family, AEAD, CBC...) lives in domain.ciphers."""
    name: str                       # IANA name, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    openssl_name: str               # e.g. ECDHE-RSA-AES128-GCM-SHA256
    protocol: str                   # one of PROTOCOLS
    key_size: int                   # symmetric bits (0 for NULL)
    is_anonymous: bool = False
    kx_type: str | None = None      # ephemeral key type reported by the server: "DH" / "ECDH" / None
    kx_bits: int | None = None      # DH prime bits or EC curve bits (X25519 reported as 253 by nassl)
    kx_curve: str | None = None     # e.g. "X25519", "prime256v1"


@dataclass(frozen=True)
class ServerPreference:
    """Our own probe: does the server impose its suite order for a protocol, and which order."""
    protocol: str
    enforced: bool | None           # None = could not tell (one suite only, or probe failed)
    order: tuple[str, ...] = ()     # IANA names, server's order when enforced, else as observed
    reason: str = ""                # why enforced is None


@dataclass(frozen=True)
class Certificate:
    subject: str                    # RFC 4514 string
    issuer: str
    serial_hex: str
    not_before: datetime
    not_after: datetime
    key_type: str                   # "RSA" / "EC" / "Ed25519" / "Ed448" / "DSA"
    key_bits: int
    curve: str | None               # for EC keys, e.g. "secp256r1"
    signature_hash: str | None      # "sha256", "sha1", "md5", None for Ed25519
    san_dns: tuple[str, ...] = ()
    san_ip: tuple[str, ...] = ()
    is_ca: bool = False
    self_signed: bool = False       # subject == issuer and its own signature verifies
    fingerprint_sha256: str = ""    # hex
    rsa_exponent: int | None = None
    pem: str = ""
    ocsp_urls: tuple[str, ...] | None = None  # its AIA OCSP responders; () = none named; None = not read (older audits)
    # Dated distrust and root-program rules; "" / None = not read (older audits)
    spki_sha256: str = ""           # hex SHA-256 of its SubjectPublicKeyInfo: the key, whatever the name
    authority_key_id: str = ""      # hex keyIdentifier of its AKI: its issuer's key
    earliest_sct: datetime | None = None    # the earliest embedded SCT's timestamp (Chrome's issuance date)
    ekus: tuple[str, ...] | None = None     # extended key usages by name ("serverAuth", "clientAuth", OIDs); () = none
    # Its own signatureAlgorithm as OpenSSL and Mozilla name it ("sha256WithRSAEncryption", "ecdsa-with-SHA256");
    # "" = not read (older audits: then it is inferred from the issuer's key, when the issuer was sent)
    signature_algorithm: str = ""


@dataclass(frozen=True)
class TrustResult:
    store: str                      # "Mozilla", "Apple", "Android", "Windows", "Java", "Custom CA"
    trusted: bool                   # the chain, whatever the host name (that is hostname_matches)
    error: str = ""                 # why the store refused, in words (trustwords; older audits: sslyze's text)
    dates_only: bool = False        # refused only for the dates: the chain verifies at a time inside them
    # trusted as browsers judge it, though cryptography (and OpenSSL at security level 2) refuse a key of the
    # chain as too weak: the chain is signed right, in its dates, up to this store's root (workers/tls/certs.py)
    weak_key_only: bool = False

    @property
    def chain_trusted(self) -> bool:
        """Facts stored before the engine re-checked name errors (workers/tls/certs.chain_trust)
        say trusted=False with "no matching subjectAltName": their chain was judged good then too."""
        text = self.error.lower()
        return self.trusted or "no matching subjectaltname" in text or text == "the certificate does not cover the host name"


# Revocation statuses of a leaf (workers/tls/revocation.py).
GOOD = "good"              # the CA says it is not revoked (OCSP "good", or absent from a current CRL)
REVOKED = "revoked"
UNKNOWN = "unknown"        # the OCSP responder answered but does not know this certificate
# ... or NOT_TESTED, with `why` (one of NOT_CHECKED_WHY) and `reason` in words.
# Who answered: the server's stapled response, the AIA responder, or the CRL.
STAPLED_OCSP, OCSP_RESPONDER, CRL = "stapled OCSP", "OCSP", "CRL"
NOT_CHECKED_WHY = ("no_url", "no_issuer", "unreachable", "blocked", "timeout", "bad_signature", "bad_response")


@dataclass(frozen=True)
class Revocation:
    """Is the leaf revoked, as its CA answers: a stapled OCSP response, the AIA OCSP responder, or
    (with no responder) the CRL from its distribution points."""
    status: str                         # GOOD / REVOKED / UNKNOWN / NOT_TESTED
    method: str = ""                    # "stapled OCSP" / "OCSP" / "CRL"; "" when nothing answered
    source: str = ""                    # the responder or CRL URL asked ("" for a stapled response)
    why: str = ""                       # NOT_TESTED: one of NOT_CHECKED_WHY
    reason: str = ""                    # NOT_TESTED / UNKNOWN: why, in words
    revocation_reason: str | None = None    # REVOKED: the CRLReason name ("key_compromise"), None = unspecified
    revoked_at: datetime | None = None      # REVOKED: when the CA revoked it

    @property
    def checked(self) -> bool:
        return self.status != NOT_TESTED


@dataclass(frozen=True)
class CertificateDeployment:
    """One leaf the server presents (RSA and ECDSA dual deployments give two)."""
    chain: tuple[Certificate, ...]  # as received, leaf first
    trust: tuple[TrustResult, ...]
    hostname_matches: bool          # our own SAN matcher
    chain_in_order: bool | None
    chain_complete: bool | None     # False = an intermediate is missing from what was sent
    chain_has_anchor: bool | None   # the server also sent the root
    chain_has_sha1: bool | None     # SHA-1 signature in the verified chain (not the root)
    symantec_distrusted: bool | None
    ocsp_stapled: Check             # OK = stapled and trusted response, BAD = none stapled
    must_staple: bool
    sct_count: int | None           # SCTs embedded in the leaf; None = unknown
    is_ev: bool = False
    revocation: Revocation | None = None    # None = not checked (audits before revocation checks)
    chain_extra: tuple[str, ...] | None = None  # subjects of sent certificates off the leaf's path; None = unknown

    @property
    def leaf(self) -> Certificate:
        return self.chain[0]

    @property
    def publicly_trusted(self) -> bool:
        """Trusted by the Mozilla store (what SSL Labs means by 'trusted')."""
        return any(t.trusted for t in self.trust if t.store == "Mozilla")

    @property
    def trusted_by_any(self) -> bool:
        return any(t.trusted for t in self.trust)


@dataclass(frozen=True)
class Hsts:
    header: str | None              # raw header value; None = no header
    max_age: int | None             # None = header absent or unparseable
    include_subdomains: bool = False
    preload: bool = False
    valid: bool = True              # False = header present but unparseable / no max-age


# The hybrid post-quantum groups browsers send first (draft-ietf-tls-ecdhe-mlkem), and the
# obsolete pre-standard one Chrome 124-130 sent (reported apart: it is being switched off).
PQ_GROUPS = ("X25519MLKEM768", "SecP256r1MLKEM768", "SecP384r1MLKEM1024")
PQ_DRAFT_GROUP = "X25519Kyber768Draft00"


@dataclass(frozen=True)
class PostQuantum:
    """Our own TLS 1.3 probe (workers/tls/tls13.py): which hybrid post-quantum groups the server takes."""
    check: Check                        # OK = accepts a standard hybrid ("post-quantum ready"), BAD = none
    accepted: tuple[str, ...] = ()      # of PQ_GROUPS
    rejected: tuple[str, ...] = ()      # of PQ_GROUPS
    draft_kyber: bool | None = None     # accepts X25519Kyber768Draft00; None = not tested
    browser_choice: str | None = None   # group picked for a browser's offer (X25519MLKEM768, then X25519)
    prefers_pq: bool | None = None      # picks X25519MLKEM768 even when the client lists X25519 first

    @property
    def ready(self) -> bool | None:
        return None if not self.check.tested else self.check.status == OK


@dataclass(frozen=True)
class ClientHandshake:
    """One recorded client's ClientHello replayed (workers/tls/clients.py): what it would negotiate."""
    client: str                         # profile key, e.g. "chromium"
    label: str                          # "Chromium 156 (Debian 12)"
    protocol: str | None = None         # one of PROTOCOLS; None = the handshake fails
    suite: str | None = None            # IANA name
    group: str | None = None            # key-exchange group (TLS 1.3 key_share, TLS 1.2 ServerKeyExchange)
    dh_bits: int | None = None          # TLS <= 1.2 DHE prime size
    error: str = ""                     # why it fails, or why it could not be tested
    tested: bool = True
    recorded: bool = True               # False: built from the client's published lists (it cannot run here)
    modern: bool = True                 # counts for SSL Labs' "with modern clients" rules (FS, AEAD)


@dataclass(frozen=True)
class WithoutSni:
    """What a client that sends no SNI gets (workers/tls/sni.py): the same certificate, another one, or
    no handshake at all."""
    outcome: str                        # "same" | "other" | "refused"
    subject: str = ""                   # other: the certificate served without SNI
    detail: str = ""                    # refused: why, in the TLS library's words


@dataclass(frozen=True)
class CaaRecord:
    owner: str                          # the name the relevant RRset was found at
    flags: int
    tag: str                            # issue, issuewild, iodef, or another (unknown to us)
    value: str


@dataclass(frozen=True)
class CaaFacts:
    """The site's CAA records as a CA climbing the DNS tree finds them (workers/net/caa.py)."""
    queried: tuple[str, ...]            # the names asked, the host name first
    records: tuple[CaaRecord, ...]      # the relevant RRset; () = none anywhere up the tree
    error: str = ""                     # the lookup failed: why (the records are then unknown)
    skipped: str = ""                   # not looked up: why (an IP address, a special-use name)


CLIENT_AUTH = ("not_required", "optional", "required")


@dataclass
class ScanFacts:
    host: str                       # ASCII (punycode) hostname, used for SNI and matching
    port: int
    ip: str                         # the IP actually connected to
    started_at: datetime
    duration_s: float
    scanner: str = ""               # e.g. "sslyze 6.3.1"
    service: str = "https"          # domain/services.py scheme: "smtp", "imaps"... (older stored audits: https)

    # protocol -> Check(OK = supported, BAD = not supported, NOT_TESTED)
    protocols: dict[str, Check] = field(default_factory=dict)
    suites: list[CipherSuite] = field(default_factory=list)
    preferences: dict[str, ServerPreference] = field(default_factory=dict)
    curves: list[str] = field(default_factory=list)          # accepted ECDH groups
    curves_check: Check = field(default_factory=lambda: Check(NOT_TESTED, reason="not run"))
    alpn: list[str] = field(default_factory=list)            # protocols the server agreed to, e.g. ["h2", "http/1.1"]
    alpn_check: Check = field(default_factory=lambda: Check(NOT_TESTED, reason="not run"))
    certificates: list[CertificateDeployment] = field(default_factory=list)
    trust_use_custom_ca: bool = False                        # the org supplied its own CA file
    hsts: Hsts | None = None                                 # None = headers not tested
    hsts_check: Check = field(default_factory=lambda: Check(NOT_TESTED, reason="not run"))
    post_quantum: PostQuantum | None = None                  # None = not probed (older stored audits)
    client_simulation: list[ClientHandshake] | None = None   # None = not simulated (older stored audits)
    # Named checks, keys fixed (see CHECK_NAMES). OK = good outcome.
    checks: dict[str, Check] = field(default_factory=dict)
    # sslyze command -> reason, for every command that errored
    errors: dict[str, str] = field(default_factory=dict)
    # cipher tests counted as "rejected" only because the handshake timed out (sslyze pitfall)
    timed_out_suite_tests: int = 0
    without_sni: WithoutSni | None = None     # None = not probed (older stored audits)
    client_auth: str | None = None            # one of CLIENT_AUTH, as sslyze's connectivity test saw; None = unknown
    caa: CaaFacts | None = None               # None = not looked up (older stored audits)

    def supports(self, protocol: str) -> bool:
        c = self.protocols.get(protocol)
        return bool(c and c.status == OK)

    def protocol_tested(self, protocol: str) -> bool:
        c = self.protocols.get(protocol)
        return bool(c and c.tested)

    def suites_for(self, protocol: str) -> list[CipherSuite]:
        return [s for s in self.suites if s.protocol == protocol]

    def check(self, name: str) -> Check:
        return self.checks.get(name, Check(NOT_TESTED, reason="not run"))

    # --- JSON round trip -------------------------------------------------------------
    def to_dict(self) -> dict:
        return _encode(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ScanFacts":
        return _decode_facts(data)


# Named checks. OK means the safe outcome for every one of them.
CHECK_NAMES = {
    "heartbleed": "Not vulnerable to Heartbleed (CVE-2014-0160)",
    "ccs_injection": "Not vulnerable to OpenSSL CCS injection (CVE-2014-0224)",
    "robot": "Not vulnerable to ROBOT (Bleichenbacher oracle)",
    "compression": "TLS compression disabled (CRIME)",
    "fallback_scsv": "TLS_FALLBACK_SCSV supported (downgrade protection)",
    "secure_renegotiation": "Secure renegotiation (RFC 5746) supported",
    "client_renegotiation": "Client-initiated renegotiation refused",
    "early_data": "TLS 1.3 0-RTT early data not accepted",
    "extended_master_secret": "Extended master secret (RFC 7627) supported",
    "session_id_resumption": "Session resumption with session IDs",
    "session_ticket_resumption": "Session resumption with tickets",
    "tls13_resumption": "Session resumption with TLS 1.3 tickets (PSK)",
}


# --- encoding helpers (dataclasses <-> plain JSON) ----------------------------------------

def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _check(d: dict | None) -> Check:
    return Check(**d) if d else Check(NOT_TESTED, reason="not run")


def _cert(d: dict) -> Certificate:
    d = dict(d)
    d["not_before"] = datetime.fromisoformat(d["not_before"])
    d["not_after"] = datetime.fromisoformat(d["not_after"])
    d["san_dns"] = tuple(d.get("san_dns", ()))
    d["san_ip"] = tuple(d.get("san_ip", ()))
    if d.get("ocsp_urls") is not None:
        d["ocsp_urls"] = tuple(d["ocsp_urls"])
    if d.get("earliest_sct"):
        d["earliest_sct"] = datetime.fromisoformat(d["earliest_sct"])
    if d.get("ekus") is not None:
        d["ekus"] = tuple(d["ekus"])
    return Certificate(**d)


def _deployment(d: dict) -> CertificateDeployment:
    d = dict(d)
    d["chain"] = tuple(_cert(c) for c in d["chain"])
    d["trust"] = tuple(TrustResult(**t) for t in d["trust"])
    d["ocsp_stapled"] = _check(d["ocsp_stapled"])
    d["revocation"] = _revocation(d.get("revocation"))
    if d.get("chain_extra") is not None:
        d["chain_extra"] = tuple(d["chain_extra"])
    return CertificateDeployment(**d)


def _revocation(d: dict | None) -> Revocation | None:
    if not d:
        return None
    revoked_at = d.get("revoked_at")
    return Revocation(**{**d, "revoked_at": datetime.fromisoformat(revoked_at) if revoked_at else None})


def _decode_facts(data: dict) -> ScanFacts:
    d = dict(data)
    d["started_at"] = datetime.fromisoformat(d["started_at"])
    d["protocols"] = {k: _check(v) for k, v in d.get("protocols", {}).items()}
    d["suites"] = [CipherSuite(**s) for s in d.get("suites", [])]
    d["preferences"] = {k: ServerPreference(**{**v, "order": tuple(v.get("order", ()))})
                        for k, v in d.get("preferences", {}).items()}
    d["curves_check"] = _check(d.get("curves_check"))
    d["alpn_check"] = _check(d.get("alpn_check"))
    d["certificates"] = [_deployment(c) for c in d.get("certificates", [])]
    d["hsts"] = Hsts(**d["hsts"]) if d.get("hsts") else None
    d["hsts_check"] = _check(d.get("hsts_check"))
    d["checks"] = {k: _check(v) for k, v in d.get("checks", {}).items()}
    d["post_quantum"] = _post_quantum(d.get("post_quantum"))
    sims = d.get("client_simulation")
    d["client_simulation"] = None if sims is None else [ClientHandshake(**c) for c in sims]
    d["without_sni"] = WithoutSni(**d["without_sni"]) if d.get("without_sni") else None
    d["caa"] = _caa(d.get("caa"))
    return ScanFacts(**d)


def _caa(d: dict | None) -> CaaFacts | None:
    if not d:
        return None
    return CaaFacts(queried=tuple(d.get("queried", ())), records=tuple(CaaRecord(**r) for r in d.get("records", ())),
                    error=d.get("error", ""), skipped=d.get("skipped", ""))


def _post_quantum(d: dict | None) -> PostQuantum | None:
    if not d:
        return None
    return PostQuantum(**{**d, "check": _check(d.get("check")), "accepted": tuple(d.get("accepted", ())),
                          "rejected": tuple(d.get("rejected", ()))})
