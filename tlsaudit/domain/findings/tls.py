"""TLS features: 0-RTT early data and the extended master secret."""

from __future__ import annotations

from tlsaudit.domain.findings.registry import Context, Outcome, info, ok, rule, untested
from tlsaudit.domain.findings.shared import named_check
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED


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
    return named_check(ctx, "extended_master_secret", "RFC 7627 supported", "RFC 7627 not supported")
