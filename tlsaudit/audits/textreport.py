"""A testssl-like plain-text report of one audit, for the CLI."""

from tlsaudit.domain.ciphers import classify, strength_label
from tlsaudit.domain.revocationwords import revocation_words
from tlsaudit.domain.scanfacts import PROTOCOLS
from tlsaudit.domain.services import HTTPS, service_named
from tlsaudit.domain.trustwords import trust_summary

MARK = {"fail": "NOT ok", "pass": "ok", "not_tested": "not tested", "info": "info"}


def render_text(facts, report, duration_s: float) -> str:
    lines = [f"TLS Audit of {facts.host}:{facts.port} ({facts.ip}) in {duration_s:.1f} s", *_service_line(facts), ""]
    lines += _protocols(facts) + [""] + _suites(facts) + [""] + _post_quantum(facts) + [""]
    lines += _client_simulation(facts) + [""] + _certificates(facts) + [""]
    lines += _findings(report) + [""] + _grade(report)
    return "\n".join(lines) + "\n"


def _service_line(facts) -> list[str]:
    """Under the title, another service than HTTPS is named (an HTTPS title names none)."""
    return [] if facts.service == HTTPS else [f" Service: {service_named(facts.service).label}"]


def _protocols(facts) -> list[str]:
    out = [" Protocols"]
    for name in PROTOCOLS:
        check = facts.protocols.get(name)
        state = "not tested" if check is None or not check.tested else ("offered" if facts.supports(name)
                                                                         else "not offered")
        out.append(f"   {name:<8} {state}")
    return out


def _suites(facts) -> list[str]:
    out = [" Cipher suites (server order where enforced)"]
    for name in reversed(PROTOCOLS):
        suites = facts.suites_for(name)
        if not suites:
            continue
        pref = facts.preferences.get(name)
        order = list(pref.order) if pref and pref.enforced else []
        # Without a measured server order, list by name: any other order would read as a preference.
        suites.sort(key=lambda s: (order.index(s.name) if s.name in order else len(order), "" if order else s.name))
        out.append(f"   {name} ({_order_note(pref)})")
        for s in suites:
            info = classify(s)
            kx = f"{info.kx} {s.kx_bits}" if s.kx_bits else info.kx
            out.append(f"     {s.name:<48} {kx:<10} {s.key_size:>4} bits  {strength_label(info)}")
    return out


def _client_simulation(facts) -> list[str]:
    out = [" Client simulation (recorded ClientHellos replayed; * = from published lists)"]
    if facts.client_simulation is None:
        return out + ["   not simulated"]
    for c in facts.client_simulation:
        label = c.label if c.recorded else f"{c.label} *"
        if c.protocol:
            group = c.group or (f"DH {c.dh_bits}" if c.dh_bits else "-")
            out.append(f"   {label:<28} {c.protocol:<8} {c.suite or '?':<44} {group}")
        else:
            out.append(f"   {label:<28} {'fails' if c.tested else 'not tested'}: {c.error}")
    return out


def _post_quantum(facts) -> list[str]:
    pq = facts.post_quantum
    out = [" Post-quantum key exchange"]
    if pq is None or not pq.check.tested:
        return out + [f"   not tested{': ' + pq.check.reason if pq else ''}"]
    out.append(f"   post-quantum ready: {'yes' if pq.ready else 'no'}")
    for name in (*pq.accepted, *pq.rejected):
        out.append(f"     {name:<22} {'accepted' if name in pq.accepted else 'not accepted'}")
    if pq.draft_kyber is not None:
        out.append(f"     {'X25519Kyber768Draft00':<22} {'accepted' if pq.draft_kyber else 'not accepted'}"
                   " (obsolete pre-standard draft, not counted)")
    if pq.browser_choice:
        out.append(f"   a browser offering X25519MLKEM768 first gets {pq.browser_choice}")
    if pq.prefers_pq is not None:
        out.append(f"   prefers X25519MLKEM768 over X25519: {'yes' if pq.prefers_pq else 'no'}")
    return out


def _order_note(pref) -> str:
    if pref is not None and pref.enforced:
        return "server order"
    if pref is not None and pref.enforced is False:
        return "no server order: the client chooses; listed by name"
    why = (pref.reason.rstrip(".") if pref is not None and pref.reason else "not probed")
    return f"order not measured: {why}; listed by name"


def _certificates(facts) -> list[str]:
    out = [" Certificates"]
    for dep in facts.certificates:
        leaf = dep.leaf
        trusted = trust_summary(dep.trust) or "not checked"
        out += [f"   {leaf.subject}", f"     key {leaf.key_type} {leaf.key_bits}, signature {leaf.signature_hash},"
                f" valid until {leaf.not_after:%Y-%m-%d}", f"     name matches: {dep.hostname_matches};"
                f" chain complete: {dep.chain_complete}", f"     trust: {trusted}",
                f"     revocation: {revocation_words(dep.revocation)}", "     sent chain:"]
        out += [f"       {n}. {c.subject} (key {c.key_type} {c.key_bits}, signature {c.signature_hash}"
                f"{', extra' if c.subject in (dep.chain_extra or ()) and n > 1 else ''})"
                for n, c in enumerate(dep.chain, start=1)]
    return out


def _findings(report) -> list[str]:
    out = [" Checks"]
    for f in report.findings:
        if f.status == "pass":
            continue
        out.append(f"   [{MARK.get(f.status, f.status):>10}] {f.severity:<8} {f.title}"
                   + (f" — {f.evidence}" if f.evidence else "") + (f" ({f.reason})" if f.reason else ""))
    return out


def _grade(report) -> list[str]:
    g = report.grade
    out = [" Rating (SSL Labs guide 2009r)",
           f"   Protocol support  {g.scores['protocol']:>3} ({g.weighted['protocol']})",
           f"   Key exchange      {g.scores['key_exchange']:>3} ({g.weighted['key_exchange']})",
           f"   Cipher strength   {g.scores['cipher']:>3} ({g.weighted['cipher']})",
           f"   Final score       {g.score}",
           f"   Overall grade     {g.grade}" + (f" (ignoring trust: {g.grade_ignoring_trust})"
                                                 if g.grade != g.grade_ignoring_trust else "")]
    out += [f"   Grade cap         {c.grade}: {c.reason}" for c in g.caps]
    out += [f"   Warning           {w.message}" for w in g.warnings]
    out += [f"   Trust             {t.kind}: {t.reason}" for t in g.trust_issues]
    out += [f"   Not applicable    {n.rule_id}: {n.reason}" for n in g.not_applicable]
    out.append(f"   Mozilla profile   {report.best_profile or 'none met'}")
    if report.predicted:
        out.append(f"   After the fixes   {report.predicted.grade} ({len(report.recommendations)} recommendations)")
    return out
