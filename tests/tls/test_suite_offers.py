"""The suites of SSL 2.0 to TLS 1.2 and the groups, enumerated by offers (workers/tls/sslyze_offers.py, #27).

The rule to keep: an audit reports exactly what sslyze's one-connection-per-item enumeration finds. Each
lab server is audited twice in one test, by offers and by sslyze's own per-suite and per-group commands
(`run_scan(..., suite_offers=False)`): the accepted suites in order with their key exchanges, the groups,
the server's order, the grade and its caps must be equal, and the audit by offers must keep to its budget
of connections (<= 100 for a TLS 1.2/1.3 server, <= 150 for one with older versions), counted at a front.
Fronts built to fool the offers (a size limit, a poison suite, a poison group, a limit on groups) must
give the same answers as sslyze's per-item test, whatever that costs in connections.
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
from tlsaudit.domain.grading import grade
from workers.tls import hello as wire
from workers.tls import sslyze_offers, sslyze_suites
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


def offered(hello: bytes) -> dict:
    """The suites, groups and versions of a TLS ClientHello record, and its size in bytes (an SSL 2.0
    hello: none, it passes)."""
    if hello[0] != 0x16:
        return {"suites": [], "groups": [], "versions": [], "size": len(hello)}
    return {**wire.parse_client_hello(hello), "size": len(hello)}


def read_record(conn: socket.socket) -> bytes:
    data = b""
    while len(data) < 5 or (data[0] == 0x16 and len(data) < 5 + struct.unpack("!H", data[3:5])[0]):
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    return data


def front(backend_port: int, refuses, counted: bool = False):
    """A TCP front for the lab server: a ClientHello `refuses(offered(hello))` gets a handshake_failure alert,
    any other goes through to the backend, bytes spliced both ways. Yields the port, or with `counted`
    (port, listener): `listener.accepted` counts connections."""
    def handle(conn, state):
        hello = read_record(conn)
        if not hello:
            return
        if refuses(offered(hello)):
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


def findings(outcome) -> dict:
    """What the enumeration decides, as the audit reports it."""
    assert outcome.error is None, outcome.error
    facts = outcome.facts
    graded = grade(facts)
    return {"suites": [(s.protocol, s.name, s.kx_type, s.kx_bits, s.kx_curve) for s in facts.suites],
            "groups": facts.curves, "order": {k: (v.enforced, v.order) for k, v in facts.preferences.items()},
            "grade": graded.grade, "caps": [cap.rule_id for cap in graded.caps],
            "errors": {name: why for name, why in facts.errors.items() if name in SUITE_COMMANDS}}


def audited(port: int, ca_file, offers: bool) -> tuple[dict, int]:
    """(findings, connections the audit opened) through a counting front."""
    with front(port, lambda hello: False, counted=True) as (front_port, listener):
        outcome = run_scan("localhost", front_port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                           ca_file=str(ca_file), suite_offers=offers)
        return findings(outcome), listener.accepted


def budget(spec) -> int:
    return 100 if set(spec.protocols) <= {"TLSv1.2", "TLSv1.3"} else 150


def test_every_lab_server_gets_by_offers_what_sslyze_enumerates_one_by_one_within_the_budget(tls_lab):
    compared = []
    for name in tls_lab.names():
        by_offers, connections = audited(tls_lab.port(name), tls_lab.ca_file, offers=True)
        one_by_one, theirs = audited(tls_lab.port(name), tls_lab.ca_file, offers=False)
        assert by_offers == one_by_one, name
        assert connections <= budget(tls_lab.spec(name)), (name, connections)
        assert theirs > 4 * connections, (name, connections, theirs)   # sslyze's own enumeration did run
        compared.append(name)
    assert len(compared) == len(tls_lab.names()) >= 20


def test_the_audit_reports_exactly_the_suites_raw_sslyze_accepts(tls_lab):
    """Against sslyze with none of our hooks, on a modern and on a legacy server."""
    for name in ("a_tls12_13_no_hsts", "b_tls10_enabled"):
        port = tls_lab.port(name)
        assert audit_accepts(port, tls_lab.ca_file) == sslyze_accepts(port), name


SECP256K1 = 0x0016     # offered by sslyze's client, in no default ClientHello, not served by the lab


@pytest.mark.parametrize("refuses", [lambda hello: hello["size"] >= 256 and max(hello["versions"], default=0) <= 0x0302,
                                     lambda hello: RC4_MD5 in hello["suites"]],
                         ids=["tls10_hellos_of_256_bytes_or_more", "one_poison_suite"])
def test_a_front_that_refuses_some_big_offers_does_not_hide_a_suite(tls_lab, refuses):
    """The F5 range: a middlebox that refuses ClientHellos of 256-511 bytes (here at TLS 1.0 and 1.1, where the
    lab server still answers sslyze's connectivity test); our offers stay under it. A poison suite: the
    re-offer of a refused rest with a suite the server takes finds it out, and sslyze enumerates."""
    with front(tls_lab.port("b_tls10_enabled"), refuses) as port:
        expected = sslyze_accepts(port)
        assert expected["TLSv1.0"] and expected["TLSv1.1"]   # the front lets single suites through
        assert audit_accepts(port, tls_lab.ca_file) == expected


@pytest.mark.parametrize("refuses", [lambda hello: SECP256K1 in hello["groups"],
                                     lambda hello: len(hello["groups"]) > 8],
                         ids=["one_poison_group", "more_than_8_groups"])
def test_a_front_that_refuses_some_group_offers_does_not_hide_a_group(tls_lab, refuses):
    """sslyze offers one group per ClientHello: these fronts let each the server serves through, and refuse
    every offer of all of them. The server did complete an ECDHE handshake, so groups are left to sslyze."""
    with front(tls_lab.port("a_tls12_13_no_hsts"), refuses) as port:
        by_offers = findings(run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                                      ca_file=str(tls_lab.ca_file)))
        one_by_one = findings(run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                                       ca_file=str(tls_lab.ca_file), suite_offers=False))
    assert len(one_by_one["groups"]) >= 3
    assert by_offers["groups"] == one_by_one["groups"]


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
    return next(offer for offer in sslyze_suites.offers(TlsVersionEnum.TLS_1_0)
                if "ECDHE-RSA-AES128-SHA" in offer[1])


@pytest.mark.parametrize("resets, refusal", [(1, None), (2, "Server rejected the connection")],
                         ids=["dropped_once_is_asked_again", "dropped_twice_is_a_refusal"])
def test_a_dropped_connection_counts_as_a_refusal_only_when_it_happens_twice(tls_lab, resets, refusal):
    port = tls_lab.port("b_tls10_enabled")
    legacy, names = tls10_offer()
    served, seen = resetting_front(port, resets=resets)
    with served as front_port:
        answer = sslyze_suites.settled_answer(info_through(front_port, backend_info(port)), TlsVersionEnum.TLS_1_0,
                                              names, legacy)
    assert answer.refusal == refusal and len(seen) == 2
    assert (answer.chosen is not None) == (refusal is None)    # asked again, the server chose a suite


def test_a_failure_after_the_server_chose_a_suite_leaves_the_version_to_sslyze(tls_lab):
    port = tls_lab.port("b_tls10_enabled")
    legacy, names = tls10_offer()
    with cut_after_server_hello(port) as front_port:
        with pytest.raises(sslyze_suites.Unclear, match="chose a suite, then"):
            sslyze_suites.one_offer(info_through(front_port, backend_info(port)), TlsVersionEnum.TLS_1_0, names, legacy)


def test_an_alert_before_any_suite_is_a_firm_refusal_of_the_version(tls_lab):
    port = tls_lab.port("a_tls12_13_no_hsts")      # TLS 1.0 turned off: nginx answers protocol_version
    legacy, names = tls10_offer()
    answer, firm = sslyze_suites.one_offer(backend_info(port), TlsVersionEnum.TLS_1_0, names, legacy)
    assert firm and answer.refusal in sslyze_suites.VERSION_REFUSALS and answer.chosen is None


def test_a_slice_is_offered_until_the_server_refuses_what_is_left(tls_lab):
    port = tls_lab.port("b_tls10_enabled")
    legacy, names = tls10_offer()
    found = sslyze_suites.enumerate_slice(backend_info(port), TlsVersionEnum.TLS_1_0, legacy, names)
    served = set(tls_lab.spec("b_tls10_enabled").ciphers)
    assert set(found.accepted) == served & set(names) and found.accepted
    assert set(found.rest) == set(names) - served and found.refusal in sslyze_suites.FIRM_REFUSALS


def test_the_offers_never_break_sslyzes_queue(tls_lab):
    """Called from sslyze's observer: whatever goes wrong, everything is left to sslyze, nothing raised."""
    info = backend_info(tls_lab.port("b_tls10_enabled"))
    request = ServerScanRequest(server_location=info.server_location, network_configuration=info.network_configuration,
                                scan_commands=set(SUITE_SCANS))

    assert sslyze_offers.enumerate_by_offers(request, None, 5) == {}     # no connectivity facts at all
    assert sslyze_offers.enumerate_by_offers(request, "not connectivity facts", 5) == {}
    assert request.scan_commands == SUITE_SCANS
