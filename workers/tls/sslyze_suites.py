"""The accepted suites of SSL 2.0 to TLS 1.2 by offering many and removing the chosen.

sslyze tests each suite of each version on a connection of its own: 7 for SSL 2.0, 121 each for SSL 3.0,
TLS 1.0 and 1.1, 158 for TLS 1.2, 533 of an audit's ~645 connections. A server picks one suite from
whatever it is offered, so the same answer takes about one connection per accepted suite plus one per
offer, as testssl.sh enumerates: offer a slice of the version's suites, write down the one the server
picks, offer the rest again, until it refuses what is left.

It runs between sslyze's connectivity test and its job queue (sslyze's observer callback), through
sslyze's own client and connection: the OpenSSL build its per-suite test would use for each suite
(legacy for SSL 2.0 to TLS 1.1, either for TLS 1.2), the same SNI, STARTTLS prelude, socket limits and
per-server connection limit. A version it enumerates is taken out of sslyze's request and its result
written as sslyze would have written it: the accepted suites with the key exchange each negotiated
(the ephemeral key of a handshake in which the server chose that suite), names descending.

Where the answers cannot be trusted the version goes back to sslyze's per-suite test, whole:
- an answer that is neither a suite chosen nor a firm refusal (a timeout, a failure after the server
  chose a suite, a suite we did not offer, a surprise);
- a contradiction: the rest of a slice, refused, is offered again with one suite the server took from
  that client build, and the server must take it. A server or middlebox that refuses a ClientHello for
  one suite it chokes on, rather than for having none it accepts, refuses again, and is found out;
- no suite at all at the version sslyze's connectivity test negotiated, or an offer dropped twice without
  a word at a version the server speaks (a reset hides that offer's suites).
A version is refused as such when its first two offers both get an alert or error naming the version.
TLS 1.3 is left to sslyze: 5 suites, negotiated through an extension of their own.
"""

from __future__ import annotations

import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from operator import attrgetter

from nassl.ssl_client import ClientCertificateRequested, OpenSslVerifyEnum, OpenSslVersionEnum, SslClient
from sslyze.connection_helpers.tls_connection import NoCiphersAvailableBugInSSlyze
from sslyze.errors import ServerRejectedTlsHandshake, ServerTlsConfigurationNotSupported
from sslyze.plugins.openssl_cipher_suites._test_cipher_suite import (
    CipherSuiteAcceptedByServer,
    CipherSuiteRejectedByServer,
)
from sslyze.plugins.openssl_cipher_suites._tls12_workaround import WorkaroundForTls12ForCipherSuites
from sslyze.plugins.openssl_cipher_suites.cipher_suites import CipherSuitesRepository
from sslyze.plugins.openssl_cipher_suites.implementation import CipherSuitesScanResult
from sslyze.plugins.scan_commands import ScanCommand
from sslyze.scanner.models import CipherSuitesScanAttempt
from sslyze.scanner.scan_command_attempt import ScanCommandAttemptStatusEnum
from sslyze.server_connectivity import ServerConnectivityInfo, TlsVersionEnum

log = logging.getLogger(__name__)

PROBED = {
    ScanCommand.SSL_2_0_CIPHER_SUITES: TlsVersionEnum.SSL_2_0,
    ScanCommand.SSL_3_0_CIPHER_SUITES: TlsVersionEnum.SSL_3_0,
    ScanCommand.TLS_1_0_CIPHER_SUITES: TlsVersionEnum.TLS_1_0,
    ScanCommand.TLS_1_1_CIPHER_SUITES: TlsVersionEnum.TLS_1_1,
    ScanCommand.TLS_1_2_CIPHER_SUITES: TlsVersionEnum.TLS_1_2,
}
# Suites per offer: 32 keep the ClientHello under 256 bytes, below the sizes old middleboxes choke on.
OFFER_SIZE = 32
# An SSL 3.0 ClientHello has no extensions: 64 suites keep it under 256 bytes too (2 offers, not 4).
OFFER_SIZES = {TlsVersionEnum.SSL_3_0: 64}
# sslyze's words (tls_connection._HANDSHAKE_REJECTED_TLS_ERRORS) for a refusal of the version or of every
# suite offered; alerts that can follow a chosen suite (decrypt error, bad record mac...) are not here.
FIRM_REFUSALS = {"TLS alert: handshake failure", "TLS alert: protocol version ", "TLS error: wrong version number",
                 "TLS error: wrong SSL version", "TLS error: no cipher match", "TLS error: peer error no cipher",
                 "TLS error: no ciphers list", "TLS error: insufficient security"}
# The words of those that refuse the version itself: no other offer of it can fare better.
VERSION_REFUSALS = {"TLS alert: protocol version ", "TLS error: wrong version number", "TLS error: wrong SSL version"}
# The connection dropped without a word: a refusal for many servers, but also what a loss looks like.
DROPPED = {"Server rejected the connection", "Server interrupted the TLS handshake",
           "Server closed the connection during the TLS handshake"}
# What our client answers when none of the names can go out at this version: sslyze's per-suite test
# skips such suites (it lists them neither accepted nor rejected), and so do we.
UNSENDABLE = "none of these suites can be offered at this version"
VERSION_NAMES = {TlsVersionEnum.SSL_2_0: "SSL 2.0", TlsVersionEnum.SSL_3_0: "SSL 3.0", TlsVersionEnum.TLS_1_0: "TLS 1.0",
                 TlsVersionEnum.TLS_1_1: "TLS 1.1", TlsVersionEnum.TLS_1_2: "TLS 1.2"}


def completed(kind, result):
    """A command's result as sslyze's scanner wraps it (`kind`: its attempt class)."""
    return kind(status=ScanCommandAttemptStatusEnum.COMPLETED, error_reason=None, error_trace=None, result=result)


class Unclear(Exception):
    """An answer that does not let us enumerate the version by offers: sslyze tests it suite by suite."""


@dataclass(frozen=True)
class Answer:
    """One ClientHello's outcome: the suite the server chose (OpenSSL name) with its key exchange, or
    the refusal's words."""
    chosen: str | None = None
    key: object | None = None
    refusal: str | None = None


@dataclass
class Slice:
    """One offer's suites and what became of them: chosen one by one, the rest refused with `refusal`."""
    legacy: bool
    names: list[str]
    accepted: dict[str, object]      # OpenSSL name -> ephemeral key (or None)
    rest: list[str]
    refusal: str


def enumerate_versions(pool: ThreadPoolExecutor, info: ServerConnectivityInfo, commands) -> dict:
    """command -> its result for each version enumerated; a version with any unclear answer is left out,
    to sslyze. Each version is followed on a thread of its own that only waits: every offer goes through
    `pool`, whose size is the connection limit, so one version's next offers start as soon as its own
    answers are in, not when the slowest version's are."""
    with ThreadPoolExecutor(max(1, len(commands)), thread_name_prefix="version") as versions:
        found = {command: versions.submit(enumerate_version, pool, info, PROBED[command]) for command in commands}
        return {command: attempt for command, future in found.items() if (attempt := future.result()) is not None}


def enumerate_version(pool: ThreadPoolExecutor, info: ServerConnectivityInfo, version: TlsVersionEnum):
    """The version's first two slices; refused as a version in both (the alert or error names the version,
    whatever the suites), it is done at that; else its other slices, then the checks. TLS 1.2, which
    nearly every server speaks, has all its slices offered at once."""
    plan = offers(version)
    head = len(plan) if version is TlsVersionEnum.TLS_1_2 else 2
    futures = [pool.submit(enumerate_slice, info, version, legacy, names) for legacy, names in plan[:head]]
    failed = any(future.exception() is not None for future in futures)   # unclear already: spend no more
    if not failed and not all(version_refused(future.result()) for future in futures):
        futures += [pool.submit(enumerate_slice, info, version, legacy, names) for legacy, names in plan[head:]]
    try:
        found = [future.result() for future in futures]
        if version is TlsVersionEnum.TLS_1_2:
            found += modern_reoffers(pool, info, found)
        if not any(s.accepted for s in found) and negotiated(info) is version:
            raise Unclear("every offer refused, yet sslyze's connectivity test negotiated this version")
        if any(s.accepted for s in found) and (dropped := [s for s in found if s.rest and s.refusal in DROPPED]):
            # A version it speaks, and an offer it dropped twice without a word: a reset (rate limit,
            # IPS, loss) hides that offer's suites, which no re-offer with a suite it takes would reveal.
            raise Unclear(f"the server speaks it, yet dropped an offer twice ({dropped[0].refusal})")
        if all(version_refused(s) for s in found):
            return refused_attempt(version, found[0].refusal)
        confirm_refusals(pool, info, version, found)
    except Unclear as why:
        log.info("%s left to sslyze's per-suite test: %s", VERSION_NAMES[version], why)
        return None
    return version_attempt(version, found)


def negotiated(info: ServerConnectivityInfo) -> TlsVersionEnum:
    """The version sslyze's connectivity test completed a handshake at: the server accepts a suite there."""
    return info.tls_probing_result.highest_tls_version_supported


def version_refused(found: Slice) -> bool:
    """The server refused the version itself (its alert or error names the version), whatever the suites."""
    return not found.accepted and found.refusal in VERSION_REFUSALS


def offers(version: TlsVersionEnum) -> list[tuple[bool, list[str]]]:
    """(legacy OpenSSL?, suite names) per slice: the client build sslyze's per-suite test would use
    (legacy for SSL 2.0 to TLS 1.1, either for TLS 1.2 depending on the suite), ClientHellos under 256
    bytes each, so that a server refusing long ones still sees offers it can answer."""
    names = sorted(suite.openssl_name for suite in CipherSuitesRepository.get_all_cipher_suites(version))
    if version is not TlsVersionEnum.TLS_1_2:
        return [(True, chunk) for chunk in chunks(names, OFFER_SIZES.get(version, OFFER_SIZE))]
    legacy = [name for name in names if WorkaroundForTls12ForCipherSuites.requires_legacy_openssl(name)]
    modern = [name for name in names if name not in legacy]
    return [(is_legacy, chunk) for is_legacy, group in ((True, legacy), (False, modern)) for chunk in chunks(group)]


def modern_reoffers(pool: ThreadPoolExecutor, info: ServerConnectivityInfo, found: list[Slice]) -> list[Slice]:
    """The signed (EC)DHE suites the legacy build offered in vain at TLS 1.2, offered again by the modern
    build. sslyze offers a TLS 1.2 suite through the legacy OpenSSL 1.0.2 whenever that build has it,
    and 1.0.2 offers neither Ed25519/Ed448 nor RSA-PSS signatures nor X25519: a server with such a key
    (or only that group) refuses it, and its TLS 1.2 looked refused though `openssl s_client -tls1_2`
    and browsers negotiate it. A re-offer can only add suites (the server completed a handshake with
    each), so its refusals are not confirmed, and an unclear answer just adds nothing. Only when the
    legacy build got no signed suite at all: a server it can sign for needs no second look (an audit's
    connections are counted)."""
    if any(name.startswith(SIGNED) for s in found if s.legacy for name in s.accepted):
        return []
    names = [name for s in found if s.legacy for name in s.rest if name in modern_tls12_suites()
             and name.startswith(SIGNED)]
    slices = [pool.submit(enumerate_slice, info, TlsVersionEnum.TLS_1_2, False, chunk) for chunk in chunks(names)]
    return [reoffer for future in slices if (reoffer := settled_reoffer(future)) is not None]


def settled_reoffer(future) -> Slice | None:
    try:
        found = future.result()
    except Unclear:
        return None
    return Slice(False, found.names, found.accepted, [], "") if found.accepted else None


SIGNED = ("ECDHE-", "DHE-")     # OpenSSL names of the (EC)DHE suites, whose key exchange the server signs


@functools.cache
def modern_tls12_suites() -> frozenset[str]:
    client = SslClient(ssl_version=OpenSslVersionEnum.TLSV1_2, ssl_verify=OpenSslVerifyEnum.NONE)
    client.set_cipher_list("ALL:COMPLEMENTOFALL")
    return frozenset(client.get_cipher_list())


def chunks(names: list[str], size: int = OFFER_SIZE) -> list[list[str]]:
    """Near-equal slices of at most `size` names."""
    count = -(-len(names) // size)
    return [names[i::count] for i in range(count)] if names else []


def enumerate_slice(info: ServerConnectivityInfo, version: TlsVersionEnum, legacy: bool, names: list[str]) -> Slice:
    """Offer `names`, remove the one chosen, offer the rest, until the server refuses or none is left."""
    accepted, rest = {}, list(names)
    while rest:
        answer = settled_answer(info, version, rest, legacy)
        if answer.refusal == UNSENDABLE:
            return Slice(legacy, names, accepted, [], "")
        if answer.chosen is None:
            return Slice(legacy, names, accepted, rest, answer.refusal)
        if answer.chosen not in rest:
            raise Unclear(f"the server chose {answer.chosen}, which was not offered (any more)")
        accepted[answer.chosen] = answer.key
        rest.remove(answer.chosen)
    return Slice(legacy, names, accepted, rest, "")


def confirm_refusals(pool: ThreadPoolExecutor, info: ServerConnectivityInfo, version: TlsVersionEnum,
                     slices: list[Slice]) -> None:
    """A refused rest offered again with one suite the server took from the same build must get that
    suite chosen; a server that refuses again was refusing something in the rest, not the lack of a
    suite it accepts (one poison suite, a quirk), and its refusals cannot be trusted."""
    checks = []
    for build in (True, False):
        taken = [name for s in slices if s.legacy is build for name in s.accepted]
        if not taken:
            continue    # nothing accepted from this build: every offer refused, the version (or build) is off
        checks += [(refused, taken[0], pool.submit(settled_answer, info, version, refused.rest + [taken[0]], build))
                   for refused in slices if refused.legacy is build and refused.rest]
    for refused, anchor, answer in checks:
        if answer.result().chosen != anchor:
            raise Unclear(f"the rest of an offer, refused ({refused.refusal}), was refused again with "
                          f"{anchor} added, which the server accepts")


def settled_answer(info: ServerConnectivityInfo, version: TlsVersionEnum, names: list[str], legacy: bool) -> Answer:
    """A chosen suite or a firm refusal; a connection dropped without a word is asked again once (a reset
    can be the network's), and a second drop counts as a refusal. Anything else: Unclear."""
    answer, firm = one_offer(info, version, names, legacy)
    if answer.chosen is not None or firm:
        return answer
    again, firm = one_offer(info, version, names, legacy)
    if again.chosen is None and not firm and again.refusal not in DROPPED:
        raise Unclear(again.refusal or "no answer")
    return again


def one_offer(info: ServerConnectivityInfo, version: TlsVersionEnum, names: list[str],
              legacy: bool) -> tuple[Answer, bool]:
    """(the answer to one ClientHello of `names`, whether it was a firm refusal). A suite counts as chosen
    as sslyze's per-suite test counts it accepted: a handshake completed, or stopped by our client after
    the server chose (a DH group too weak for it, a client certificate asked for)."""
    connection = None
    try:
        connection = info.get_preconfigured_tls_connection(override_tls_version=version,
                                                           should_use_legacy_openssl=legacy)
        connection.ssl_client.set_cipher_list(":".join(names))
        connection.connect()
        return Answer(chosen_suite(connection.ssl_client), connection.ssl_client.get_ephemeral_key()), False
    except NoCiphersAvailableBugInSSlyze:
        return Answer(refusal=UNSENDABLE), True
    except ServerTlsConfigurationNotSupported:
        return Answer(chosen_suite(connection.ssl_client)), False
    except ClientCertificateRequested:
        return Answer(chosen_suite(connection.ssl_client), connection.ssl_client.get_ephemeral_key()), False
    except ServerRejectedTlsHandshake as rejected:
        if connection is not None and chosen_suite(connection.ssl_client):
            raise Unclear(f"the server chose a suite, then: {rejected.error_message}") from None
        if rejected.error_message in FIRM_REFUSALS:
            return Answer(refusal=rejected.error_message), True
        if rejected.error_message in DROPPED:
            return Answer(refusal=rejected.error_message), False
        raise Unclear(rejected.error_message) from None
    except Unclear:
        raise
    except Exception as exc:   # noqa: BLE001 — a timeout, anything: sslyze's per-suite test decides
        raise Unclear(f"{type(exc).__name__}: {exc}") from None
    finally:
        if connection is not None:
            close_quietly(connection)


def chosen_suite(ssl_client) -> str | None:
    """The suite the server's ServerHello named (OpenSSL name), or None before any ServerHello."""
    try:
        name = ssl_client.get_current_cipher_name()
    except Exception:   # noqa: BLE001 — no current cipher: nothing was chosen
        return None
    return name or None


def close_quietly(connection) -> None:
    try:
        connection.close()
    except Exception:   # noqa: BLE001 — the socket is closed either way; a failed goodbye changes nothing
        log.debug("closing a suite offer failed", exc_info=True)


def refused_attempt(version: TlsVersionEnum, why: str) -> CipherSuitesScanAttempt:
    """The version refused as such: no suite accepted, every suite sslyze lists for it rejected with why."""
    reason = f"{VERSION_NAMES[version]} refused: {why}"
    suites = sorted(CipherSuitesRepository.get_all_cipher_suites(version), key=attrgetter("name"), reverse=True)
    result = CipherSuitesScanResult(
        tls_version_used=version, accepted_cipher_suites=[],
        rejected_cipher_suites=[CipherSuiteRejectedByServer(cipher_suite=s, error_message=reason) for s in suites])
    return completed(CipherSuitesScanAttempt, result)


def version_attempt(version: TlsVersionEnum, slices: list[Slice]) -> CipherSuitesScanAttempt:
    """sslyze's result for the version: accepted and rejected suites, each list by name descending."""
    by_name = {suite.openssl_name: suite for suite in CipherSuitesRepository.get_all_cipher_suites(version)}
    accepted = [CipherSuiteAcceptedByServer(cipher_suite=by_name[name], ephemeral_key=key)
                for s in slices for name, key in s.accepted.items()]
    refusals = "; ".join(dict.fromkeys(s.refusal for s in slices if s.rest))
    reason = (f"{VERSION_NAMES[version]} refused in every offer of its suites: {refusals}"
              if not accepted else f"not chosen from an offer of the suites left ({refusals})")
    rejected = [CipherSuiteRejectedByServer(cipher_suite=by_name[name], error_message=reason)
                for s in slices for name in s.rest]
    return completed(CipherSuitesScanAttempt, CipherSuitesScanResult(
        tls_version_used=version,
        accepted_cipher_suites=sorted(accepted, key=attrgetter("cipher_suite.name"), reverse=True),
        rejected_cipher_suites=sorted(rejected, key=attrgetter("cipher_suite.name"), reverse=True)))
