"""TLS 1.3 early data on services that are not HTTP (workers/tls/sslyze_early_data.py).

sslyze's own test writes an HTTP GET to get its session; LDAP and PostgreSQL close on it and the check
ended as a "BUG_IN_SSLYZE" error (tests/starttls checks those daemons now end tested). Here the
replacement is driven through sslyze's own job, against `openssl s_server` speaking no HTTP, with and
without 0-RTT, and against one that sends no ticket at all.
"""

from __future__ import annotations

import time

import pytest
from nassl.ssl_client import ClientCertificateRequested
from sslyze import ServerNetworkConfiguration, ServerNetworkLocation
from sslyze.plugins.early_data_plugin import EarlyDataImplementation
from sslyze.server_connectivity import ServerConnectivityInfo, check_connectivity_to_server

from workers.net.deadline import Deadline
from workers.tls import sslyze_early_data, sslyze_sockets

NETWORK_TIMEOUT_S = 5


def connectivity(port: int, network_timeout: float = NETWORK_TIMEOUT_S) -> ServerConnectivityInfo:
    location = ServerNetworkLocation("localhost", port, ip_address="127.0.0.1")
    config = ServerNetworkConfiguration(tls_server_name_indication="localhost", network_timeout=network_timeout)
    probing = check_connectivity_to_server(server_location=location, network_configuration=config)
    return ServerConnectivityInfo(server_location=location, network_configuration=config, tls_probing_result=probing)


def early_data_job(info: ServerConnectivityInfo, *, http: bool) -> bool:
    """What sslyze's scheduler would run for its early-data command, with the location registered."""
    with sslyze_early_data.without_http(info.server_location, http):
        [job] = EarlyDataImplementation.scan_jobs_for_scan_command(info)
        return job.function_to_call(*job.function_arguments)


def test_a_server_that_accepts_early_data_is_found_without_any_request(s_server):
    info = connectivity(s_server("-early_data", www=False))

    assert early_data_job(info, http=False) is True


def test_a_server_without_early_data_is_read_from_its_ticket(s_server):
    info = connectivity(s_server(www=False))

    assert early_data_job(info, http=False) is False


def test_a_server_that_sends_no_ticket_costs_only_the_read_window(s_server):
    info = connectivity(s_server("-early_data", "-num_tickets", "0", www=False))

    started = time.monotonic()
    assert early_data_job(info, http=False) is False
    assert time.monotonic() - started < NETWORK_TIMEOUT_S / 2   # the window, not the network timeout


def test_only_a_registered_location_skips_the_http_request(s_server):
    """An HTTP location keeps sslyze's own test: its GET goes unanswered by this server, sslyze's read times
    out and it says no, which is why a service that speaks no HTTP must be registered."""
    info = connectivity(s_server("-early_data", www=False), network_timeout=1)

    assert early_data_job(info, http=False) is True
    assert early_data_job(info, http=True) is False
    sslyze_early_data.install()
    assert sslyze_early_data._test_early_data(info) is False    # not registered at all: sslyze's path too


@pytest.mark.parametrize("server_args", [("-Verify", "1"), ("-early_data",), ()],
                         ids=["client_certificate_required", "early_data", "no_early_data"])
def test_every_connection_it_opens_is_closed_when_it_returns(s_server, server_args):
    """Each socket holds one of the address's connection slots (deadline.py): a connection left open on an
    error path would hold a slot until the scan ends. A server that demands a client certificate makes
    the handshake or the read fail; sslyze reports that as the check's error."""
    info = connectivity(s_server(*server_args, www=False))
    deadline = Deadline(20)
    with sslyze_sockets.bounded(info.server_location, deadline):
        try:
            early_data_job(info, http=False)
        except ClientCertificateRequested:
            pass
        assert deadline.close_sockets() == 0
