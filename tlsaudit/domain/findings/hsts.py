"""HSTS: whether the Strict-Transport-Security header is there, valid, long enough and preload-ready."""

from __future__ import annotations

from collections.abc import Callable

from tlsaudit.domain.findings.registry import Context, Outcome, fail, info, ok, rule, untested
from tlsaudit.domain.scanfacts import NOT_TESTED, Hsts

HSTS_A_PLUS_AGE = 15552000        # 180 days: SSL Labs' A+ threshold
HSTS_PRELOAD_AGE = 31536000       # one year: hstspreload.org's minimum


def the_header(ctx: Context, check: Callable[[Hsts], Outcome | None]) -> Outcome | None:
    """Run `check` on the Strict-Transport-Security header once it was read; untested when it was not;
    no finding at all for a service that is not HTTP (an SMTP server sends no header: the grade's
    `not_applicable` says so, once)."""
    f = ctx.facts
    if not f.hsts_check.applicable:
        return None
    if f.hsts_check.status == NOT_TESTED or f.hsts is None:
        return untested(f.hsts_check.reason or "HTTP headers not fetched")
    return check(f.hsts)


@rule("hsts.missing", "medium", "HSTS not enabled", "HSTS enabled",
      "HTTP Strict Transport Security tells browsers to always use HTTPS for your site, so attackers "
      "cannot strip the encryption on a first plain-HTTP request. A+ needs it.", over=the_header)
def hsts_missing(h: Hsts) -> Outcome:
    return fail("no Strict-Transport-Security header") if h.header is None else ok(h.header)


@rule("hsts.invalid", "medium", "HSTS header invalid", "HSTS header valid",
      "The Strict-Transport-Security header could not be parsed (for example it has no max-age), so "
      "browsers ignore it. SSL Labs gives a warning (A-).", over=the_header)
def hsts_invalid(h: Hsts) -> Outcome | None:
    if h.header is None:
        return None
    return ok(h.header) if h.valid and h.max_age is not None else fail(f"header: {h.header}")


@rule("hsts.disabled", "medium", "HSTS disabled (max-age=0)", "HSTS not disabled",
      "max-age=0 tells browsers to forget HSTS for your site, switching the protection off. SSL Labs "
      "gives a warning (A-).", over=the_header)
def hsts_disabled(h: Hsts) -> Outcome | None:
    if h.header is None or h.max_age is None:
        return None
    return fail(f"header: {h.header}") if h.max_age == 0 else ok(f"max-age={h.max_age}")


@rule("hsts.short_max_age", "low", "HSTS max-age shorter than 180 days", "HSTS max-age 180 days or more",
      "A short max-age lets the protection lapse between visits. SSL Labs requires at least 180 days "
      "(15552000 s) for A+; a year or two is usual.", over=the_header)
def hsts_short_max_age(h: Hsts) -> Outcome | None:
    if h.header is None or not h.max_age:
        return None
    days = h.max_age // 86400
    if h.max_age < HSTS_A_PLUS_AGE:
        return fail(f"max-age={h.max_age} ({days} days)")
    return ok(f"max-age={h.max_age} ({days} days)")


@rule("hsts.include_subdomains", "info", "HSTS does not cover subdomains", "HSTS covers subdomains",
      "Without includeSubDomains, subdomains (and cookies scoped to the parent domain) stay exposed to "
      "downgrade attacks. Add it once every subdomain serves HTTPS.", over=the_header)
def hsts_include_subdomains(h: Hsts) -> Outcome | None:
    """Advice, not a fault: SSL Labs and Mozilla's own configuration leave it out, and a copied
    includeSubDomains locks every HTTP-only subdomain out for max-age. Our recommended snippets
    leave it out too, so flagging it as a failure would fail our own advice."""
    if h.header is None or not h.max_age:
        return None
    return ok(h.header) if h.include_subdomains else info(f"header: {h.header}")


@rule("hsts.preload_ready", "info", "Not ready for the HSTS preload list", "Ready for the HSTS preload list",
      "Browsers ship a list of HTTPS-only sites (hstspreload.org). Being on it protects even the very "
      "first visit and saves the http-to-https redirect. It needs max-age of a year, includeSubDomains "
      "and preload.", over=the_header)
def hsts_preload_ready(h: Hsts) -> Outcome | None:
    if h.header is None or not h.max_age:
        return None
    missing = []
    if h.max_age < HSTS_PRELOAD_AGE:
        missing.append(f"max-age >= {HSTS_PRELOAD_AGE}")
    if not h.include_subdomains:
        missing.append("includeSubDomains")
    if not h.preload:
        missing.append("preload")
    if missing:
        return info("missing: " + ", ".join(missing))
    return ok(h.header)
