"""What sslyze would test one connection at a time, enumerated by offers instead (issue #27).

Between sslyze's connectivity test and its job queue (its observer callback), the suites of each version
up to TLS 1.2 (sslyze_suites) and the groups (sslyze_groups) are enumerated by offering many and removing
the one the server chose, through sslyze's own client and connection. What was enumerated is taken out of
sslyze's request and written into its result afterwards as its own commands would have written it; what
could not be (an unclear answer, a contradiction) is left to sslyze's one-connection-per-item test.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from sslyze.plugins.scan_commands import ScanCommand
from sslyze.server_connectivity import ServerConnectivityInfo

from workers.tls import sslyze_groups, sslyze_suites
from workers.tls.facts import SUITE_COMMANDS

log = logging.getLogger(__name__)


def enumerate_by_offers(request, connectivity_result, connections: int) -> dict[ScanCommand, object]:
    """Enumerate what `request` would test one connection at a time (the suites of each version up to TLS
    1.2, the groups), at most `connections` connections at a time, and take from it what was enumerated;
    returns command -> its result. Called on the thread that feeds sslyze's queue: it never raises (a bug
    leaves everything to sslyze), or sslyze's threads would wait for a queue entry forever."""
    try:
        if connectivity_result is None:
            return {}
        info = ServerConnectivityInfo(server_location=request.server_location,
                                      network_configuration=request.network_configuration,
                                      tls_probing_result=connectivity_result)
        with ThreadPoolExecutor(max(1, connections), thread_name_prefix="offers") as pool:
            groups = (pool.submit(sslyze_groups.enumerate_groups, info)
                      if ScanCommand.ELLIPTIC_CURVES in request.scan_commands else None)
            versions = [command for command in sslyze_suites.PROBED if command in request.scan_commands]
            enumerated = sslyze_suites.enumerate_versions(pool, info, versions)
            if groups is not None and (found := groups.result()) is not None:
                enumerated[ScanCommand.ELLIPTIC_CURVES] = found
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
