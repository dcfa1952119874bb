"""Key exchange: the size of the Diffie-Hellman groups and elliptic curves the server negotiates."""

from __future__ import annotations

from tlsaudit.domain.findings.registry import Context, Outcome, fail, info, ok, rule, untested
from tlsaudit.domain.findings.shared import dh_summary, untested_protocols
from tlsaudit.domain.scanfacts import NOT_TESTED, OK


@rule("kx.weak_dh", "medium", "Diffie-Hellman group smaller than 2048 bits", "DH groups are 2048 bits or more",
      "DHE suites use a Diffie-Hellman group chosen by the server. Groups under 2048 bits are weak "
      "by today's standards and cap the key-exchange score (grade B).")
def weak_dh(ctx: Context) -> Outcome:
    hits = [s for s in ctx.facts.suites if s.kx_type == "DH" and s.kx_bits and s.kx_bits < 2048]
    if hits:
        sizes = sorted({s.kx_bits for s in hits})
        return fail(f"DH group {'/'.join(map(str, sizes))} bits with {len({s.name for s in hits})} DHE suite(s), "
                    f"e.g. {hits[0].name} on {hits[0].protocol}")
    gap = untested_protocols(ctx.facts)
    return untested(gap) if gap else ok(dh_summary(ctx) or "no DHE suites accepted")


# Bits of named curves we may meet in the curves list (SECG / OpenSSL names, lower case).
_CURVE_BITS = {
    "secp160k1": 160, "secp160r1": 160, "secp160r2": 160, "secp192k1": 192, "secp192r1": 192,
    "prime192v1": 192, "secp224k1": 224, "secp224r1": 224, "secp256k1": 256, "secp256r1": 256,
    "prime256v1": 256, "secp384r1": 384, "secp521r1": 521, "x25519": 255, "x448": 448,
    "sect163k1": 163, "sect163r1": 163, "sect163r2": 163, "sect193r1": 193, "sect193r2": 193,
    "sect233k1": 233, "sect233r1": 233, "sect239k1": 239, "sect283k1": 283, "sect283r1": 283,
    "sect409k1": 409, "sect409r1": 409, "sect571k1": 571, "sect571r1": 571,
    "brainpoolp256r1": 256, "brainpoolp384r1": 384, "brainpoolp512r1": 512,
}


@rule("kx.weak_ecdh", "medium", "Elliptic curve smaller than 224 bits", "Elliptic curves are 224 bits or more",
      "ECDHE key exchange is only as strong as its curve. Curves under 224 bits (like secp160r1 or "
      "secp192r1) give less than 112-bit security.")
def weak_ecdh(ctx: Context) -> Outcome:
    small = [c for c in ctx.facts.curves if _CURVE_BITS.get(c.lower(), 999) < 224]
    small += [f"{s.kx_curve or 'curve'} ({s.kx_bits} bits) with {s.name}" for s in ctx.facts.suites
              if s.kx_type == "ECDH" and s.kx_bits and s.kx_bits < 224]
    if small:
        return fail("accepted: " + ", ".join(dict.fromkeys(small)))
    if ctx.facts.curves_check.status == NOT_TESTED:
        return untested(ctx.facts.curves_check.reason)
    return ok("accepted curves: " + (", ".join(ctx.facts.curves) or "none"))


@rule("kx.post_quantum", "info", "Not post-quantum ready", "Post-quantum ready",
      "Browsers now offer a hybrid post-quantum key exchange (X25519MLKEM768) first. A server that "
      "accepts it protects today's traffic against decryption by a future quantum computer "
      "(\"harvest now, decrypt later\"). It needs OpenSSL 3.5 or later (nginx: ssl_ecdh_curve "
      "X25519MLKEM768:X25519:...). No grade depends on it yet.")
def post_quantum(ctx: Context) -> Outcome:
    """Advice, not a fault (SSL Labs grades nothing on it yet): info when absent, never fail."""
    pq = ctx.facts.post_quantum
    if pq is None:
        return untested("the post-quantum probe did not run (audits before it existed)")
    if pq.check.status == NOT_TESTED:
        return untested(pq.check.reason)
    draft = "; also the obsolete X25519Kyber768Draft00" if pq.draft_kyber else ""
    if pq.check.status == OK:
        prefers = {True: "prefers it even when the client lists X25519 first",
                   False: "takes it only when the client lists it first", None: ""}[pq.prefers_pq]
        return ok(f"accepts {', '.join(pq.accepted)}" + (f"; {prefers}" if prefers else "") + draft)
    return info(pq.check.detail + draft)
