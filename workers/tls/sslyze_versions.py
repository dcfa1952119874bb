"""Protocol versions the server refuses outright, so that sslyze does not ask it about each suite.

sslyze tests every suite of every version on a connection of its own: 7 for SSL 2.0, 121 each for SSL 3.0,
TLS 1.0 and 1.1, 158 for TLS 1.2. A server that has turned a version off refuses all of them, one
connection at a time, and under the 5-connections-per-address limit that is most of an audit's time
(issue #16: 533 of an audit's ~645 connections). Once sslyze's connectivity test has passed, we offer
each of those versions every suite sslyze knows for it, in offers of at most 32 suites, through sslyze's
own client and connection (the OpenSSL build its per-suite test would use, the same SNI, STARTTLS
prelude and socket limits). When the server refuses every offer, no subset of them can be accepted: the
version's per-suite command is dropped from the request before sslyze queues its jobs, and its result
is written as sslyze would have written it, no suite accepted, the refusal as each suite's reason. Only a
firm refusal counts (offer_refusal); a version with an offer accepted, timed out or failed in any other
way is enumerated by sslyze as before.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from operator import attrgetter

from sslyze.errors import ServerRejectedTlsHandshake
from sslyze.plugins.openssl_cipher_suites._test_cipher_suite import CipherSuiteRejectedByServer
from sslyze.plugins.openssl_cipher_suites._tls12_workaround import WorkaroundForTls12ForCipherSuites
from sslyze.plugins.openssl_cipher_suites.cipher_suites import CipherSuitesRepository
from sslyze.plugins.openssl_cipher_suites.implementation import CipherSuitesScanResult
from sslyze.plugins.scan_commands import ScanCommand
from sslyze.scanner.models import CipherSuitesScanAttempt
from sslyze.scanner.scan_command_attempt import ScanCommandAttemptStatusEnum
from sslyze.server_connectivity import ServerConnectivityInfo, TlsVersionEnum

log = logging.getLogger(__name__)

# TLS 1.3 is left to sslyze: 5 suites, and its versions negotiate through an extension of their own.
PROBED = {
    ScanCommand.SSL_2_0_CIPHER_SUITES: TlsVersionEnum.SSL_2_0,
    ScanCommand.SSL_3_0_CIPHER_SUITES: TlsVersionEnum.SSL_3_0,
    ScanCommand.TLS_1_0_CIPHER_SUITES: TlsVersionEnum.TLS_1_0,
    ScanCommand.TLS_1_1_CIPHER_SUITES: TlsVersionEnum.TLS_1_1,
    ScanCommand.TLS_1_2_CIPHER_SUITES: TlsVersionEnum.TLS_1_2,
}
# Suites per probe connection: 32 keep the ClientHello under 256 bytes, below the sizes old middleboxes choke on.
OFFER_SIZE = 32
# sslyze's words (tls_connection._HANDSHAKE_REJECTED_TLS_ERRORS) for a refusal of the version or of every
# suite offered; alerts that can follow a chosen suite (decrypt error, bad record mac...) are not here.
FIRM_REFUSALS = {"TLS alert: handshake failure", "TLS alert: protocol version ", "TLS error: wrong version number",
                 "TLS error: wrong SSL version", "TLS error: no cipher match", "TLS error: peer error no cipher",
                 "TLS error: no ciphers list", "TLS error: insufficient security"}
# The connection dropped without a word: a refusal for many servers, but also what a loss looks like.
DROPPED = {"Server rejected the connection", "Server interrupted the TLS handshake",
           "Server closed the connection during the TLS handshake"}
VERSION_NAMES = {TlsVersionEnum.SSL_2_0: "SSL 2.0", TlsVersionEnum.SSL_3_0: "SSL 3.0", TlsVersionEnum.TLS_1_0: "TLS 1.0",
                 TlsVersionEnum.TLS_1_1: "TLS 1.1", TlsVersionEnum.TLS_1_2: "TLS 1.2"}


def skip_refused_versions(request, connectivity_result, connections: int) -> dict[ScanCommand, str]:
    """Probe the versions `request` would enumerate, at most `connections` at a time, and drop from it
    those the server refuses; returns command -> the server's refusal. Called between sslyze's connectivity
    test and its job queue, on the thread that feeds that queue: it never raises (a probe that goes wrong
    leaves every version to sslyze), or sslyze's threads would wait for a queue entry forever."""
    try:
        wanted = [command for command in PROBED if command in request.scan_commands
                  and PROBED[command] != connectivity_result.highest_tls_version_supported]  # it just took that one
        if not wanted:
            return {}
        info = ServerConnectivityInfo(server_location=request.server_location,
                                      network_configuration=request.network_configuration,
                                      tls_probing_result=connectivity_result)
        refused = refused_versions(info, wanted, connections)
    except Exception:   # noqa: BLE001 — a bug here must cost time, never the audit
        log.exception("version probes failed; sslyze enumerates every version")
        return {}
    # ServerScanRequest is frozen but its set is not; sslyze reads it only when it queues the jobs, after this.
    request.scan_commands.difference_update(refused)
    return refused


def refused_versions(info: ServerConnectivityInfo, commands, connections: int) -> dict[ScanCommand, str]:
    with ThreadPoolExecutor(max(1, min(len(commands), connections)), thread_name_prefix="versions") as pool:
        answers = {command: pool.submit(version_refusal, info, PROBED[command]) for command in commands}
        return {command: why for command, future in answers.items() if (why := future.result())}


def version_refusal(info: ServerConnectivityInfo, version: TlsVersionEnum) -> str | None:
    """The server's refusal when every offer of `version` is refused; None when it took one or never said.
    The offers go out one after another and stop at the first that is not refused."""
    refusals = []
    for legacy, names in offers(version):
        refusal = offer_refusal(info, version, names, legacy)
        if refusal is None:
            return None
        refusals.append(refusal)
    return "; ".join(dict.fromkeys(refusals)) or None


def offers(version: TlsVersionEnum) -> list[tuple[bool, list[str]]]:
    """(legacy OpenSSL?, suite names) per connection: the client build sslyze's per-suite test would use
    (legacy for SSL 2.0 to TLS 1.1, either for TLS 1.2 depending on the suite), at most OFFER_SIZE suites
    each. Smaller offers keep a refusal honest: a server that refuses long ClientHellos, or one suite it
    chokes on, still accepts the offer that holds its own suites, and the version is enumerated."""
    names = sorted(suite.openssl_name for suite in CipherSuitesRepository.get_all_cipher_suites(version))
    if version is not TlsVersionEnum.TLS_1_2:
        return [(True, chunk) for chunk in chunks(names)]
    legacy = [name for name in names if WorkaroundForTls12ForCipherSuites.requires_legacy_openssl(name)]
    modern = [name for name in names if name not in legacy]
    return [(is_legacy, chunk) for is_legacy, group in ((True, legacy), (False, modern)) for chunk in chunks(group)]


def chunks(names: list[str]) -> list[list[str]]:
    """Near-equal slices of at most OFFER_SIZE names."""
    count = -(-len(names) // OFFER_SIZE)
    return [names[i::count] for i in range(count)] if names else []


def offer_refusal(info: ServerConnectivityInfo, version: TlsVersionEnum, names: list[str], legacy: bool) -> str | None:
    """A refusal of the version: an alert or version error before the server chose any suite, or a
    connection dropped (reset, closed, silent) twice in a row. Anything else (a suite chosen
    and then a failure, a timeout, a client certificate asked for) is not a refusal."""
    refusal, firm = one_offer(info, version, names, legacy)
    if refusal is None or firm:
        return refusal
    again, _ = one_offer(info, version, names, legacy)     # a reset can be the network's, not the server's
    return again


def one_offer(info: ServerConnectivityInfo, version: TlsVersionEnum, names: list[str],
              legacy: bool) -> tuple[str | None, bool]:
    """(the refusal's words or None, whether it was a firm refusal) for one ClientHello of `names`."""
    connection = None
    try:
        connection = info.get_preconfigured_tls_connection(override_tls_version=version,
                                                           should_use_legacy_openssl=legacy)
        connection.ssl_client.set_cipher_list(":".join(names))
        connection.connect()
    except ServerRejectedTlsHandshake as rejected:
        if connection is not None and suite_chosen(connection.ssl_client):
            return None, False     # the server took a suite of ours at this version: sslyze must enumerate
        if rejected.error_message in FIRM_REFUSALS:
            return rejected.error_message, True
        return (rejected.error_message, False) if rejected.error_message in DROPPED else (None, False)
    except Exception:   # noqa: BLE001 — accepted with a twist (weak DH, client certificate), a timeout, anything
        log.debug("%s probe did not end in a refusal", VERSION_NAMES[version], exc_info=True)
    finally:
        if connection is not None:
            close_quietly(connection)
    return None, False


def suite_chosen(ssl_client) -> bool:
    """Whether the server's ServerHello got as far as naming a suite (then the failure came later)."""
    try:
        return bool(ssl_client.get_current_cipher_name())
    except Exception:   # noqa: BLE001 — no current cipher: nothing was chosen
        return False


def close_quietly(connection) -> None:
    try:
        connection.close()
    except Exception:   # noqa: BLE001 — the socket is closed either way; a failed goodbye changes nothing
        log.debug("closing a version probe failed", exc_info=True)


def with_refusals(result, refused: dict[ScanCommand, str]):
    """sslyze's ServerScanResult with each skipped version's command completed: no suite accepted, and
    every suite sslyze lists for the version rejected with the refusal as its reason (sslyze's own run
    would leave out those its client cannot send at that version; the stored JSON drops rejected suites)."""
    if not refused or result.scan_result is None:
        return result
    attempts = {command.value: refused_attempt(PROBED[command], why) for command, why in refused.items()}
    return replace(result, scan_result=replace(result.scan_result, **attempts))


def refused_attempt(version: TlsVersionEnum, why: str) -> CipherSuitesScanAttempt:
    reason = f"{VERSION_NAMES[version]} refused in every offer of its suites ({OFFER_SIZE} per connection): {why}"
    suites = sorted(CipherSuitesRepository.get_all_cipher_suites(version), key=attrgetter("name"), reverse=True)
    result = CipherSuitesScanResult(
        tls_version_used=version, accepted_cipher_suites=[],
        rejected_cipher_suites=[CipherSuiteRejectedByServer(cipher_suite=s, error_message=reason) for s in suites])
    return CipherSuitesScanAttempt(status=ScanCommandAttemptStatusEnum.COMPLETED, error_reason=None, error_trace=None,
                                   result=result)
