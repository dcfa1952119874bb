"""The suite order of TLS 1.0-1.2 read from our own ClientHello, for a server some of whose accepted
suites Python's OpenSSL 3 cannot offer (RC4, export, some CBC suites): the server's choice is in its
ServerHello, which needs nothing from our side but the offer. The same steps as
probes.probe_preference: offer the accepted suites in one order, then reversed; the same pick both
times is the server's order, read by offering what is left again and again."""

from __future__ import annotations

from collections.abc import Sequence

from tls_parser.cipher_suites import CipherSuites

from tlsaudit.domain.scanfacts import CipherSuite, ServerPreference
from workers.tls import hello
from workers.tls.probes import Endpoint, short_error

SUITE_IDS = {suite.name: suite.value for suite in CipherSuites}
SUITE_NAMES = {value: name for name, value in SUITE_IDS.items()}
VERSION_CODES = {"TLSv1.0": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303}
GROUPS = (0x001D, 0x0017, 0x0018, 0x0019)


def probe_preference_by_hello(endpoint: Endpoint, protocol: str, accepted: Sequence[CipherSuite]) -> ServerPreference:
    names = [s.name for s in accepted]
    known = [n for n in names if n in SUITE_IDS]
    unknown = [n for n in names if n not in SUITE_IDS]
    try:
        first, second = pick(endpoint, protocol, known), pick(endpoint, protocol, list(reversed(known)))
        if first != second:
            follows = (first, second) == (known[0], known[-1])
            return ServerPreference(protocol, False if follows else None, tuple(names), reason="" if follows else
                                    f"The server picked {first} then {second}: neither its own fixed order nor ours.")
        order, remaining = [first], [n for n in known if n != first]
        while len(remaining) > 1:
            order.append(pick(endpoint, protocol, remaining))
            remaining.remove(order[-1])
    except (OSError, ValueError) as exc:
        return ServerPreference(protocol, None, tuple(names), reason=f"The probe failed: {short_error(exc)}")
    note = f"{len(unknown)} suite(s) our ClientHello cannot name are listed last." if unknown else ""
    return ServerPreference(protocol, True, tuple(order + remaining + unknown), reason=note)


def pick(endpoint: Endpoint, protocol: str, names: Sequence[str]) -> str:
    """The suite (IANA name) the server chooses from `names`, offered in that order at `protocol`."""
    spec = hello.ClientHelloSpec(suites=[SUITE_IDS[n] for n in names], groups=GROUPS, key_share_groups=(),
                                 versions=(VERSION_CODES[protocol],))
    answer = hello.exchange(endpoint, spec)
    if answer.kind != "server_hello" or answer.version != VERSION_CODES[protocol]:
        raise ValueError(f"no {protocol} ServerHello ({answer.kind}{f' {answer.alert}' if answer.alert else ''})")
    if SUITE_NAMES.get(answer.suite) not in names:
        raise ValueError(f"the server chose 0x{answer.suite:04X}, which was not offered")
    return SUITE_NAMES[answer.suite]
