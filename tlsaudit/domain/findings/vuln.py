"""Known attacks: those that follow from the accepted suites (BEAST, LUCKY13, SWEET32, LOGJAM)
and those a probe tests directly (Heartbleed, CCS injection, ROBOT, CRIME, downgrade)."""

from __future__ import annotations

from tlsaudit.domain.ciphers import SuiteInfo
from tlsaudit.domain.findings.registry import Context, Outcome, fail, info, ok, rule, untested
from tlsaudit.domain.findings.shared import (
    dh_summary,
    named_check,
    suite_evidence,
    suite_rule,
    supported,
    untested_protocols,
)
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK


@rule("vuln.beast", "low", "BEAST: CBC ciphers on TLS 1.0/SSL 3.0", "Not exposed to BEAST",
      "BEAST attacks CBC ciphers on SSL 3.0 and TLS 1.0. Browsers have mitigated it since 2013, so the "
      "practical risk is low, but it is one more reason to turn TLS 1.0 off.")
def beast(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: i.is_cbc, ("SSLv3", "TLSv1.0"), "no CBC suites on SSL 3.0/TLS 1.0")


@rule("vuln.lucky13", "info", "CBC suites present (LUCKY13)", "No CBC suites",
      "LUCKY13 is a timing attack on CBC-mode suites. Current TLS libraries contain it, so this is "
      "informational; preferring AEAD suites removes the question.")
def lucky13(ctx: Context) -> Outcome:
    hits = [i for i in ctx.infos(("TLSv1.0", "TLSv1.1", "TLSv1.2")) if i.is_cbc]
    if hits:
        return info(suite_evidence(hits, limit=5))
    gap = untested_protocols(ctx.facts, ("TLSv1.0", "TLSv1.1", "TLSv1.2"))
    return untested(gap) if gap else ok("no CBC suites on TLS 1.0-1.2")


@rule("vuln.sweet32", "medium", "64-bit block ciphers (SWEET32)", "No 64-bit block ciphers",
      "3DES, IDEA and similar ciphers use 64-bit blocks; after a few hundred gigabytes on one connection "
      "an attacker can recover data (SWEET32). Offering them with TLS 1.1+ caps the grade at C.")
def sweet32(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: i.is_64bit_block, ok_text="no 3DES/IDEA/RC2/DES suites accepted")


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
    gap = untested_protocols(ctx.facts)
    return untested(gap) if gap else ok(dh_summary(ctx) or "no DHE suites accepted")


@rule("vuln.heartbleed", "critical", "Vulnerable to Heartbleed", "Not vulnerable to Heartbleed",
      "Heartbleed (CVE-2014-0160) lets anyone read chunks of the server's memory, including private "
      "keys and passwords. Patch OpenSSL, then replace the keys and certificates.")
def heartbleed(ctx: Context) -> Outcome:
    return named_check(ctx, "heartbleed", "not vulnerable", "vulnerable to CVE-2014-0160")


@rule("vuln.ccs_injection", "critical", "Vulnerable to OpenSSL CCS injection",
      "Not vulnerable to CCS injection",
      "CCS injection (CVE-2014-0224) lets an attacker in the middle force weak keys and decrypt traffic. "
      "It is fixed by updating OpenSSL.")
def ccs_injection(ctx: Context) -> Outcome:
    return named_check(ctx, "ccs_injection", "not vulnerable", "vulnerable to CVE-2014-0224")


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
    return named_check(ctx, "compression", "compression refused", "server accepts DEFLATE compression")


@rule("vuln.fallback_scsv", "low", "No downgrade protection (TLS_FALLBACK_SCSV)",
      "Downgrade protection (TLS_FALLBACK_SCSV)",
      "TLS_FALLBACK_SCSV stops attackers from forcing clients that retry with older protocol versions "
      "onto a weaker one. Modern browsers no longer retry, so the risk is low.")
def fallback_scsv(ctx: Context) -> Outcome:
    c = ctx.facts.check("fallback_scsv")
    if c.status == BAD and len(supported(ctx.facts)) == 1:
        return ok("only one protocol version is enabled, so there is nothing to downgrade to")
    return named_check(ctx, "fallback_scsv", "supported", "TLS_FALLBACK_SCSV not honoured")
