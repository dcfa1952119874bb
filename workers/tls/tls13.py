"""TLS 1.3 probes written on our own ClientHello (workers/tls/hello.py): the server's suite
preference, and which key-exchange groups (post-quantum hybrids included) it accepts and prefers."""

from __future__ import annotations

import ssl
from collections.abc import Sequence

from tlsaudit.domain.scanfacts import (
    BAD,
    NOT_TESTED,
    OK,
    PQ_DRAFT_GROUP,
    PQ_GROUPS,
    Check,
    CipherSuite,
    PostQuantum,
    ServerPreference,
)
from workers.tls import hello
from workers.tls.probes import Endpoint, PreferenceObservation, observe_picks, short_error

# Classical groups every TLS 1.3 server has one of; shares for the first two, as browsers send.
_CLASSICAL_GROUPS = (0x001D, 0x0017, 0x0018, 0x0019)
_CLASSICAL_SHARES = (0x001D, 0x0017)


def probe_tls13_preference(endpoint: Endpoint, accepted: Sequence[CipherSuite]) -> ServerPreference:
    """Does the server impose its TLS 1.3 suite order? Same steps as probes.probe_preference:
    offer the accepted suites in one order, then reversed; same pick = its order, which we then
    read by offering what is left again and again."""
    names = [s.name for s in accepted]
    known = [n for n in names if n in hello.TLS13_SUITE_IDS]
    if len(accepted) < 2:
        return ServerPreference("TLSv1.3", None, tuple(names),
                                reason="The server accepts a single TLS 1.3 suite, so there is no order to impose.")
    try:
        first = _pick(endpoint, known)
        second = _pick(endpoint, list(reversed(known)))
        if first != second:
            follows = (first, second) == (known[0], known[-1])
            return ServerPreference("TLSv1.3", False if follows else None, tuple(known), reason="" if follows else
                                    f"The server picked {first} then {second}: neither its own fixed order nor ours.")
        return ServerPreference("TLSv1.3", True, tuple(_server_order(endpoint, known, first)))
    except (OSError, ssl.SSLError, ValueError) as exc:
        return ServerPreference("TLSv1.3", None, tuple(names), reason=f"The probe failed: {short_error(exc)}")


def observe_tls13_preference(endpoint: Endpoint) -> PreferenceObservation | None:
    """probes.observe_preference for TLS 1.3: every suite our ClientHello knows, in sslyze's order."""
    return observe_picks(lambda names: _pick(endpoint, names), sorted(hello.TLS13_SUITE_IDS, reverse=True))


def tls13_preference_observed(observation: PreferenceObservation | None,
                              accepted: Sequence[CipherSuite]) -> ServerPreference | None:
    """probe_tls13_preference's answer read from an observation; None when only the probe itself can
    give it (the same cases as probes.preference_observed)."""
    known = [s.name for s in accepted if s.name in hello.TLS13_SUITE_IDS]
    if observation is None or len(accepted) < 2 or len(known) < 2:
        return None
    if [n for n in observation.offered if n in known] != known:
        return None
    if observation.first != observation.second:
        if (observation.first, observation.second) != (known[0], known[-1]):
            return None
        return ServerPreference("TLSv1.3", False, tuple(known))
    if sorted(observation.chain) != sorted(known):
        return None
    return ServerPreference("TLSv1.3", True, observation.chain)


def _server_order(endpoint: Endpoint, offered: list[str], top: str) -> list[str]:
    order, remaining = [top], [n for n in offered if n != top]
    while len(remaining) > 1:
        pick = _pick(endpoint, remaining)
        order.append(pick)
        remaining.remove(pick)
    return order + remaining


def _pick(endpoint: Endpoint, suites: Sequence[str]) -> str:
    spec = hello.ClientHelloSpec(suites=[hello.TLS13_SUITE_IDS[n] for n in suites],
                                 groups=_CLASSICAL_GROUPS, key_share_groups=_CLASSICAL_SHARES)
    answer = hello.exchange(endpoint, spec)
    if answer.kind not in ("server_hello", "hello_retry") or answer.version != 0x0304:
        raise ValueError(f"no TLS 1.3 ServerHello ({_describe(answer)})")
    return hello.TLS13_SUITES.get(answer.suite, f"0x{answer.suite:04X}")


def _describe(answer: hello.ServerAnswer) -> str:
    if answer.kind == "alert":
        return f"alert {answer.alert}"
    if answer.kind == "closed":
        return "the connection closed"
    return f"{answer.kind} version {answer.version_name}"


# --- post-quantum key exchange ----------------------------------------------------------------------

_ALL_TLS13_SUITES = (0x1301, 0x1302, 0x1303)
_BROWSER_GROUPS = (0x11EC, 0x001D, 0x0017, 0x0018)      # Chrome 131+ / Firefox 132+: hybrid first
_BROWSER_SHARES = (0x11EC, 0x001D)


def probe_post_quantum(endpoint: Endpoint) -> PostQuantum:
    """Which hybrid groups the server accepts, and whether it prefers one.

    1. Each hybrid (and the obsolete Kyber draft) offered alone, with its key share: a ServerHello
       with that group = accepted; an alert or a hang-up = not.
    2. A browser's offer (X25519MLKEM768 then X25519, a share for each): the group it picks.
    3. The same groups with X25519 listed first: picking the hybrid anyway = it prefers post-quantum.
    """
    try:
        accepted = [name for name in PQ_GROUPS if _accepts(endpoint, hello.GROUP_IDS[name])]
        draft = _accepts(endpoint, hello.GROUP_IDS[PQ_DRAFT_GROUP])
        browser = _group_picked(endpoint, _BROWSER_GROUPS, _BROWSER_SHARES)
        prefers = None
        if "X25519MLKEM768" in accepted:
            prefers = _group_picked(endpoint, (0x001D, 0x11EC, 0x0017), (0x001D, 0x11EC)) == "X25519MLKEM768"
    except (OSError, ValueError) as exc:
        return PostQuantum(Check(NOT_TESTED, reason=f"The post-quantum probe failed: {short_error(exc)}"))
    rejected = tuple(name for name in PQ_GROUPS if name not in accepted)
    check = (Check(OK, detail=f"Accepts {', '.join(accepted)}; a browser offering X25519MLKEM768 gets {browser}.")
             if accepted else Check(BAD, detail="Accepts none of " + ", ".join(PQ_GROUPS)
                                    + f"; a browser offering X25519MLKEM768 gets {browser}."))
    return PostQuantum(check, accepted=tuple(accepted), rejected=rejected, draft_kyber=draft,
                       browser_choice=browser, prefers_pq=prefers)


def _accepts(endpoint: Endpoint, group: int) -> bool:
    spec = hello.ClientHelloSpec(suites=_ALL_TLS13_SUITES, groups=(group,), key_share_groups=(group,))
    answer = hello.exchange(endpoint, spec)
    return answer.kind == "server_hello" and answer.version == 0x0304 and answer.group == group


def _group_picked(endpoint: Endpoint, groups: Sequence[int], shares: Sequence[int]) -> str | None:
    """The group of the ServerHello (or the one a HelloRetryRequest asks for); None when refused."""
    answer = hello.exchange(endpoint, hello.ClientHelloSpec(suites=_ALL_TLS13_SUITES, groups=groups,
                                                            key_share_groups=shares))
    if answer.kind in ("server_hello", "hello_retry") and answer.group is not None:
        return answer.group_name
    return None
