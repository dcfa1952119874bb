"""Versions refused outright are not enumerated suite by suite (workers/tls/sslyze_versions.py, #16).

The rule to keep: the suites an audit reports are exactly those sslyze's own enumeration accepts. Each
case compares a full audit with raw sslyze (its Scanner, none of our hooks) over the six per-suite
commands, on every lab server and behind fronts built to fool an all-suites probe: one that refuses any
ClientHello offering more than 64 suites (a middlebox with a size limit), one that refuses any offering
a suite it chokes on. Both accept every single-suite ClientHello they like, as sslyze sends.
"""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from sslyze import Scanner, ServerNetworkConfiguration, ServerNetworkLocation, ServerScanRequest
from sslyze.plugins.scan_commands import ScanCommand
from sslyze.server_connectivity import ServerConnectivityInfo, TlsVersionEnum, check_connectivity_to_server

from tests import hostile
from workers.tls import sslyze_versions
from workers.tls.engine import run_scan
from workers.tls.facts import SUITE_COMMANDS

SUITE_SCANS = {ScanCommand(name) for name in SUITE_COMMANDS}
HANDSHAKE_FAILURE_ALERT = bytes([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x28])
RC4_MD5 = 0x0004    # offered by sslyze's TLS 1.0 list; nginx at SECLEVEL 0 does not serve it


def sslyze_accepts(port: int) -> dict[str, set[str]]:
    """Raw sslyze: protocol -> the suites its one-connection-per-suite test finds accepted."""
    request = ServerScanRequest(
        server_location=ServerNetworkLocation("localhost", port, ip_address="127.0.0.1"),
        network_configuration=ServerNetworkConfiguration(tls_server_name_indication="localhost", network_timeout=2),
        scan_commands=SUITE_SCANS)
    scanner = Scanner(per_server_concurrent_connections_limit=5)
    scanner.queue_scans([request])
    [result] = list(scanner.get_results())
    accepted = {}
    for command, protocol in SUITE_COMMANDS.items():
        attempt = getattr(result.scan_result, command)
        assert attempt.status.value == "COMPLETED", (command, attempt.error_trace)
        accepted[protocol] = {suite.cipher_suite.name for suite in attempt.result.accepted_cipher_suites}
    return accepted


def audit_accepts(port: int, ca_file) -> dict[str, set[str]]:
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2, ca_file=str(ca_file))
    assert outcome.error is None, outcome.error
    assert not any(name in outcome.facts.errors for name in SUITE_COMMANDS), outcome.facts.errors
    return {protocol: {s.name for s in outcome.facts.suites if s.protocol == protocol}
            for protocol in SUITE_COMMANDS.values()}


def offered_suites(hello: bytes) -> list[int]:
    """The cipher suites of a TLS ClientHello record (an SSL 2.0 hello: none, it passes)."""
    if hello[0] != 0x16:
        return []
    body = hello[5 + 4 + 2 + 32:]
    session_id = body[0]
    (length,) = struct.unpack("!H", body[1 + session_id:3 + session_id])
    suites = body[3 + session_id:3 + session_id + length]
    return [int.from_bytes(suites[i:i + 2], "big") for i in range(0, len(suites), 2)]


def read_record(conn: socket.socket) -> bytes:
    data = b""
    while len(data) < 5 or (data[0] == 0x16 and len(data) < 5 + struct.unpack("!H", data[3:5])[0]):
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    return data


def front(backend_port: int, refuses, counted: bool = False):
    """A TCP front for the lab server: a ClientHello `refuses(suites)` gets a handshake_failure alert,
    any other goes through to the backend, bytes spliced both ways. Yields the port, or with `counted`
    (port, listener): `listener.accepted` counts connections."""
    def handle(conn, state):
        hello = read_record(conn)
        if not hello:
            return
        if refuses(offered_suites(hello)):
            conn.sendall(HANDSHAKE_FAILURE_ALERT)
            return
        backend = state.keep(socket.create_connection(("127.0.0.1", backend_port)))
        backend.sendall(hello)
        threading.Thread(target=splice, args=(backend, conn), daemon=True).start()
        splice(conn, backend)

    return hostile.serve_listener(handle) if counted else hostile.serve(handle)


def splice(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    for sock in (sink, source):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def test_every_lab_server_reports_exactly_the_suites_sslyze_enumerates(tls_lab):
    for name in tls_lab.names():
        port = tls_lab.port(name)
        assert audit_accepts(port, tls_lab.ca_file) == sslyze_accepts(port), name


@pytest.mark.parametrize("refuses", [lambda suites: len(suites) > 64, lambda suites: RC4_MD5 in suites],
                         ids=["more_than_64_suites", "one_poison_suite"])
def test_a_front_that_refuses_some_big_offers_does_not_hide_a_version(tls_lab, refuses):
    with front(tls_lab.port("b_tls10_enabled"), refuses) as port:
        expected = sslyze_accepts(port)
        assert expected["TLSv1.0"] and expected["TLSv1.1"]   # the front lets single suites through
        assert audit_accepts(port, tls_lab.ca_file) == expected


def test_a_whole_audit_of_a_modern_server_opens_fewer_connections_than_sslyzes_suite_test_alone(tls_lab):
    """The point of it: TLS 1.0 and 1.1 (and SSL) refused, their 370 suite connections are not opened."""
    with front(tls_lab.port("a_tls12_13_no_hsts"), lambda suites: False, counted=True) as (port, listener):
        expected = sslyze_accepts(port)
        by_sslyze = listener.accepted
        assert audit_accepts(port, tls_lab.ca_file) == expected
        by_audit = listener.accepted - by_sslyze

    assert expected["TLSv1.0"] == expected["TLSv1.1"] == set() and expected["TLSv1.2"]
    assert by_audit < by_sslyze, f"whole audit {by_audit} connections, sslyze's suite test alone {by_sslyze}"


# --- what counts as a refusal -------------------------------------------------------------------------

def info_through(port: int, backend: ServerConnectivityInfo) -> ServerConnectivityInfo:
    """sslyze's connectivity facts of the backend, for connections made to `port` (a front before it)."""
    location = ServerNetworkLocation("localhost", port, ip_address="127.0.0.1")
    return ServerConnectivityInfo(server_location=location, network_configuration=backend.network_configuration,
                                  tls_probing_result=backend.tls_probing_result)


def backend_info(port: int) -> ServerConnectivityInfo:
    location = ServerNetworkLocation("localhost", port, ip_address="127.0.0.1")
    config = ServerNetworkConfiguration(tls_server_name_indication="localhost", network_timeout=2)
    probing = check_connectivity_to_server(server_location=location, network_configuration=config)
    return ServerConnectivityInfo(server_location=location, network_configuration=config, tls_probing_result=probing)


def resetting_front(backend_port: int, resets: int):
    """Resets the first `resets` connections (after reading their ClientHello), passes the rest through."""
    seen = []

    def handle(conn, state):
        hello = read_record(conn)
        seen.append(hello)
        if len(seen) <= resets:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return
        backend = state.keep(socket.create_connection(("127.0.0.1", backend_port)))
        backend.sendall(hello)
        threading.Thread(target=splice, args=(backend, conn), daemon=True).start()
        splice(conn, backend)

    return hostile.serve(handle), seen


def cut_after_server_hello(backend_port: int):
    """Passes the ClientHello and the server's first flight, then closes: the server chose a suite."""
    def handle(conn, state):
        backend = state.keep(socket.create_connection(("127.0.0.1", backend_port)))
        backend.sendall(read_record(conn))
        conn.sendall(backend.recv(65536))
        conn.close()

    return hostile.serve(handle)


def tls10_offer():
    """The TLS 1.0 offer that holds a suite b_tls10_enabled serves (ECDHE-RSA with CBC and SHA-1)."""
    return next(offer for offer in sslyze_versions.offers(TlsVersionEnum.TLS_1_0)
                if "ECDHE-RSA-AES128-SHA" in offer[1])


@pytest.mark.parametrize("resets, refusal", [(1, None), (2, "Server rejected the connection")],
                         ids=["dropped_once_is_asked_again", "dropped_twice_is_a_refusal"])
def test_a_dropped_connection_counts_as_a_refusal_only_when_it_happens_twice(tls_lab, resets, refusal):
    port = tls_lab.port("b_tls10_enabled")
    legacy, names = tls10_offer()
    served, seen = resetting_front(port, resets=resets)
    with served as front_port:
        answer = sslyze_versions.offer_refusal(info_through(front_port, backend_info(port)), TlsVersionEnum.TLS_1_0,
                                               names, legacy)
    assert answer == refusal and len(seen) == 2


def test_a_failure_after_the_server_chose_a_suite_is_not_a_refusal(tls_lab):
    port = tls_lab.port("b_tls10_enabled")
    legacy, names = tls10_offer()
    with cut_after_server_hello(port) as front_port:
        answer = sslyze_versions.one_offer(info_through(front_port, backend_info(port)), TlsVersionEnum.TLS_1_0,
                                           names, legacy)
    assert answer == (None, False)


def test_an_alert_before_any_suite_is_a_firm_refusal(tls_lab):
    port = tls_lab.port("a_tls12_13_no_hsts")      # TLS 1.0 turned off: nginx answers protocol_version
    legacy, names = tls10_offer()
    refusal, firm = sslyze_versions.one_offer(backend_info(port), TlsVersionEnum.TLS_1_0, names, legacy)
    assert firm and refusal in sslyze_versions.FIRM_REFUSALS


def test_the_probes_never_break_sslyzes_queue(tls_lab):
    """Called from sslyze's observer: whatever goes wrong, every version is left to sslyze, nothing raised."""
    info = backend_info(tls_lab.port("b_tls10_enabled"))
    request = ServerScanRequest(server_location=info.server_location, network_configuration=info.network_configuration,
                                scan_commands=set(SUITE_SCANS))

    assert sslyze_versions.skip_refused_versions(request, None, 5) == {}     # no connectivity facts at all
    assert request.scan_commands == SUITE_SCANS
