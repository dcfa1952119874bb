"""TLS features: 0-RTT early data, the extended master secret, SNI and client certificates."""

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


@rule("tls.sni_required", "info", "SNI required", "Same certificate without SNI",
      "Clients that send no server name (SNI) get another certificate, or no handshake: old clients, some "
      "tools and monitors that connect by address see a warning or an error. testssl.sh calls it \"SNI "
      "mandatory\". Usual on shared hosting; make this site the default server of its address if such "
      "clients matter.")
def sni_required(ctx: Context) -> Outcome:
    probed = ctx.facts.without_sni
    if probed is None:
        return untested("not probed (audits before this check, or the connection without SNI failed)")
    if probed.outcome == "other":
        return info(f"without SNI the server sends another certificate: {probed.subject}")
    if probed.outcome == "refused":
        return info(f"without SNI the handshake fails: {probed.detail}")
    return ok("the same certificate is served without SNI")


@rule("tls.client_auth", "info", "Client certificate requested", "No client certificate requested",
      "The server asks every client for a certificate. When it is optional, browsers may show a "
      "certificate picker to users who have one installed; when it is required, visitors without one "
      "cannot connect at all.")
def client_auth(ctx: Context) -> Outcome:
    requirement = ctx.facts.client_auth
    if requirement is None:
        return untested("not recorded (audits before this check)")
    if requirement == "optional":
        return info("the server requests a client certificate, and goes on without one")
    if requirement == "required":
        return info("the server requires a client certificate: clients without one cannot connect",
                    severity="medium")
    return ok("no client certificate requested")
