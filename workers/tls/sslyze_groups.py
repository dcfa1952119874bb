"""The groups a server accepts for (EC)DHE, by offering many and removing the chosen.

sslyze's elliptic-curves command offers each group its client knows on a connection of its own (~30),
at the highest version the server speaks, with only ECDHE suites. The same client and ClientHello with
every group listed tells which one the server picks; offering the rest again, until it refuses, finds
each group it accepts at one connection apiece plus the last refusal. At TLS 1.3 our client sends a key
share for the first group only, and a server that picks another asks for its share (HelloRetryRequest)
on the same connection, as with sslyze's one-group ClientHello.

A refused rest is offered once more with one accepted group added, which the server must then pick; any
answer that is neither a group chosen nor a firm refusal, or a contradiction, leaves the command to
sslyze (None).
"""

from __future__ import annotations

import logging

from nassl.ephemeral_key_info import _OPENSSL_NID_TO_SECG_ANSI_X9_62, EcDhEphemeralKeyInfo, OpenSslEcNidEnum
from nassl.ssl_client import ClientCertificateRequested
from sslyze.errors import ServerRejectedTlsHandshake
from sslyze.plugins.elliptic_curves_plugin import EllipticCurve, SupportedEllipticCurvesScanResult
from sslyze.scanner.models import SupportedEllipticCurvesScanAttempt
from sslyze.server_connectivity import ServerConnectivityInfo, enable_ecdh_cipher_suites

from workers.tls.sslyze_suites import DROPPED, FIRM_REFUSALS, Unclear, close_quietly, completed

log = logging.getLogger(__name__)


def enumerate_groups(info: ServerConnectivityInfo) -> SupportedEllipticCurvesScanAttempt | None:
    """sslyze's elliptic-curves result by offers, or None: left to sslyze (no ECDH at all, which its
    command answers without a connection, or an answer we cannot trust)."""
    if not info.tls_probing_result.supports_ecdh_key_exchange:
        return None
    groups = sorted(OpenSslEcNidEnum.get_supported_by_ssl_client(), key=lambda nid: nid.value)
    try:
        accepted, rest = offer_until_refused(info, groups)
        confirm_refusal(info, accepted, rest)
    except Unclear as why:
        log.info("groups left to sslyze's one-group test: %s", why)
        return None
    return completed(SupportedEllipticCurvesScanAttempt, SupportedEllipticCurvesScanResult(
        supports_ecdh_key_exchange=True, supported_curves=[curve(nid) for nid in accepted],
        rejected_curves=[curve(nid) for nid in rest]))


def offer_until_refused(info: ServerConnectivityInfo, groups: list) -> tuple[list, list]:
    accepted, rest = [], list(groups)
    while rest:
        chosen = settled_pick(info, rest)
        if chosen is None:
            break
        if chosen not in rest:
            raise Unclear(f"the server chose {chosen.name}, which was not offered (any more)")
        accepted.append(chosen)
        rest.remove(chosen)
    return accepted, rest


def confirm_refusal(info: ServerConnectivityInfo, accepted: list, rest: list) -> None:
    """The refused rest with one accepted group added must get that group picked: a server refusing again
    was refusing something in the rest, not the lack of a group it accepts. And some group must have been
    accepted: sslyze's connectivity test completed an ECDHE handshake."""
    if not accepted:
        raise Unclear("every offer of groups refused, yet the server completed an ECDHE handshake before")
    if accepted and rest and settled_pick(info, rest + accepted[:1]) != accepted[0]:
        raise Unclear(f"the groups left, refused, were refused again with {accepted[0].name} added")


def settled_pick(info: ServerConnectivityInfo, groups: list):
    """The group chosen, or None for a firm refusal (or a connection dropped twice); else Unclear."""
    chosen, refusal = one_offer(info, groups)
    if chosen is not None or refusal in FIRM_REFUSALS:
        return chosen
    chosen, refusal = one_offer(info, groups)
    if chosen is None and refusal not in FIRM_REFUSALS | DROPPED:
        raise Unclear(refusal or "no answer")
    return chosen


def one_offer(info: ServerConnectivityInfo, groups: list) -> tuple[object | None, str | None]:
    """(the group the server's key exchange used, or None; the refusal's words) for one ClientHello
    offering `groups` in that order, as sslyze's one-group test would send it otherwise."""
    version = info.tls_probing_result.highest_tls_version_supported
    connection = info.get_preconfigured_tls_connection(override_tls_version=version, should_use_legacy_openssl=False)
    enable_ecdh_cipher_suites(version, connection.ssl_client)
    connection.ssl_client.set_groups(groups)
    try:
        connection.connect()
        return key_group(connection.ssl_client), None
    except ClientCertificateRequested:
        return key_group(connection.ssl_client), None
    except ServerRejectedTlsHandshake as rejected:
        if key_or_none(connection.ssl_client) is not None:
            raise Unclear(f"the server chose a group, then: {rejected.error_message}") from None
        return None, rejected.error_message
    except Unclear:
        raise
    except Exception as exc:   # noqa: BLE001 — a timeout, a group we did not offer, anything: sslyze decides
        raise Unclear(f"{type(exc).__name__}: {exc}") from None
    finally:
        close_quietly(connection)


def key_or_none(ssl_client):
    try:
        return ssl_client.get_ephemeral_key()
    except Exception:   # noqa: BLE001 — no key negotiated yet
        return None


def key_group(ssl_client):
    key = ssl_client.get_ephemeral_key()
    if not isinstance(key, EcDhEphemeralKeyInfo):
        raise Unclear(f"the handshake's key exchange was not (EC)DHE over a group: {key!r}")
    return OpenSslEcNidEnum(key.curve)


def curve(nid) -> EllipticCurve:
    """Named as sslyze names it."""
    return EllipticCurve(name=_OPENSSL_NID_TO_SECG_ANSI_X9_62.get(nid, f"unknown-curve-with-openssl-id-{nid.value}"),
                         openssl_nid=nid.value)
