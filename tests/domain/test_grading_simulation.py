"""What client simulation changes in the grade (docs/grading.md, "What client simulation changed in
the grade"), told as servers, what the simulated clients got, and the grade each one earns.

Modern clients decide forward secrecy and AEAD (SSL Labs: "with modern clients"); any simulated
client, old ones included, decides whether 3DES or RC4 is *used* on TLS 1.1+. Without a simulation
(audits before it) the offered rules of tests/domain/test_grading.py apply unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.domain.factories import DEFAULT_SUITES, make_facts, preference, suites_for
from tlsaudit.domain.grading import grade, modern_client_caps, negotiated
from tlsaudit.domain.scanfacts import ClientHandshake, ScanFacts

MODERN = ("TLSv1.2", "TLSv1.3")
TLS13 = ("TLSv1.3", "TLS_AES_128_GCM_SHA256")
ECDHE_GCM = ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
ECDHE_CBC = ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")
RSA_GCM = ("TLSv1.2", "TLS_RSA_WITH_AES_128_GCM_SHA256")
TRIPLE_DES = ("TLSv1.2", "TLS_RSA_WITH_3DES_EDE_CBC_SHA")
RC4 = ("TLSv1.2", "TLS_RSA_WITH_RC4_128_SHA")


def client(label: str, got: tuple[str, str] | None, modern: bool = True) -> ClientHandshake:
    if got is None:
        return ClientHandshake(label.lower(), label, error="handshake failure: no cipher suite or group in common",
                               modern=modern)
    return ClientHandshake(label.lower(), label, protocol=got[0], suite=got[1], group="x25519", modern=modern)


def simulation(modern_get, old_get=ECDHE_GCM) -> list[ClientHandshake]:
    """Chromium and Java 17 (modern) get `modern_get`; Java 8u31 (old, TLS 1.2 at most) gets `old_get`."""
    return [client("Chromium", modern_get), client("Java 17", modern_get), client("Java 8u31", old_get, modern=False)]


def tls12(*suite_names: str, preferred: tuple[str, ...] = (), sim=None, **kwargs) -> ScanFacts:
    suites = list(suite_names)
    prefs = [preference("TLSv1.2", *preferred)] if preferred else None
    return make_facts(protocols=("TLSv1.2",), suites=suites, preferences=prefs, client_simulation=sim, **kwargs)


def with_extra(*extra: tuple[str, str], first: bool = False, sim=None) -> ScanFacts:
    """TLS 1.2 + 1.3 with the default suites, plus `extra` TLS 1.2 suites last (or first) in the server's order."""
    names = [name for _, name in extra]
    order = (*names, *DEFAULT_SUITES["TLSv1.2"]) if first else (*DEFAULT_SUITES["TLSv1.2"], *names)
    return make_facts(suites=suites_for(MODERN) + suites_for(("TLSv1.2",), names),
                      preferences=[preference("TLSv1.2", *order)], client_simulation=sim)


@dataclass
class Row:
    id: str
    facts: ScanFacts
    grade: str
    fired: set[str] = field(default_factory=set)
    offered_grade: str | None = None        # the grade without the simulation, when it differs


ROWS = [
    # --- weak suites: counted only when some client negotiates them -----------------------------
    Row("3DES last in the server's order: no client negotiates it", with_extra(TRIPLE_DES, sim=simulation(TLS13)),
        "A+", offered_grade="C"),
    Row("3DES first: an old client (Java 8) gets it on TLS 1.2",
        with_extra(TRIPLE_DES, first=True, sim=simulation(TLS13, old_get=TRIPLE_DES)), "C", {"cap.sweet32"}),
    Row("RC4 last: accepted (B) but no client negotiates it, so no C",
        with_extra(RC4, sim=simulation(TLS13)), "B", {"cap.rc4"}, offered_grade="C"),
    Row("RC4 first: an old client gets it on TLS 1.2",
        with_extra(RC4, first=True, sim=simulation(TLS13, old_get=RC4)), "C", {"cap.rc4", "cap.rc4_tls11"}),

    # --- forward secrecy and AEAD with modern clients --------------------------------------------
    Row("RSA key exchange preferred and modern clients get it",
        tls12(RSA_GCM[1], ECDHE_GCM[1], preferred=(RSA_GCM[1], ECDHE_GCM[1]), sim=simulation(RSA_GCM)),
        "B", {"cap.no_forward_secrecy", "warn.no_tls13"}),
    Row("our preference probe saw RSA first, but every modern client gets ECDHE",
        tls12(RSA_GCM[1], ECDHE_GCM[1], preferred=(RSA_GCM[1], ECDHE_GCM[1]), sim=simulation(ECDHE_GCM)),
        "A-", {"warn.no_tls13"}, offered_grade="B"),
    Row("only an old client gets RSA key exchange: modern clients decide",
        tls12(RSA_GCM[1], ECDHE_GCM[1], sim=simulation(ECDHE_GCM, old_get=RSA_GCM)), "A-", {"warn.no_tls13"}),
    Row("one modern client gets RSA key exchange while the others get ECDHE",
        tls12(RSA_GCM[1], ECDHE_GCM[1], sim=[client("Chromium", ECDHE_GCM), client("Java 17", RSA_GCM)]),
        "B", {"cap.no_forward_secrecy", "warn.no_tls13"}, offered_grade="A-"),
    Row("CBC preferred and modern clients get it",
        tls12(ECDHE_CBC[1], ECDHE_GCM[1], sim=simulation(ECDHE_CBC)),
        "B", {"cap.no_aead", "warn.no_tls13"}, offered_grade="A-"),
    Row("CBC and GCM offered, the server lets clients choose and they choose GCM",
        tls12(ECDHE_CBC[1], ECDHE_GCM[1], preferred=(ECDHE_CBC[1], ECDHE_GCM[1]), sim=simulation(ECDHE_GCM)),
        "A-", {"warn.no_tls13"}, offered_grade="B"),
    Row("no modern client completes a handshake: the offered rules decide",
        tls12(RSA_GCM[1], ECDHE_GCM[1], preferred=(RSA_GCM[1], ECDHE_GCM[1]),
              sim=simulation(None, old_get=RSA_GCM)),
        "B", {"cap.no_forward_secrecy", "warn.no_tls13"}),
    Row("a negotiated suite the facts no longer accept (a predicted configuration) is ignored",
        make_facts(suites=suites_for(MODERN), client_simulation=simulation(TLS13, old_get=TRIPLE_DES)), "A+"),
]


def fired(result) -> set[str]:
    return {c.rule_id for c in result.caps} | {w.rule_id for w in result.warnings}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_it_grades_what_the_simulated_clients_negotiate(row: Row):
    result = grade(row.facts)
    assert (result.grade, fired(result)) == (row.grade, row.fired), result.caps


@pytest.mark.parametrize("row", [r for r in ROWS if r.offered_grade], ids=[r.id for r in ROWS if r.offered_grade])
def test_without_the_simulation_the_offered_rules_give_the_old_grade(row: Row):
    row.facts.client_simulation = None
    assert grade(row.facts).grade == row.offered_grade


def test_a_cap_names_the_clients_and_what_they_got():
    result = grade(with_extra(TRIPLE_DES, first=True, sim=simulation(TLS13, old_get=TRIPLE_DES)))
    (cap,) = result.caps
    assert "Java 8u31 gets TLS_RSA_WITH_3DES_EDE_CBC_SHA" in cap.reason and "Chromium" not in cap.reason
    result = grade(tls12(RSA_GCM[1], sim=simulation(RSA_GCM)))
    reasons = " ".join(c.reason for c in result.caps)
    assert "Chromium gets TLS_RSA_WITH_AES_128_GCM_SHA256" in reasons and "Java 8u31" not in reasons


def test_the_modern_client_rule_cannot_answer_without_a_modern_handshake():
    facts = tls12(RSA_GCM[1], sim=simulation(None, old_get=RSA_GCM))
    assert modern_client_caps(negotiated(facts)) is None
    assert modern_client_caps(negotiated(make_facts())) is None          # no simulation at all
    assert modern_client_caps(negotiated(make_facts(client_simulation=simulation(TLS13)))) == []
