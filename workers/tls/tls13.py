"""TLS 1.3 probes written on our own ClientHello (workers/tls/hello.py): the server's suite
preference, and which key-exchange groups (post-quantum hybrids included) it accepts and prefers."""

from __future__ import annotations

import ssl
from collections.abc import Sequence

from tlsaudit.domain.scanfacts import CipherSuite, ServerPreference
from workers.tls import hello
from workers.tls.probes import Endpoint, short_error

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
