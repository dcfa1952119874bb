"""Renegotiation: RFC 5746 secure renegotiation and client-initiated renegotiation."""

from __future__ import annotations

from tlsaudit.domain.findings.registry import Context, Outcome, fail, rule
from tlsaudit.domain.findings.shared import named_check
from tlsaudit.domain.scanfacts import BAD


@rule("reneg.secure", "medium", "Secure renegotiation not supported", "Secure renegotiation supported",
      "Without secure renegotiation (RFC 5746) an attacker can splice their own request in front of a "
      "user's. It gives a warning (A-); combined with client-initiated renegotiation the grade is F.")
def secure_renegotiation(ctx: Context) -> Outcome:
    outcome = named_check(ctx, "secure_renegotiation", "RFC 5746 supported", "RFC 5746 not supported")
    if outcome.status == "fail" and ctx.facts.check("client_renegotiation").status == BAD:
        return fail(outcome.evidence + "; clients may also renegotiate: insecure renegotiation",
                    severity="critical", title="Insecure renegotiation")
    return outcome


@rule("reneg.client_initiated", "medium", "Client-initiated renegotiation accepted",
      "Client-initiated renegotiation refused",
      "Letting clients renegotiate makes the server redo expensive handshakes on demand, an easy "
      "denial-of-service lever. Servers rarely need it.")
def client_renegotiation(ctx: Context) -> Outcome:
    return named_check(ctx, "client_renegotiation", "refused", "server accepts client-initiated renegotiation")
