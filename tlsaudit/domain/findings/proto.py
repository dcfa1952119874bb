"""Protocol versions: which of SSL 2.0 to TLS 1.3 the server speaks, and what each one costs the site owner."""

from __future__ import annotations

from tlsaudit.domain.findings.registry import Context, Outcome, fail, info, ok, rule, untested
from tlsaudit.domain.findings.shared import pretty, supported, untested_protocols
from tlsaudit.domain.scanfacts import OK


def _protocol_rule(ctx: Context, protocol: str, evidence_on: str) -> Outcome:
    c = ctx.facts.protocols.get(protocol)
    if not c or not c.tested:
        return untested(c.reason if c else "not tested")
    if c.status == OK:
        return fail(evidence_on)
    return ok(f"{pretty(protocol)} refused")


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
    gap = untested_protocols(f, ["TLSv1.2", "TLSv1.3"])
    if gap:
        return untested(gap)
    return fail("Neither TLSv1.2 nor TLSv1.3 accepted; best protocol: "
                + (pretty(supported(f)[-1]) if supported(f) else "none"))


@rule("proto.tls13_missing", "low", "TLS 1.3 is not supported", "TLS 1.3 is supported",
      "TLS 1.3 is faster (one round trip fewer per new connection) and removes every legacy cipher. "
      "Without it the best grade is A-.")
def tls13_missing(ctx: Context) -> Outcome:
    c = ctx.facts.protocols.get("TLSv1.3")
    if not c or not c.tested:
        return untested(c.reason if c else "not tested")
    return ok("TLSv1.3 accepted") if c.status == OK else fail("TLSv1.3 refused")
