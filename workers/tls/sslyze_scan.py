"""sslyze's part of an audit: 17 of its commands (16 off HTTP) against the pinned address; session resumption is ours.

Apart from workers/tls/engine.py so that the engine can be imported without sslyze (~0.45 s of
imports): a new process (`manage.py audit`) imports this module on a side thread
(engine.preload_sslyze) while it resolves the target and runs the pre-flight handshake; the raw
sslyze CLI opens no connection during its own import. `scan` below is the engine's bookkeeping
(engine._Scan: phases, marks, progress reports).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import sslyze.__version__ as sslyze_version
import sslyze.mozilla_tls_profile.tls_config_checker  # noqa: F401 — loaded here, on the preload thread, for mozilla.py
from sslyze import (
    CertificateInfoExtraArgument,
    ScanCommandsExtraArguments,
    Scanner,
    ServerNetworkConfiguration,
    ServerNetworkLocation,
    ServerScanRequest,
    ServerScanResultAsJson,
)
from sslyze.connection_helpers.opportunistic_tls_helpers import ProtocolWithOpportunisticTlsEnum
from sslyze.plugins.scan_commands import ScanCommand
from sslyze.scanner.scanner_observer import ScannerObserver

from tlsaudit.domain.services import Service
from workers.net.deadline import Deadline
from workers.net.target import ResolvedTarget
from workers.tls import facts as convert
from workers.tls import sslyze_early_data, sslyze_offers, sslyze_sockets
from workers.tls.progress import DONE, ERROR, SKIPPED, STARTED

SCANNER = f"sslyze {sslyze_version.__version__}"


def run_sslyze(target: ResolvedTarget, scan, service: Service, *, ca_file: str | None,
               network_timeout: float, max_retries: int, per_server_connections: int, deadline: Deadline,
               on_connected: Callable[[dict], None] | None = None, suite_offers: bool = True):
    """17 commands (16 off HTTP: no HTTP headers) against the pinned IP, every socket under
    `deadline` (past it, sslyze's remaining jobs fail at once and its threads end); returns
    (ServerScanResult, connectivity exception or None). `suite_offers`: the suites up to TLS 1.2 enumerated
    by offers (sslyze_suites); False leaves them to sslyze's one-connection-per-suite test."""
    extra = ScanCommandsExtraArguments(
        certificate_info=CertificateInfoExtraArgument(custom_ca_file=Path(ca_file)) if ca_file else None)
    request = ServerScanRequest(
        server_location=ServerNetworkLocation(hostname=target.host, port=target.port, ip_address=target.ip),
        network_configuration=network_configuration(target, service, network_timeout, max_retries),
        scan_commands=scan_commands(service),
        scan_commands_extra_arguments=extra,
    )
    # The groups' executor inside `bounded`: however sslyze ends, its thread is waited for while the
    # address's deadline and gate still hold its sockets.
    with scan.phase("sslyze"), sslyze_sockets.bounded(request.server_location, deadline), \
            sslyze_early_data.without_http(request.server_location, service.http), \
            ThreadPoolExecutor(1, thread_name_prefix="groups") as beside:
        observer = ProgressObserver(scan, on_connected, per_server_connections, suite_offers, beside)
        scanner = Scanner(per_server_concurrent_connections_limit=per_server_connections,
                          concurrent_server_scans_limit=1, observers=[observer])
        scan.report("connectivity", STARTED)
        scanner.queue_scans([request])
        results = list(scanner.get_results())   # always exhaust it: a half-read generator leaks threads
        if observer.groups is not None:
            observer.enumerated[ScanCommand.ELLIPTIC_CURVES] = observer.groups.result()
    result = sslyze_offers.with_enumerated(results[0], observer.enumerated)
    report_commands(scan, result)
    return result, observer.connectivity_error


def network_configuration(target: ResolvedTarget, service: Service, network_timeout: float,
                          max_retries: int) -> ServerNetworkConfiguration:
    """SNI = the host; on a STARTTLS service, sslyze's prelude for it (XMPP's stream is addressed to
    the host too: sslyze takes the SNI for `to` unless told otherwise)."""
    opportunistic = ProtocolWithOpportunisticTlsEnum[service.starttls] if service.starttls else None
    return ServerNetworkConfiguration(
        tls_server_name_indication=target.host, network_timeout=network_timeout, network_max_retries=max_retries,
        tls_opportunistic_encryption=opportunistic)


def scan_commands(service: Service) -> set[ScanCommand]:
    """Every command, but sslyze's HTTP headers only where HTTP is spoken (it refuses STARTTLS, and on
    SMTPS it would send an HTTP request to a mail server), and not its session resumption: ours resumes by
    session ID, TLS 1.2 ticket and TLS 1.3 ticket (workers/tls/resumption.py)."""
    commands = set(ScanCommand) - {ScanCommand.SESSION_RESUMPTION}
    if not service.http:
        commands.discard(ScanCommand.HTTP_HEADERS)
    return commands


class ProgressObserver(ScannerObserver):
    """sslyze only reports per server: connectivity ok/failed, then the whole scan done."""

    def __init__(self, scan, on_connected: Callable[[dict], None] | None = None, connections: int = 5,
                 suite_offers: bool = True, beside: ThreadPoolExecutor | None = None):
        self.scan = scan
        self.suite_offers = suite_offers
        self.beside = beside        # where the groups are enumerated, beside sslyze's jobs
        self.groups: Future | None = None
        self.connections = connections     # the per-server limit: the suite offers keep to it too
        self.on_connected = on_connected
        self.connectivity_error = None
        self.enumerated: dict = {}  # command -> its result, enumerated by offers (sslyze_offers)

    def server_connectivity_test_error(self, server_scan_request, connectivity_error) -> None:
        self.connectivity_error = connectivity_error
        self.scan.mark("connectivity")
        self.scan.report("connectivity", ERROR)

    def server_connectivity_test_completed(self, server_scan_request, connectivity_result) -> None:
        """sslyze queues its jobs once this returns: the offers go first (they decide which jobs there
        are), then our side probes start, told the suites the offers found, to share the slots with
        sslyze's jobs."""
        self.scan.mark("connectivity")
        self.scan.report("connectivity", DONE)
        with self.scan.phase("suite_offers", report=False):
            if self.suite_offers:
                self.enumerated = sslyze_offers.enumerate_by_offers(server_scan_request, connectivity_result,
                                                                    self.connections)
        if self.suite_offers and self.beside is not None:
            self.groups = sslyze_offers.take_groups(server_scan_request, connectivity_result, self.connections,
                                                    self.beside)
        if self.on_connected is not None:
            self.on_connected(sslyze_offers.accepted_suites(self.enumerated))

    def server_scan_completed(self, server_scan_result) -> None:
        pass

    def all_server_scans_completed(self) -> None:
        pass


def report_commands(scan, result) -> None:
    if result.scan_result is None:
        return
    for name in type(result.scan_result).__dataclass_fields__:
        attempt = getattr(result.scan_result, name)
        if attempt.status.value == "NOT_SCHEDULED":
            scan.report(name, SKIPPED)
            continue
        scan.report(name, DONE if convert.completed(attempt) else ERROR)


def sslyze_json(result) -> dict:
    return ServerScanResultAsJson.model_validate(result).model_dump(mode="json")
