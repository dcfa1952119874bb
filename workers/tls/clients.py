"""Client handshake simulation: replay each recorded client's ClientHello and read what the server
picks (SSL Labs' "Handshake Simulation", testssl's "Client simulation").

The profiles (tlsaudit/domain/data/client_profiles.json) were recorded from the real clients by
tests/support/record_clients.py, or, for clients that cannot run here (`"recorded": false`), read
from their published ClientHellos (the profile's `source` says where). A replay keeps what decides
the negotiation (suites, groups and which get key shares, versions, signature algorithms, ALPN, all
in the client's order) and sends fresh key shares of our own and the audited host as SNI; GREASE
values are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

from tls_parser.cipher_suites import CipherSuites

from tlsaudit.domain.client_limits import ClientLimits, enforce_limits
from tlsaudit.domain.scanfacts import CertificateDeployment, ClientHandshake
from workers.tls import hello
from workers.tls.probes import Endpoint, short_error

PROFILES_FILE = Path(__file__).resolve().parents[2] / "tlsaudit" / "domain" / "data" / "client_profiles.json"
_SUITE_NAMES = {**{s.value: s.name for s in CipherSuites}, **hello.TLS13_SUITES}
_ALERTS = {40: "handshake failure: no cipher suite or group in common", 70: "no protocol version in common",
           71: "insufficient security: the server wants stronger suites", 112: "the server does not know this name",
           47: "the server rejected a parameter (illegal_parameter)", 80: "internal error on the server"}


def load_profiles() -> dict:
    return json.loads(PROFILES_FILE.read_text())


def simulate_clients(endpoint: Endpoint, profiles: dict | None = None) -> list[ClientHandshake]:
    return [simulate(endpoint, name, profile) for name, profile in (profiles or load_profiles()).items()]


def with_limits(rows: list[ClientHandshake], deployments: list[CertificateDeployment],
                profiles: dict | None = None) -> list[ClientHandshake]:
    """Each row as its real client ends it, once the certificates are known: the limits a replayed
    ClientHello cannot show (minimum signature, DH and RSA sizes; tlsaudit/domain/client_limits.py)."""
    profiles = profiles or load_profiles()
    return [enforce_limits(row, ClientLimits.from_profile(profiles[row.client]), deployments,
                           profiles[row.client]["signature_algorithms"]) if row.client in profiles else row
            for row in rows]


def simulate(endpoint: Endpoint, name: str, profile: dict) -> ClientHandshake:
    """1. Send the client's offer. 2. A HelloRetryRequest for a group the client lists: send again
    with a share for it, as the client would. 3. Read version, suite and group, or why it failed."""
    label = profile["label"]
    kinds = {"recorded": profile.get("recorded", True), "modern": profile.get("modern", True)}
    spec = hello.spec_from_profile(profile)
    try:
        answer = hello.exchange(endpoint, spec, tls12_group=True)
        if answer.kind == "hello_retry" and answer.group in spec.groups:
            retry = hello.ClientHelloSpec(**{**spec.__dict__, "key_share_groups": (answer.group,)})
            answer = hello.exchange(endpoint, retry, tls12_group=True)
    except (OSError, ValueError) as exc:
        return ClientHandshake(name, label, error=f"could not be tested: {short_error(exc)}", tested=False,
                               **kinds)
    if answer.kind == "alert":
        return ClientHandshake(name, label, error=_ALERTS.get(answer.alert, f"alert {answer.alert}"), **kinds)
    if answer.kind != "server_hello":
        return ClientHandshake(name, label, error="the server closed the connection without answering", **kinds)
    return ClientHandshake(name, label, protocol=answer.version_name, suite=_SUITE_NAMES.get(answer.suite),
                           group=answer.group_name, dh_bits=answer.dh_bits, **kinds)
