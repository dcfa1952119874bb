"""What sslyze would test one connection at a time, enumerated by offers instead.

Between sslyze's connectivity test and its job queue (its observer callback), the suites of each version
up to TLS 1.2 (sslyze_suites) and the groups (sslyze_groups) are enumerated by offering many and removing
the one the server chose, through sslyze's own client and connection. What was enumerated is taken out of
sslyze's request and written into its result afterwards as its own commands would have written it; what
could not be (an unclear answer, a contradiction) is left to sslyze's one-connection-per-item test.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from traceback import TracebackException

from nassl.ssl_client import ClientCertificateRequested
from sslyze.errors import ConnectionToServerTimedOut, ServerRejectedTlsHandshake, TlsHandshakeTimedOut
from sslyze.plugins.plugin_base import ScanJobResult
from sslyze.plugins.scan_commands import ScanCommand, ScanCommandsRepository
from sslyze.scanner.models import get_scan_command_attempt_cls
from sslyze.scanner.scan_command_attempt import ScanCommandAttemptStatusEnum, ScanCommandErrorReasonEnum
from sslyze.server_connectivity import ServerConnectivityInfo

from workers.tls import sslyze_groups, sslyze_suites
from workers.tls.facts import SUITE_COMMANDS

log = logging.getLogger(__name__)


def enumerate_by_offers(request, connectivity_result, connections: int) -> dict[ScanCommand, object]:
    """Enumerate the suites of each version up to TLS 1.2 that `request` would test one connection at a
    time, at most `connections` connections at a time, and take from it what was enumerated; returns
    command -> its result. Called on the thread that feeds sslyze's queue: it never raises (a bug
    leaves everything to sslyze), or sslyze's threads would wait for a queue entry forever."""
    try:
        if connectivity_result is None:
            return {}
        info = ServerConnectivityInfo(server_location=request.server_location,
                                      network_configuration=request.network_configuration,
                                      tls_probing_result=connectivity_result)
        with ThreadPoolExecutor(max(1, connections), thread_name_prefix="offers") as pool:
            versions = [command for command in sslyze_suites.PROBED if command in request.scan_commands]
            enumerated = sslyze_suites.enumerate_versions(pool, info, versions)
    except Exception:   # noqa: BLE001 — a bug here must cost connections, never the audit
        log.exception("enumeration by offers failed; sslyze tests everything one by one")
        return {}
    # ServerScanRequest is frozen but its set is not; sslyze reads it only when it queues the jobs, after this.
    request.scan_commands.difference_update(enumerated)
    return enumerated


def with_enumerated(result, enumerated: dict[ScanCommand, object]):
    """sslyze's ServerScanResult with each command we enumerated written in as its result."""
    if not enumerated or result.scan_result is None:
        return result
    attempts = {command.value: attempt for command, attempt in enumerated.items()}
    return replace(result, scan_result=replace(result.scan_result, **attempts))


def accepted_suites(enumerated: dict[ScanCommand, object]) -> dict[str, list[str]]:
    """Protocol label (facts.SUITE_COMMANDS) -> the OpenSSL names of the suites enumerated as accepted,
    for each version enumerated by offers (the side probes read what they need not ask again)."""
    return {SUITE_COMMANDS[command.value]: [a.cipher_suite.openssl_name for a in attempt.result.accepted_cipher_suites]
            for command, attempt in enumerated.items() if command.value in SUITE_COMMANDS}


def take_groups(request, connectivity_result, connections: int, pool: ThreadPoolExecutor) -> Future | None:
    """The groups, taken out of sslyze's request and enumerated on `pool` beside sslyze's other commands
    (their connections take the address's slots like sslyze's own): a future of the elliptic-curves result,
    by offers, or by sslyze's own one-group-per-connection jobs where the offers cannot be trusted. None:
    left to sslyze (no connectivity facts, or not asked for). Never raises, like enumerate_by_offers."""
    if connectivity_result is None or ScanCommand.ELLIPTIC_CURVES not in request.scan_commands:
        return None
    try:
        info = ServerConnectivityInfo(server_location=request.server_location,
                                      network_configuration=request.network_configuration,
                                      tls_probing_result=connectivity_result)
    except Exception:   # noqa: BLE001 — facts sslyze would not take: its own command runs as it would
        log.exception("groups left to sslyze")
        return None
    request.scan_commands.discard(ScanCommand.ELLIPTIC_CURVES)
    return pool.submit(groups_attempt, info, connections)


def groups_attempt(info: ServerConnectivityInfo, connections: int):
    try:
        found = sslyze_groups.enumerate_groups(info)
    except Exception:   # noqa: BLE001 — a bug of ours costs connections, never the result
        log.exception("group offers failed; sslyze's one-group test runs")
        found = None
    return found if found is not None else sslyze_command(info, ScanCommand.ELLIPTIC_CURVES, connections)


def sslyze_command(info: ServerConnectivityInfo, command: ScanCommand, connections: int):
    """One sslyze command run as its scanner runs it: its jobs at most `connections` at a time, their
    results handed to its implementation, errors classified in its words (sslyze.scanner._mass_scanner)."""
    implementation = ScanCommandsRepository.get_implementation_cls(command)
    attempt_cls = get_scan_command_attempt_cls(command)
    try:
        jobs = implementation.scan_jobs_for_scan_command(info, None)
        with ThreadPoolExecutor(max(1, connections), thread_name_prefix="sslyze-job") as pool:
            futures = [pool.submit(job.function_to_call, *job.function_arguments) for job in jobs]
            results = [ScanJobResult(_return_value=None if f.exception() else f.result(), _exception=f.exception())
                       for f in futures]
        return attempt_cls(status=ScanCommandAttemptStatusEnum.COMPLETED, error_reason=None, error_trace=None,
                           result=implementation.result_for_completed_scan_jobs(info, results))
    except ClientCertificateRequested as exc:
        reason = ScanCommandErrorReasonEnum.CLIENT_CERTIFICATE_NEEDED
        error = exc
    except (ConnectionToServerTimedOut, TlsHandshakeTimedOut, ServerRejectedTlsHandshake) as exc:
        reason = ScanCommandErrorReasonEnum.CONNECTIVITY_ISSUE
        error = exc
    except Exception as exc:   # noqa: BLE001 — sslyze files any other failure as its own bug
        reason = ScanCommandErrorReasonEnum.BUG_IN_SSLYZE
        error = exc
    return attempt_cls(status=ScanCommandAttemptStatusEnum.ERROR, error_reason=reason,
                       error_trace=TracebackException.from_exception(error), result=None)
