"""Cipher suites: forward secrecy, AEAD, broken ciphers (RC4, NULL, EXPORT, anonymous, under 112 bits)
and whether the server or the client picks the suite."""

from __future__ import annotations

from tlsaudit.domain.ciphers import SuiteInfo
from tlsaudit.domain.findings.registry import Context, Outcome, fail, ok, rule, untested
from tlsaudit.domain.findings.shared import pretty, suite_evidence, suite_rule, untested_protocols


@rule("cipher.forward_secrecy", "high", "No forward secrecy", "Forward secrecy with every suite",
      "With forward secrecy (ECDHE/DHE key exchange) a stolen private key cannot decrypt recorded "
      "traffic. Suites using plain RSA key exchange lack it; a server without any forward-secret suite "
      "is capped at B.")
def forward_secrecy(ctx: Context) -> Outcome:
    infos = ctx.infos()
    gap = untested_protocols(ctx.facts)
    if not infos:
        return untested(gap or "no cipher suites accepted")
    # Anonymous (EC)DH is ephemeral: its flaw, no authentication, is cipher.anonymous's critical finding.
    authenticated = [i for i in infos if not i.is_anonymous]
    weak = [i for i in authenticated if not i.is_forward_secret]
    if not weak:
        anonymous = len({i.name for i in infos if i.is_anonymous})
        aside = f" (and {anonymous} anonymous suite(s), ephemeral too: see the anonymous-suite finding)" if anonymous else ""
        return untested(gap) if gap else ok(f"all {len({i.name for i in authenticated})} accepted suites use "
                                            f"ECDHE/DHE{aside}")
    if len(weak) == len(authenticated):
        return fail("no accepted suite uses ECDHE/DHE: " + suite_evidence(weak))
    return fail("some suites lack forward secrecy: " + suite_evidence(weak), severity="low",
                title="Forward secrecy only with some suites")


@rule("cipher.aead", "medium", "No AEAD cipher suite", "AEAD cipher suites offered",
      "AEAD ciphers (AES-GCM, ChaCha20-Poly1305) encrypt and authenticate in one step and avoid the "
      "padding-oracle attacks that hit CBC. A server with no AEAD suite is capped at B.")
def aead(ctx: Context) -> Outcome:
    infos = ctx.infos()
    good = [i for i in infos if i.is_aead]
    if good:
        return ok(f"{len({i.name for i in good})} AEAD suites accepted, e.g. {good[0].name}")
    gap = untested_protocols(ctx.facts)
    if gap:
        return untested(gap)
    return fail("no AEAD suite accepted" + (": " + suite_evidence(infos, limit=5) if infos else ""))


@rule("cipher.rc4", "high", "RC4 cipher accepted", "No RC4",
      "RC4 has statistical biases that let attackers recover plaintext; RFC 7465 forbids it. Offering "
      "it caps the grade at B (C with TLS 1.1+, F if it is the only cipher).")
def rc4(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: i.is_rc4, ok_text="no RC4 suites accepted")


@rule("cipher.null", "critical", "NULL cipher accepted (no encryption)", "No NULL ciphers",
      "A NULL cipher suite sends your traffic unencrypted while still looking like HTTPS. Any client "
      "that negotiates it is fully exposed.")
def null(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: i.is_null, ok_text="no NULL suites accepted")


@rule("cipher.anonymous", "critical", "Anonymous key exchange accepted", "No anonymous suites",
      "Anonymous suites skip server authentication, so anyone in the middle can impersonate your site. "
      "SSL Labs grades them F.")
def anonymous(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: i.is_anonymous, ok_text="no anonymous suites accepted")


@rule("cipher.export", "critical", "EXPORT cipher suites accepted (FREAK)", "No EXPORT suites",
      "EXPORT suites were deliberately weakened to 40-56 bits in the 1990s. Accepting them lets an "
      "attacker downgrade connections and break them in hours (FREAK); the grade is F.")
def export(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: i.is_export, ok_text="no EXPORT suites accepted")


@rule("cipher.weak_encryption", "critical", "Encryption weaker than 112 bits", "All ciphers 112 bits or more",
      "Ciphers with fewer than 112 bits of strength, like single DES, can be brute-forced with "
      "affordable hardware. SSL Labs grades them F.")
def weak_encryption(ctx: Context) -> Outcome:
    return suite_rule(ctx, lambda i: not i.is_null and i.security_bits < 112,
                       ok_text="every accepted suite has at least 112-bit strength")


@rule("cipher.server_preference", "medium", "Server does not enforce its cipher order",
      "Server chooses the cipher suite",
      "When weaker suites are enabled, the server should pick the suite itself. Otherwise a client (or an "
      "attacker steering it) can end up on the weakest one the server allows.")
def server_preference(ctx: Context) -> Outcome:
    f = ctx.facts
    weak_by_proto: dict[str, list[SuiteInfo]] = {}
    for i in ctx.infos(("SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2")):
        if not i.is_forward_secret or not i.is_aead or i.is_64bit_block or i.is_rc4:
            weak_by_proto.setdefault(i.protocol, []).append(i)
    if not weak_by_proto:
        gap = untested_protocols(f, ("SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2"))
        return untested(gap) if gap else ok("only strong suites are offered, so the order does not matter")
    not_enforced, unknown = [], []
    for proto, weak in weak_by_proto.items():
        pref = f.preferences.get(proto)
        if pref is None or pref.enforced is None:
            unknown.append(f"{pretty(proto)}: {(pref.reason if pref else '') or 'preference not measured'}")
        elif not pref.enforced:
            not_enforced.append(f"{pretty(proto)} (client order wins; weaker suites offered: "
                                f"{', '.join(dict.fromkeys(i.name for i in weak[:3]))})")
    if not_enforced:
        return fail("; ".join(not_enforced))
    if unknown:
        return untested("; ".join(unknown))
    return ok("server order enforced on " + ", ".join(pretty(p) for p in weak_by_proto))
