"""Certificates: validity, name, trust, chain, signatures, keys and revocation, judged per deployment
(a server with an RSA and an ECDSA certificate gets both checked; the worst outcome wins)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from tlsaudit.domain.alerts import organization_of
from tlsaudit.domain.caa import judge as judge_caa
from tlsaudit.domain.distrust import SERVER_AUTH_ONLY_FROM, basis_words, distrusts, other_purposes
from tlsaudit.domain.distrust import read_at_all as distrust_read
from tlsaudit.domain.distrust import table_version as distrust_table_version
from tlsaudit.domain.findings.registry import SEVERITIES, Context, Outcome, aware, fail, info, ok, rule, untested
from tlsaudit.domain.revocationwords import revocation_words
from tlsaudit.domain.scanfacts import GOOD, NOT_TESTED, OK, REVOKED, Certificate, CertificateDeployment, ScanFacts
from tlsaudit.domain.trustwords import trust_error_words, trust_summary

MAX_CERT_LIFETIME_DAYS = 398      # CA/B Forum limit for certificates issued since 2020-09-01
LIFETIME_RULE_START = datetime(2020, 9, 1, tzinfo=timezone.utc)


def _label(dep: CertificateDeployment, facts: ScanFacts) -> str:
    if len(facts.certificates) < 2:
        return ""
    return f"{dep.leaf.key_type} certificate: "


def each_deployment(ctx: Context, check: Callable[[Context, CertificateDeployment], Outcome | None]) -> Outcome | None:
    """Run `check` on every deployment (RSA + ECDSA give two) and merge: worst outcome wins."""
    facts = ctx.facts
    if not facts.certificates:
        return untested(facts.errors.get("certificate_info", "no certificate was retrieved"))
    outcomes = [(dep, o) for dep in facts.certificates if (o := check(ctx, dep)) is not None]
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
    return aware(dt).strftime("%Y-%m-%d")


@rule("cert.expired", "critical", "Certificate expired", "Certificate within its validity period",
      "An expired certificate makes every browser show a full-page warning. Renew it and set up "
      "automatic renewal (for example with an ACME client).", over=each_deployment)
def cert_expired(ctx: Context, dep: CertificateDeployment) -> Outcome:
    expired = [c for c in _chain_to_check(dep) if aware(c.not_after) < ctx.now]
    if expired:
        return fail("; ".join(f"{c.subject} expired on {_date(c.not_after)}" for c in expired))
    return ok(f"valid until {_date(dep.leaf.not_after)}")


@rule("cert.not_yet_valid", "critical", "Certificate not yet valid", "Certificate already valid",
      "The certificate's start date is in the future, so browsers reject it. Usually the server clock "
      "or the issuing process is wrong.", over=each_deployment)
def cert_not_yet_valid(ctx: Context, dep: CertificateDeployment) -> Outcome:
    future = [c for c in _chain_to_check(dep) if aware(c.not_before) > ctx.now]
    if future:
        return fail("; ".join(f"{c.subject} valid from {_date(c.not_before)}" for c in future))
    return ok(f"valid since {_date(dep.leaf.not_before)}")


@rule("cert.expires_soon", "low", "Certificate expires soon", "Certificate not expiring within 30 days",
      "When the certificate expires, visitors get a browser warning. Renew it now, and automate "
      "renewal so it cannot happen again.", over=each_deployment)
def cert_expires_soon(ctx: Context, dep: CertificateDeployment) -> Outcome | None:
    left = aware(dep.leaf.not_after) - ctx.now
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


@rule("cert.hostname_mismatch", "critical", "Certificate does not match the host name",
      "Certificate matches the host name",
      "The certificate does not list this host name, so browsers refuse the connection with a "
      "warning. Issue a certificate that includes the name (or a matching wildcard).", over=each_deployment)
def cert_hostname_mismatch(ctx: Context, dep: CertificateDeployment) -> Outcome:
    names = ", ".join(dep.leaf.san_dns + dep.leaf.san_ip) or "no subjectAltName"
    if dep.hostname_matches:
        return ok(f"{ctx.facts.host} matches ({names})")
    return fail(f"{ctx.facts.host} is not in the certificate's names: {names}")


def is_trusted(dep: CertificateDeployment, facts: ScanFacts) -> bool:
    """Trusted by Mozilla's store, or by the organisation's own CA when it supplied one.

    Like the grader, a store that failed only on the host name ("no matching subjectAltName")
    counts as trusted: the mismatch is cert.hostname_mismatch's business; so does one that failed
    only on the dates (the chain verifies inside them): that is cert.expired's.
    """
    stores = {"Mozilla", "Custom CA"} if facts.trust_use_custom_ca else {"Mozilla"}
    return any(t.trusted or t.dates_only or _is_name_error(t.error) for t in dep.trust if t.store in stores)


def anchored_publicly(dep: CertificateDeployment) -> bool:
    """The chain ends at a root of a public store (Mozilla, Apple, Android, Windows...), judged apart
    from its dates and host name. Without trust results it is assumed public: the stricter reading."""
    if not dep.trust:
        return True
    return any(t.trusted or t.dates_only or _is_name_error(t.error) for t in dep.trust if t.store != "Custom CA")


def trusted_privately(dep: CertificateDeployment) -> bool:
    """Trusted through the organization's own CA and by no public store."""
    return not anchored_publicly(dep) and any(t.store == "Custom CA" and (t.trusted or t.dates_only)
                                              for t in dep.trust)


def _is_name_error(error: str) -> bool:
    return trust_error_words(error) == "the certificate does not cover the host name"


@rule("cert.untrusted", "critical", "Certificate not trusted", "Certificate trusted",
      "Browsers do not trust the certificate chain, so visitors get a security warning. Typical causes: "
      "an unknown or private CA, a missing intermediate, or a distrusted root.", over=each_deployment)
def cert_untrusted(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if not dep.trust:
        return untested("trust validation did not run")
    if is_trusted(dep, ctx.facts):
        return ok(_trusted_words(dep, ctx.facts))
    return fail(trust_summary(dep.trust))


def _trusted_words(dep: CertificateDeployment, facts: ScanFacts) -> str:
    """Who vouches for the chain, said once: the stores that do not (a private CA is unknown to the
    public stores by design) are named in one clause, not with one verifier message each."""
    trusted = [t.store for t in dep.trust if t.trusted or t.dates_only or _is_name_error(t.error)]
    others = [t.store for t in dep.trust if t.store not in trusted]
    dated = [t.store for t in dep.trust if t.dates_only]
    text = f"trusted by {', '.join(trusted)}"
    if dated:
        text += " apart from its validity dates (see “Certificate expired”)" if len(dated) == len(trusted) else (
            f" ({', '.join(dated)}: apart from its validity dates)")
    if any(t.weak_key_only for t in dep.trust):
        text += (" as browsers judge it (OpenSSL clients at security level 2 refuse its weak key: see “Weak key "
                 "in the certificate chain”)")
    if others:
        text += f"; not by {', '.join(others)}"
        if facts.trust_use_custom_ca and "Custom CA" in trusted:
            text += " (they do not know your custom CA)"
    return text


@rule("cert.self_signed", "critical", "Self-signed certificate", "Certificate issued by a CA",
      "A self-signed certificate vouches for itself, so no browser can verify it and visitors see a "
      "warning. Use a certificate from a public CA such as Let's Encrypt.", over=each_deployment)
def cert_self_signed(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.leaf.self_signed:
        return fail(f"{dep.leaf.subject} is signed by itself")
    return ok(f"issued by {dep.leaf.issuer}")


@rule("cert.chain_incomplete", "medium", "Certificate chain incomplete", "Certificate chain complete",
      "The server does not send the intermediate certificate(s). Desktop browsers may fetch them, but "
      "many mobile apps, API clients and tools fail. The grade is capped at B.", over=each_deployment)
def cert_chain_incomplete(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.chain_complete is None:
        return untested("chain completeness could not be determined")
    if dep.chain_complete:
        return ok(f"{len(dep.chain)} certificates sent")
    return fail(f"only {len(dep.chain)} certificate(s) sent; an intermediate for {dep.leaf.issuer} is missing")


@rule("cert.chain_order", "low", "Certificate chain out of order", "Certificate chain in order",
      "The certificates are sent in the wrong order. Browsers cope, but stricter clients may fail: "
      "list the leaf first, then each issuer.", over=each_deployment)
def cert_chain_order(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.chain_in_order is None:
        return untested("chain order could not be determined")
    if dep.chain_in_order:
        return ok("leaf first, then each issuer")
    return fail("sent as " + " -> ".join(c.subject for c in dep.chain))


@rule("cert.weak_intermediate", "high", "Weak key in the certificate chain", "Every intermediate key is strong",
      "An intermediate certificate has an RSA key under 2048 bits (or an EC key under 224). Browsers still "
      "accept the chain, but OpenSSL clients at their default security level (curl, Python, many API "
      "clients on current Linux distributions) refuse it, and such a key can be factored by a determined "
      "attacker. The grade scores the server's own key; ask the CA for a chain whose keys are 2048 bits or "
      "more.", over=each_deployment)
def cert_weak_intermediate(ctx: Context, dep: CertificateDeployment) -> Outcome:
    weak = weak_intermediates(dep)
    if not weak:
        return ok("every intermediate key is 2048-bit RSA (or 224-bit EC) or more")
    refused = " (browsers accept the chain; OpenSSL clients at security level 2 refuse it)" if any(
        t.weak_key_only for t in dep.trust) else ""
    return fail("; ".join(f"{c.subject} has a {c.key_bits}-bit {c.key_type} key" for c in weak) + refused)


def weak_intermediates(dep: CertificateDeployment) -> list[Certificate]:
    """The sent CA certificates (a self-signed root aside: clients use their own copy) with short keys."""
    extra = set(dep.chain_extra or ())      # off the leaf's path: no client verifies them
    return [c for c in dep.chain[1:] if not c.self_signed and c.subject not in extra and
            ((c.key_type == "RSA" and c.key_bits < 2048) or (c.key_type == "EC" and c.key_bits < 224))]


@rule("cert.chain_extra", "low", "Certificate chain contains extra certificates",
      "No extra certificates in the chain",
      "The server sends certificates that are not on the way from its certificate to the root. Clients "
      "skip them, but every handshake carries their bytes, and strict clients may give up: send only the "
      "leaf and its intermediates.", over=each_deployment)
def cert_chain_extra(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.chain_extra is None:
        return untested("the sent chain was not examined for extra certificates")
    if dep.chain_extra:
        return fail(f"{len(dep.chain_extra)} extra: {'; '.join(dep.chain_extra)}")
    return ok("every sent certificate is on the way to the root")


@rule("cert.chain_anchor", "info", "Root certificate sent in the chain", "Root certificate not sent",
      "The server also sends the root certificate, which clients already have. It is harmless but adds "
      "bytes to every handshake.", over=each_deployment)
def cert_chain_anchor(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.chain_has_anchor is None:
        return untested("could not tell whether the root is sent")
    if dep.chain_has_anchor:
        return fail(f"root sent: {dep.chain[-1].subject}")
    return ok("root not sent")


@rule("cert.sha1", "high", "SHA-1 signature in the chain", "No SHA-1 signatures",
      "SHA-1 signatures can be forged (SHAttered, 2017), so browsers no longer trust certificates "
      "signed with it. Reissue the certificate with SHA-256.", over=each_deployment)
def cert_sha1(ctx: Context, dep: CertificateDeployment) -> Outcome:
    sha1 = [c.subject for c in _chain_to_check(dep) if (c.signature_hash or "").lower() == "sha1"]
    if dep.chain_has_sha1 or sha1:
        return fail("SHA-1 signed: " + (", ".join(sha1) or "a certificate in the verified chain"))
    if dep.chain_has_sha1 is None:
        return untested("the verified chain was not available")
    return ok("signatures: " + ", ".join(sorted({c.signature_hash or "none" for c in dep.chain})))


@rule("cert.md5", "critical", "MD5 or MD2 certificate signature", "No MD5/MD2 signatures",
      "MD5 and MD2 signatures are trivially forgeable; attackers have created rogue CA certificates "
      "this way. SSL Labs grades them F.", over=each_deployment)
def cert_md5(ctx: Context, dep: CertificateDeployment) -> Outcome:
    weak = [f"{c.subject} ({c.signature_hash})" for c in _chain_to_check(dep)
            if (c.signature_hash or "").lower() in ("md5", "md2")]
    return fail(", ".join(weak)) if weak else ok("no MD5/MD2 signature")


@rule("cert.rsa_weak", "high", "RSA key shorter than 2048 bits", "RSA key 2048 bits or more",
      "RSA keys under 2048 bits are within reach of well-funded attackers, and CAs no longer issue "
      "them. Generate a new 2048-bit (or larger) key, or switch to ECDSA P-256.", over=each_deployment)
def cert_rsa_weak(ctx: Context, dep: CertificateDeployment) -> Outcome | None:
    leaf = dep.leaf
    if leaf.key_type != "RSA":
        return None
    if leaf.key_bits < 1024:
        return fail(f"RSA {leaf.key_bits} bits", severity="critical")
    if leaf.key_bits < 2048:
        return fail(f"RSA {leaf.key_bits} bits")
    return ok(f"RSA {leaf.key_bits} bits")


@rule("cert.rsa_exponent_1", "critical", "RSA public exponent is 1", "RSA public exponent is sane",
      "An RSA key with public exponent 1 does not encrypt at all. The key must be replaced; SSL Labs "
      "grades it F.", over=each_deployment)
def cert_rsa_exponent_1(ctx: Context, dep: CertificateDeployment) -> Outcome | None:
    leaf = dep.leaf
    if leaf.key_type != "RSA":
        return None
    if leaf.rsa_exponent is None:
        return untested("RSA exponent not recorded")
    return fail("exponent 1") if leaf.rsa_exponent == 1 else ok(f"exponent {leaf.rsa_exponent}")


@rule("cert.ec_weak", "medium", "EC key smaller than 256 bits", "EC key 256 bits or more",
      "Elliptic-curve keys under 256 bits offer less than 128-bit security. Use P-256 or P-384.",
      over=each_deployment)
def cert_ec_weak(ctx: Context, dep: CertificateDeployment) -> Outcome | None:
    leaf = dep.leaf
    if leaf.key_type != "EC":
        return None
    text = f"EC {leaf.key_bits} bits ({leaf.curve or 'unknown curve'})"
    return fail(text) if leaf.key_bits < 256 else ok(text)


@rule("cert.lifetime", "medium", "Certificate lifetime over 398 days", "Certificate lifetime 398 days or less",
      "Since September 2020 browsers reject newly issued certificates valid for more than 398 days. "
      "Shorter lifetimes limit the damage of a leaked key; automate renewal.", over=each_deployment)
def cert_lifetime(ctx: Context, dep: CertificateDeployment) -> Outcome:
    leaf = dep.leaf
    days = (leaf.not_after - leaf.not_before).days
    text = f"valid for {days} days ({_date(leaf.not_before)} to {_date(leaf.not_after)})"
    if days <= MAX_CERT_LIFETIME_DAYS:
        return ok(text)
    if not anchored_publicly(dep):
        # Chrome and Apple apply the limit to publicly trusted CAs only: a private root's leaf loads.
        title = "Certificate lifetime over 398 days, allowed for a private CA"
        if trusted_privately(dep):
            return info(text + "; the 398-day limit binds public CAs, and this chain ends at a private root, "
                               "which browsers exempt", severity="info", title=title)
        return info(text + "; the 398-day limit binds public CAs only, and no public store trusts this chain "
                           "(see “Certificate not trusted”)", severity="info", title=title)
    if aware(leaf.not_before) >= LIFETIME_RULE_START:
        return fail(text + "; issued after 2020-09-01, so Apple and Chrome reject it", severity="high")
    return fail(text + "; issued before 2020-09-01", severity="low")


@rule("cert.symantec", "high", "Distrusted Symantec certificate", "Not a distrusted Symantec certificate",
      "Browsers distrusted the old Symantec PKI (Thawte, GeoTrust, RapidSSL, VeriSign roots) in 2018. "
      "Replace the certificate with one from a current CA.", over=each_deployment)
def cert_symantec(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.symantec_distrusted is None:
        return untested("the verified chain was not available")
    return fail(f"chain anchored in a distrusted Symantec root (issuer {dep.leaf.issuer})") \
        if dep.symantec_distrusted else ok("not a Symantec chain")


@rule("cert.distrusted_after", "critical", "CA distrusted for certificates issued after a date",
      "No dated distrust applies",
      "Browsers now distrust some CAs by date: certificates issued after it are refused while the CA's root stays "
      "in the store, so a store check alone calls them trusted (Chrome reads the date from the earliest "
      "Certificate Transparency timestamp, Mozilla and Java from notBefore). A certificate issued before the date "
      "keeps working until it expires; its renewal must come from another CA.", over=each_deployment)
def cert_distrusted_after(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if not distrust_read(dep):
        return untested("the chain's keys were not recorded (an audit before the distrust table)")
    found = distrusts(dep)
    if not found:
        return ok(f"no dated distrust applies to this chain (table of {distrust_table_version()})")
    applied = [d for d in found if d.applies]
    if applied:
        browser = any(d.in_a_browser for d in applied)
        return fail("; ".join(_distrust_text(d) for d in found), severity="critical" if browser else "high")
    return fail("; ".join(_distrust_text(d) for d in found), severity="medium",
                title="CA distrusted for new certificates: renew from another CA")


def _distrust_text(d) -> str:
    entry = d.entry
    when = f"{basis_words(d.basis_used)[4:]} {d.issued:%Y-%m-%d}" if d.issued else "an unknown issuance date"
    if d.applies:
        return (f"{entry.store} distrusts {entry.ca} certificates issued after {entry.after:%Y-%m-%d} and refuses "
                f"this one ({when})")
    return (f"{entry.store} does not trust {entry.ca} certificates issued after {entry.after:%Y-%m-%d}: this one "
            f"({when}) is still trusted until it expires, but its renewal must come from another CA")


@rule("cert.server_auth_only", "medium", "Certificate allows more than server authentication",
      "Certificate for server authentication only",
      "Chrome's root program requires hierarchies dedicated to TLS server authentication for certificates "
      "issued from 2026-06-15, and public CAs now issue leaves for serverAuth only (Let's Encrypt dropped "
      "clientAuth on 2026-02-11). A server that reuses its certificate for outbound client authentication (some "
      "SMTP and XMPP setups) needs a client certificate of its own before its next renewal.", over=each_deployment)
def cert_server_auth_only(ctx: Context, dep: CertificateDeployment) -> Outcome:
    leaf = dep.leaf
    if leaf.ekus is None:
        return untested("the extended key usages were not recorded (an audit before this check)")
    purposes = other_purposes(leaf)
    if not purposes:
        return ok("serverAuth only")
    text = f"the leaf also allows {', '.join(purposes)}"
    if not anchored_publicly(dep):
        return info(text + "; the root program's rule binds public CAs only, and this chain ends at a private "
                           "root", severity="info", title="Certificate allows more than server authentication "
                                                          "(private CA)")
    if aware(leaf.not_before) >= SERVER_AUTH_ONLY_FROM:
        return fail(text + f"; issued {_date(leaf.not_before)}, after Chrome's serverAuth-only rule took effect "
                           "(2026-06-15)")
    return info(text + f"; issued {_date(leaf.not_before)}, before the rule: its renewal will allow server "
                       "authentication only", severity="low")


@rule("cert.caa", "high", "CAA does not let this certificate's CA issue the next one",
      "CAA allows this certificate's CA",
      "CAA records (RFC 8659) name the CAs that may issue certificates for a domain; every public CA must check "
      "them, climbing from the host name to its parents, and refuses when they do not name it or cannot be read. "
      "Records that leave out the CA you renew with make the next renewal fail; none at all let any CA issue.")
def cert_caa(ctx: Context) -> Outcome | None:
    facts = ctx.facts
    if facts.caa is None or facts.caa.skipped:
        return None   # not looked up: an audit stored before CAA was read, or a name no public CA issues for
    if not facts.certificates:
        return untested(facts.errors.get("certificate_info", "no certificate was retrieved"))
    dep = facts.certificates[0]
    if trusted_privately(dep):
        return info("the certificate comes from your private CA, which does not check CAA", severity="info",
                    title="CAA does not apply to a private CA")
    leaf = dep.leaf
    wildcard = facts.host.lower() not in (name.lower() for name in leaf.san_dns)
    verdict = judge_caa(facts.caa, organization_of(leaf.issuer), wildcard)
    problems = "; ".join(verdict.problems)
    if verdict.allowed is False:
        return fail(verdict.text + (f"; also: {problems}" if problems else ""))
    if verdict.allowed is None:
        return untested(verdict.text) if facts.caa.error else info(verdict.text, severity="low")
    if problems:
        return fail(f"{verdict.text}, but {problems}", severity="medium", title="CAA records with errors")
    if not facts.caa.records:
        return info(verdict.text + "; a CAA record naming your CA keeps others from issuing for it",
                    severity="low", title="No CAA records")
    return ok(verdict.text)


@rule("cert.revoked", "critical", "Certificate revoked", "Certificate not revoked",
      "The certificate's CA has revoked it (usually because its key leaked or it was issued in error), "
      "so browsers that check revocation refuse it. SSL Labs grades a revoked certificate T. Get a new "
      "certificate with a new key.", over=each_deployment)
def cert_revoked(ctx: Context, dep: CertificateDeployment) -> Outcome:
    revocation = dep.revocation
    if revocation is None:
        return untested("this audit was made before revocation was checked")
    if revocation.status in (REVOKED, GOOD):
        return (fail if revocation.status == REVOKED else ok)(revocation_words(revocation))
    return untested(revocation.reason)


@rule("cert.ocsp_stapling", "low", "OCSP stapling not enabled", "OCSP stapling enabled",
      "With OCSP stapling the server attaches proof that its certificate is not revoked. Browsers then do "
      "not have to ask the CA: faster first visits and better privacy for your visitors.", over=each_deployment)
def cert_ocsp_stapling(ctx: Context, dep: CertificateDeployment) -> Outcome:
    c = dep.ocsp_stapled
    if c.status != OK and dep.leaf.ocsp_urls == ():
        # Let's Encrypt and others publish revocation by CRL only since 2025: nothing exists to staple
        return ok("the certificate names no OCSP responder (its CA publishes revocation by CRL): nothing to staple")
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if c.status == OK:
        return ok(c.detail or "valid OCSP response stapled")
    return fail(c.detail or "no OCSP response stapled")


@rule("cert.must_staple", "high", "Must-staple certificate without a stapled OCSP response",
      "No must-staple violation",
      "The certificate promises that the server always staples an OCSP response (OCSP must-staple). "
      "The server does not, and Firefox refuses such connections outright.", over=each_deployment)
def cert_must_staple(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if not dep.must_staple:
        return ok("certificate does not require stapling")
    if dep.leaf.ocsp_urls == ():
        return fail("must-staple set, but the certificate names no OCSP responder: no server can ever staple "
                    "it, and Firefox refuses the site")
    c = dep.ocsp_stapled
    if c.status == NOT_TESTED:
        return untested(c.reason)
    return ok("must-staple and stapled") if c.status == OK else fail("must-staple set, no OCSP response stapled")


@rule("cert.sct", "low", "No Certificate Transparency SCTs in the certificate",
      "Certificate Transparency SCTs present",
      "Browsers require proof that a certificate was logged publicly (Certificate Transparency). We saw "
      "none embedded; they may still come through the TLS extension or OCSP, which we do not check.",
      over=each_deployment)
def cert_sct(ctx: Context, dep: CertificateDeployment) -> Outcome:
    if dep.sct_count is None:
        return untested("SCT count unknown")
    if not dep.sct_count and trusted_privately(dep):
        # Certificate Transparency binds publicly trusted certificates; browsers ask no SCT of a private root's
        return ok("0 SCTs embedded, none needed: the chain ends at your private root, not a public CA")
    return ok(f"{dep.sct_count} SCTs embedded") if dep.sct_count else fail("0 SCTs embedded in the leaf")


@rule("cert.ev", "info", "Extended Validation certificate", "Extended Validation certificate",
      "An EV certificate means the CA verified the organisation behind the site. Browsers no longer "
      "show it prominently, so it brings no security or grade benefit over a DV certificate.",
      over=each_deployment)
def cert_ev(ctx: Context, dep: CertificateDeployment) -> Outcome | None:
    return info(f"EV certificate for {dep.leaf.subject}") if dep.is_ev else None
