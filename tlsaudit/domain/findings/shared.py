"""Building blocks that rules of more than one category use: evidence texts and the common rule shapes."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tlsaudit.domain.ciphers import SuiteInfo
from tlsaudit.domain.findings.registry import Context, Outcome, fail, ok, untested
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, PROTOCOLS, ScanFacts

_PRETTY = {"SSLv2": "SSL 2.0", "SSLv3": "SSL 3.0", "TLSv1.0": "TLS 1.0", "TLSv1.1": "TLS 1.1",
           "TLSv1.2": "TLS 1.2", "TLSv1.3": "TLS 1.3"}


def pretty(protocol: str) -> str:
    return _PRETTY.get(protocol, protocol)


def untested_protocols(facts: ScanFacts, protocols: Iterable[str] = PROTOCOLS) -> str:
    """Reason text when any of `protocols` was not tested (their suites are then unknown), else ""."""
    parts = []
    for p in protocols:
        c = facts.protocols.get(p)
        if not c or not c.tested:
            parts.append(f"{pretty(p)}: {(c.reason if c else '') or 'not tested'}")
    return "; ".join(parts)


def suite_evidence(infos: Iterable[SuiteInfo], verb: str = "accepted", limit: int = 10) -> str:
    """'TLS_RSA_WITH_3DES_EDE_CBC_SHA accepted on TLSv1.2' style evidence, suites grouped by name."""
    by_name: dict[str, list[str]] = {}
    for i in infos:
        by_name.setdefault(i.name, [])
        if i.protocol not in by_name[i.name]:
            by_name[i.name].append(i.protocol)
    parts = [f"{name} {verb} on {', '.join(protos)}" for name, protos in by_name.items()]
    if len(parts) > limit:
        parts = parts[:limit] + [f"and {len(parts) - limit} more"]
    return "; ".join(parts)


def suite_rule(ctx: Context, bad: Callable[[SuiteInfo], bool], protocols: Iterable[str] = PROTOCOLS,
               ok_text: str = "none accepted", severity: str | None = None) -> Outcome:
    """Fail on any accepted suite matching `bad`; untested when a protocol's suites are unknown."""
    protocols = tuple(protocols)
    hits = [i for i in ctx.infos(protocols) if bad(i)]
    if hits:
        return fail(suite_evidence(hits), severity=severity)
    gap = untested_protocols(ctx.facts, protocols)
    return untested(gap) if gap else ok(ok_text)


def named_check(ctx: Context, name: str, ok_text: str, bad_text: str) -> Outcome:
    """The verdict of one of ScanFacts' named checks (heartbleed, compression, ...)."""
    c = ctx.facts.check(name)
    if c.status == NOT_TESTED:
        return untested(c.reason)
    if c.status == BAD:
        return fail(c.detail or bad_text)
    return ok(c.detail or ok_text)


def supported(facts: ScanFacts) -> list[str]:
    return [p for p in PROTOCOLS if facts.supports(p)]


def dh_summary(ctx: Context) -> str:
    sizes = sorted({s.kx_bits for s in ctx.facts.suites if s.kx_type == "DH" and s.kx_bits})
    return f"DH group size {', '.join(map(str, sizes))} bits" if sizes else ""
