"""Mozilla server-side TLS profiles (loaded from Mozilla's published guidelines JSON) and our own checker.

sslyze's checker needs its live result objects, so it cannot judge a stored scan or a *predicted*
configuration (what the server would look like after a fix). `check_profile` re-implements it over
`ScanFacts` with the same issue keys, so its output and sslyze's can be shown and explained alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from importlib.resources import files

from tlsaudit.domain.findings import is_trusted
from tlsaudit.domain.findings.registry import aware
from tlsaudit.domain.scanfacts import BAD, OK, PROTOCOLS, ScanFacts

# The pinned guidelines: the newest Mozilla publishes (the generator's latest.json names it), copied
# byte for byte from mozilla/ssl-config-generator (src/static/guidelines/6.0.json, commit
# f196de90d2d6, released with the generator's 6.0.0 of GUIDELINES_DATE). A test holds the file to its
# digest, and workers/tls/mozilla.py hands the same file to sslyze's checker, so both judge alike.
GUIDELINES_VERSION = "6.0"
GUIDELINES_DATE = "2026-04-06"
GUIDELINES_URL = "https://ssl-config.mozilla.org/guidelines/6.0.json"
GUIDELINES_FILE = "mozilla-server-side-tls-6.0.json"
GUIDELINES_SHA256 = "6877732cd3e8e1cea395b4be160dd1d17e5571d3cab54932d285f943b63de124"

# Strictest first: `best_profile` walks this order. Mozilla withdrew "old" in 6.0.
PROFILE_NAMES = ("modern", "intermediate")

# The hybrid post-quantum group 6.0 puts first: OpenSSL knows it from 3.5, Go from 1.24.
HYBRID_GROUP = "X25519MLKEM768"

# Mozilla writes "TLSv1"; ScanFacts writes "TLSv1.0".
_MOZILLA_VERSION_NAME = {"SSLv2": "SSLv2", "SSLv3": "SSLv3", "TLSv1.0": "TLSv1", "TLSv1.1": "TLSv1.1",
                         "TLSv1.2": "TLSv1.2", "TLSv1.3": "TLSv1.3"}
_OUR_VERSION_NAME = {v: k for k, v in _MOZILLA_VERSION_NAME.items()}

# ANSI X9.62 and SECG names for the same curves (Mozilla uses the first, our certificates the second).
_CURVE_ALIASES = {"prime256v1": "secp256r1", "prime192v1": "secp192r1"}


@dataclass(frozen=True)
class Profile:
    name: str
    tls_versions: tuple[str, ...]           # ScanFacts names ("TLSv1.0", not Mozilla's "TLSv1")
    ciphersuites: tuple[str, ...]           # TLS 1.3
    ciphers_iana: tuple[str, ...]           # TLS <= 1.2, in the profile's order
    ciphers_openssl: tuple[str, ...]        # the same suites by OpenSSL name, in the generator's order
    tls_curves: tuple[str, ...]             # Mozilla (OpenSSL) names, in order
    certificate_types: tuple[str, ...]      # "ecdsa" / "rsa"
    certificate_curves: tuple[str, ...]
    certificate_signatures: tuple[str, ...]
    rsa_key_size: int | None
    dh_param_size: int | None
    ecdh_param_size: int
    maximum_certificate_lifespan: int       # days
    recommended_certificate_lifespan: int   # days
    hsts_min_age: int                       # seconds
    ocsp_staple: bool
    server_preferred_order: bool
    oldest_clients: tuple[str, ...]

    @property
    def mozilla_tls_versions(self) -> tuple[str, ...]:
        return tuple(_MOZILLA_VERSION_NAME[v] for v in self.tls_versions)

    @property
    def classical_curves(self) -> tuple[str, ...]:
        """The groups a TLS library older than OpenSSL 3.5 accepts (it refuses the whole list otherwise)."""
        return tuple(c for c in self.tls_curves if "MLKEM" not in c.upper())


def profiles_from(guidelines: dict) -> dict[str, Profile]:
    """Our profiles from Mozilla's guidelines document, which must be the pinned version:
    a newer file dropped in data/ cannot change what "intermediate" means until the pin (and with it
    the sslyze comparison test) moves too."""
    found = (str(guidelines.get("version")), guidelines.get("href"))
    if found != (GUIDELINES_VERSION, GUIDELINES_URL):
        raise ValueError(f"Mozilla guidelines {found[0]} from {found[1]}, "
                         f"expected {GUIDELINES_VERSION} from {GUIDELINES_URL}")
    return {name: _profile(name, guidelines["configurations"][name]) for name in PROFILE_NAMES}


# Fields whose value is not Mozilla's value of the same name.
_CONVERTED = {"name", "tls_versions", "ciphers_iana", "ciphers_openssl"}


def _profile(name: str, config: dict) -> Profile:
    """Lists become tuples (profiles are frozen), "TLSv1" becomes "TLSv1.0", and the cipher lists
    are lifted out of "ciphers" (Go and Caddy take the IANA names, as in the generator)."""
    same = {f.name: _frozen(config[f.name]) for f in fields(Profile) if f.name not in _CONVERTED}
    ciphers = config["ciphers"]
    return Profile(name=name, tls_versions=tuple(_OUR_VERSION_NAME[v] for v in config["tls_versions"]),
                   ciphers_iana=tuple(ciphers["iana"]), ciphers_openssl=tuple(ciphers["openssl"]), **same)


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


def guidelines_text() -> str:
    """The pinned file as published (sslyze's checker reads it too)."""
    return (files("tlsaudit.domain") / "data" / GUIDELINES_FILE).read_text(encoding="utf-8")


PROFILES: dict[str, Profile] = profiles_from(json.loads(guidelines_text()))
MODERN, INTERMEDIATE = (PROFILES[name] for name in PROFILE_NAMES)


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown Mozilla profile {name!r}; expected one of {', '.join(PROFILE_NAMES)}") from None


def normalise_curve(name: str) -> str:
    """One spelling per curve: SECG names, lower case, except X25519/X448."""
    lowered = name.lower()
    if lowered in ("x25519", "x448"):
        return lowered.upper()
    return _CURVE_ALIASES.get(lowered, lowered)


# --- our checker over ScanFacts ---------------------------------------------------------------

def check_profile(facts: ScanFacts, profile: str) -> dict[str, str]:
    """Issues that keep `facts` from meeting `profile`, keyed like sslyze's checker ({} = compliant).

    Inputs that were not tested are named under the extra key "incomplete" (sslyze raises
    ServerScanResultIncomplete instead); a result with only that key means "could not tell".
    """
    p = get_profile(profile)
    issues: dict[str, str] = {}
    issues.update(_check_certificates(facts, p))
    issues.update(_check_versions_and_ciphers(facts, p))
    issues.update(_check_curves(facts, p))
    issues.update(_check_vulnerabilities(facts))
    missing = _untested_inputs(facts)
    if missing:
        issues["incomplete"] = "Not tested, so compliance cannot be confirmed: " + ", ".join(missing) + "."
    return issues


def profile_report(facts: ScanFacts) -> dict[str, dict]:
    """{"modern": {"compliant": bool | None, "issues": {...}, "guidelines": "6.0"}, ...} for each profile."""
    report = {}
    for name in PROFILE_NAMES:
        issues = check_profile(facts, name)
        real = {k: v for k, v in issues.items() if k != "incomplete"}
        compliant = False if real else (None if issues else True)
        report[name] = {"compliant": compliant, "issues": issues, "guidelines": GUIDELINES_VERSION}
    return report


def best_profile(report: dict) -> str | None:
    """The strictest profile the report says is met, or None."""
    for name in PROFILE_NAMES:
        entry = report.get(name) or {}
        if entry.get("compliant") is True:
            return name
    return None


def _untested_inputs(facts: ScanFacts) -> list[str]:
    missing = [f"protocol {v}" for v in PROTOCOLS if not facts.protocol_tested(v)]
    if not facts.curves_check.tested:
        missing.append("elliptic curves")
    if not facts.certificates:
        missing.append("certificate")
    for name in ("heartbleed", "ccs_injection", "robot", "compression", "fallback_scsv",
                 "secure_renegotiation", "extended_master_secret"):
        if not facts.check(name).tested:
            missing.append(name.replace("_", " "))
    return missing


def signature_algorithm(deployment) -> str | None:
    """The leaf's signature algorithm in Mozilla's (OpenSSL) spelling, e.g. "sha256WithRSAEncryption".

    Read from the leaf itself; audits from before that field existed infer it from the *issuer's* key
    type, which needs the next certificate in the chain (or the leaf itself when self-signed). None
    when we cannot tell.
    """
    leaf = deployment.leaf
    if leaf.signature_algorithm:
        return leaf.signature_algorithm
    if not leaf.signature_hash:
        return None
    if leaf.self_signed:
        issuer_type = leaf.key_type
    elif len(deployment.chain) > 1:
        issuer_type = deployment.chain[1].key_type
    else:
        return None
    digest = leaf.signature_hash.upper().replace("-", "")
    if issuer_type == "RSA":
        return f"{digest.lower()}WithRSAEncryption"
    if issuer_type == "EC":
        return f"ecdsa-with-{digest}"
    return None


# The verdict's words when only the dates fail (audit_report.dated_by_custom_ca writes them).
DATES_FAIL = "only its validity dates fail, your custom CA vouches for the chain"


def within_dates(cert, now) -> bool:
    return aware(cert.not_before) <= aware(now) <= aware(cert.not_after)


def _check_certificates(facts: ScanFacts, p: Profile) -> dict[str, str]:
    issues: dict[str, str] = {}
    if not facts.certificates:
        return issues
    key_types: set[str] = set()
    signatures: set[str] = set()
    unknown_signature = False
    cert_curves = {normalise_curve(c) for c in p.certificate_curves}
    for dep in facts.certificates:
        leaf = dep.leaf
        # sslyze's path validation includes the host name, so a mismatch fails it too.
        # An expired chain fails path validation even when its CA is trusted (is_trusted leaves dates aside).
        if not (is_trusted(dep, facts) and dep.hostname_matches and within_dates(leaf, facts.started_at)):
            issues["certificate_path_validation"] = f"Certificate path validation failed for {leaf.subject}."
        if leaf.key_type == "EC":
            key_types.add("ecdsa")
            if not leaf.curve or normalise_curve(leaf.curve) not in cert_curves:
                issues["certificate_curves"] = (
                    f"Certificate curve is {leaf.curve}, should be one of {_fmt(p.certificate_curves)}.")
        elif leaf.key_type == "RSA":
            key_types.add("rsa")
            if p.rsa_key_size and leaf.key_bits < p.rsa_key_size:
                issues["rsa_key_size"] = f"RSA key size is {leaf.key_bits}, minimum allowed is {p.rsa_key_size}."
        else:
            key_types.add(leaf.key_type)
        sig = signature_algorithm(dep)
        if sig is None:
            unknown_signature = True
        else:
            signatures.add(sig)
        lifespan = (leaf.not_after - leaf.not_before).days
        if lifespan > p.maximum_certificate_lifespan:
            issues["maximum_certificate_lifespan"] = (
                f"Certificate life span is {lifespan} days, should be less than {p.maximum_certificate_lifespan}.")
    if not key_types & set(p.certificate_types):
        issues["certificate_types"] = (
            f"Deployed certificate types are {_fmt(sorted(key_types))}, "
            f"should have at least one of {_fmt(p.certificate_types)}.")
    # Only judge signatures when every leaf's algorithm is known: a guess would invent issues.
    if not unknown_signature and not signatures & set(p.certificate_signatures):
        issues["certificate_signatures"] = (
            f"Deployed certificate signatures are {_fmt(sorted(signatures))}, "
            f"should have at least one of {_fmt(p.certificate_signatures)}.")
    return issues


def _ecdh_bits(bits: int) -> int:
    # nassl reports X25519 as 253 bits; sslyze's checker adds 3, so do we.
    return bits + 3 if bits == 253 else bits


def _check_versions_and_ciphers(facts: ScanFacts, p: Profile) -> dict[str, str]:
    issues: dict[str, str] = {}
    versions = [v for v in PROTOCOLS if facts.supports(v)]
    extra_versions = [_MOZILLA_VERSION_NAME[v] for v in versions if v not in p.tls_versions]
    if extra_versions:
        issues["tls_versions"] = f"TLS versions {_fmt(extra_versions)} are supported, but should be rejected."
    supported = [s for s in facts.suites if facts.supports(s.protocol)]
    extra13 = _unique(s.name for s in supported if s.protocol == "TLSv1.3" and s.name not in p.ciphersuites)
    if extra13:
        issues["ciphersuites"] = f"TLS 1.3 cipher suites {_fmt(extra13)} are supported, but should be rejected."
    extra = _unique(s.name for s in supported if s.protocol != "TLSv1.3" and s.name not in p.ciphers_iana)
    if extra:
        issues["ciphers"] = f"Cipher suites {_fmt(extra)} are supported, but should be rejected."
    ecdh = [_ecdh_bits(s.kx_bits) for s in supported if s.kx_type == "ECDH" and s.kx_bits]
    if ecdh and min(ecdh) < p.ecdh_param_size:
        issues["ecdh_param_size"] = (
            f"ECDH parameter size is {min(ecdh)}, should be superior or equal to {p.ecdh_param_size}.")
    dh = [s.kx_bits for s in supported if s.kx_type == "DH" and s.kx_bits]
    if p.dh_param_size and dh and min(dh) < p.dh_param_size:
        issues["dh_param_size"] = (
            f"DH parameter size is {min(dh)}, should be superior or equal to {p.dh_param_size}.")
    return issues


def _check_curves(facts: ScanFacts, p: Profile) -> dict[str, str]:
    allowed = {normalise_curve(c) for c in p.tls_curves}
    extra = _unique(c for c in facts.curves if normalise_curve(c) not in allowed)
    if facts.curves_check.status == OK and extra:
        return {"tls_curves": f"TLS curves {_fmt(extra)} are supported, but should be rejected."}
    return {}


_VULNERABILITY_ISSUES = {
    "compression": ("tls_vulnerability_compression", "Server is vulnerable to TLS compression attacks."),
    "ccs_injection": ("tls_vulnerability_ccs_injection", "Server is vulnerable to the OpenSSL CCS injection attack."),
    "fallback_scsv": ("tls_vulnerability_fallback_scsv",
                      "Server is vulnerable to TLS downgrade attacks because it does not support the "
                      "TLS_FALLBACK_SCSV mechanism."),
    "heartbleed": ("tls_vulnerability_heartbleed", "Server is vulnerable to the OpenSSL Heartbleed attack."),
    "secure_renegotiation": ("tls_vulnerability_renegotiation",
                             "Server is vulnerable to the insecure renegotiation attack."),
    "extended_master_secret": ("tls_vulnerability_extended_master_secret",
                               "Server does not support the Extended Master Secret TLS extension."),
}


def _check_vulnerabilities(facts: ScanFacts) -> dict[str, str]:
    issues = {key: text for name, (key, text) in _VULNERABILITY_ISSUES.items() if facts.check(name).status == BAD}
    robot = facts.check("robot")
    # Like sslyze: only a strong oracle fails the profile.
    if robot.status == BAD and robot.value == "VULNERABLE_STRONG_ORACLE":
        issues["tls_vulnerability_robot"] = "Server is vulnerable to the ROBOT attack."
    return issues


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))


def _fmt(items) -> str:
    return "{" + ", ".join(f"'{i}'" for i in items) + "}"


# --- plain-words explanations of checker issues -------------------------------------------

_QUOTED = re.compile(r"'([^']+)'")
_NUMBERS = re.compile(r"\d+")


def explain_issues(profile: str, issues: dict[str, str]) -> list[str]:
    """One plain sentence per checker issue (ours or sslyze's: same keys, same texts)."""
    p = get_profile(profile)
    return [_explain(p, key, text) for key, text in issues.items()]


def _names(text: str) -> list[str]:
    return _QUOTED.findall(text)


def _first_number(text: str, otherwise: str) -> str:
    """The size or count an issue text names first (sslyze's texts put it first), else `otherwise`."""
    numbers = _NUMBERS.findall(text)
    return numbers[0] if numbers else otherwise


def _and(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _explain(p: Profile, key: str, text: str) -> str:
    """The fix for one of sslyze's checker issues (`key`: the profile's field), in a site owner's words."""
    if key in _VULNERABILITIES:
        return _VULNERABILITIES[key]
    explainer = _EXPLAINERS.get(key)
    return explainer(p, f"the Mozilla {p.name} profile", text) if explainer else f"The Mozilla {p.name} profile: {text}"


def _versions(p: Profile, label: str, text: str) -> str:
    names = [_OUR_VERSION_NAME.get(n, n) for n in _names(text)]
    allowed = _and([v.replace("v", " ") for v in p.tls_versions])
    return f"Turn off {_and(names) or 'the extra protocol versions'}: {label} allows only {allowed}."


def _ciphers(p: Profile, label: str, text: str) -> str:
    names = _names(text)
    return (f"Remove {len(names)} cipher suite{'s' if len(names) != 1 else ''} that {label} does not allow "
            f"for TLS 1.2 and older: {', '.join(names)}." if names else
            f"Some cipher suites for TLS 1.2 and older are not allowed by {label}.")


def _ciphersuites(p: Profile, label: str, text: str) -> str:
    return f"Limit TLS 1.3 to {', '.join(p.ciphersuites)}; also enabled: {', '.join(_names(text)) or text}."


def _dh_size(p: Profile, label: str, text: str) -> str:
    return (f"Your Diffie-Hellman group is {_first_number(text, 'too small')} bits; {label} needs at least "
            f"{p.dh_param_size} bits (use the ffdhe2048 group) or drop the DHE suites.")


def _ecdh_size(p: Profile, label: str, text: str) -> str:
    return (f"An elliptic-curve group of {_first_number(text, 'too small')} bits is in use; {label} needs at least "
            f"{p.ecdh_param_size} bits (X25519, P-256 or P-384).")


def _curves(p: Profile, label: str, text: str) -> str:
    return (f"Stop offering the key-exchange groups {_and(_names(text)) or 'listed'}; {label} allows "
            f"{_and(list(p.tls_curves))}.")


def _path_validation(p: Profile, label: str, text: str) -> str:
    if DATES_FAIL in text:
        return ("Your certificate is outside its validity dates: renew it with the CA that issued it "
                "(your custom CA vouches for the chain).")
    return ("Browsers do not trust your certificate chain: install a certificate from a public CA "
            "and serve its intermediate certificates.")


def _certificate_types(p: Profile, label: str, text: str) -> str:
    wanted = _and([t.upper() if t == "rsa" else "ECDSA" for t in p.certificate_types])
    return f"Your certificate's key type is not allowed by {label}: it needs an {wanted} certificate."


def _certificate_curves(p: Profile, label: str, text: str) -> str:
    return f"Your ECDSA certificate uses a curve {label} does not allow; use P-256 or P-384."


def _certificate_signatures(p: Profile, label: str, text: str) -> str:
    return (f"Your certificate's signature algorithm is not allowed by {label} "
            f"(allowed: {', '.join(p.certificate_signatures)}); ask your CA for a matching chain.")


def _rsa_size(p: Profile, label: str, text: str) -> str:
    return f"Your RSA key is {_first_number(text, 'too small')} bits; {label} needs at least {p.rsa_key_size} bits."


def _lifespan(p: Profile, label: str, text: str) -> str:
    return (f"Your certificate is valid for {_first_number(text, 'too many')} days; {label} allows at most "
            f"{p.maximum_certificate_lifespan} days (it recommends {p.recommended_certificate_lifespan}).")


def _incomplete(p: Profile, label: str, text: str) -> str:
    return f"Some checks did not run, so compliance with {label} cannot be confirmed. {text}"


# sslyze's checker field -> its explainer (as the findings' registry: one function per topic)
_EXPLAINERS = {
    "tls_versions": _versions, "ciphers": _ciphers, "ciphersuites": _ciphersuites, "dh_param_size": _dh_size,
    "ecdh_param_size": _ecdh_size, "tls_curves": _curves, "certificate_path_validation": _path_validation,
    "certificate_types": _certificate_types, "certificate_curves": _certificate_curves,
    "certificate_signatures": _certificate_signatures, "rsa_key_size": _rsa_size,
    "maximum_certificate_lifespan": _lifespan, "incomplete": _incomplete,
}
_VULNERABILITIES = {
    "tls_vulnerability_compression": "Turn off TLS compression: it lets attackers recover secrets (CRIME).",
    "tls_vulnerability_ccs_injection": "Update OpenSSL: the server is vulnerable to CCS injection (CVE-2014-0224).",
    "tls_vulnerability_fallback_scsv": "Support TLS_FALLBACK_SCSV so attackers cannot force older protocol "
                                       "versions (a current OpenSSL does this by itself).",
    "tls_vulnerability_heartbleed": "Update OpenSSL now and replace your keys: the server leaks memory "
                                    "through Heartbleed (CVE-2014-0160).",
    "tls_vulnerability_robot": "Disable RSA key exchange or patch the server: it is vulnerable to ROBOT.",
    "tls_vulnerability_renegotiation": "Enable secure renegotiation (RFC 5746); current TLS libraries "
                                       "support it by default.",
    "tls_vulnerability_extended_master_secret": "Enable the Extended Master Secret extension (RFC 7627) by "
                                                "updating the TLS library.",
}

