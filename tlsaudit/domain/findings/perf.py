"""Performance: what makes repeat visits and many-asset pages fast (session resumption, HTTP/2)."""

from __future__ import annotations

from tlsaudit.domain.findings.registry import Context, Outcome, fail, ok, rule, untested
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK
from tlsaudit.domain.services import is_http


@rule("perf.session_resumption", "info", "Session resumption disabled", "Session resumption works",
      "Session resumption (session IDs or tickets, and TLS 1.3's tickets) lets returning clients skip the "
      "expensive part of the handshake, saving CPU on the server and a round trip for TLS 1.2 visitors.")
def session_resumption(ctx: Context) -> Outcome:
    ids, tickets = ctx.facts.check("session_id_resumption"), ctx.facts.check("session_ticket_resumption")
    tls13 = ctx.facts.check("tls13_resumption")
    mechanisms = (("session IDs", ids), ("session tickets", tickets), ("TLS 1.3 tickets", tls13))
    works = [label for label, c in mechanisms if c.status == OK]
    if works:
        fails = [label for label, c in mechanisms if c.status == BAD]
        return ok(f"resumption with {_listed(works, 'and')}" + (f"; not with {_listed(fails, 'or')}" if fails else ""))
    if tls13.status == BAD and not ids.tested and not tickets.tested:     # a TLS 1.3-only server
        return fail(f"TLS 1.3 tickets resumed no session ({tls13.detail})")
    if not ids.tested or not tickets.tested:
        return untested("; ".join(c.reason for c in (ids, tickets) if not c.tested))
    return fail("neither session IDs nor session tickets resumed a session" + _attempts(ids.detail, tickets.detail)
                + ("; nor TLS 1.3 tickets" if tls13.status == BAD else ""))


def _listed(items: list[str], conjunction: str) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def _attempts(ids: str, tickets: str) -> str:
    """' (0 of 5 resumptions succeeded with each)': the same count is said once, different ones are labelled."""
    if not (ids or tickets):
        return ""
    if ids == tickets:
        return f" ({ids} with each)"
    return f" (session IDs: {ids or 'not counted'}; session tickets: {tickets or 'not counted'})"


@rule("perf.http2", "info", "HTTP/2 not offered (no ALPN h2)", "HTTP/2 offered via ALPN",
      "HTTP/2 multiplexes requests over one connection, so pages with many assets load faster. Clients "
      "pick it during the TLS handshake through ALPN.")
def http2(ctx: Context) -> Outcome | None:
    if not is_http(ctx.facts.service):
        return None  # an SMTP server speaks SMTP over TLS, whatever ALPN says
    c = ctx.facts.alpn_check
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if "h2" in ctx.facts.alpn:
        return ok("ALPN: " + ", ".join(ctx.facts.alpn))
    return fail("ALPN: " + (", ".join(ctx.facts.alpn) or "no protocol negotiated"))
