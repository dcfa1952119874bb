"""The 100-server nginx fleet of the throughput benchmark (bench/fleet.py)."""

import re
import socket
import ssl
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.x509.oid import AuthorityInformationAccessOID

from bench.fleet import MIX, allocate, fleet_servers, plan_fleet, start_fleet
from tests.support.tls_servers import FIXTURES, require_nginx


def test_with_100_servers_each_fixture_gets_its_weight_in_copies():
    assert sum(MIX.values()) == 100
    assert allocate(100) == MIX


def test_the_mix_covers_every_graded_configuration_and_every_grade():
    graded = {name for name, spec in FIXTURES.items() if spec.role == "grade"}
    assert set(MIX) == graded
    assert {FIXTURES[name].grade for name in MIX} >= {"A+", "A", "A-", "B", "C", "T", "M", "F"}


@pytest.mark.parametrize("count", [1, 7, 30, 99, 101, 250])
def test_any_fleet_size_gets_exactly_that_many_servers_in_proportion(count):
    copies = allocate(count)
    assert sum(copies.values()) == count
    for name, n in copies.items():
        assert abs(n - count * MIX[name] / 100) < 1, name


def test_allocation_is_deterministic():
    assert allocate(30) == allocate(30)
    assert plan_fleet(30) == plan_fleet(30)


def test_neighbours_in_the_plan_are_different_configurations():
    plan = plan_fleet(100)
    assert len({name for name, _ in plan}) == 100
    first_round = [fixture for _, fixture in plan[:len(MIX)]]
    assert sorted(first_round) == sorted(MIX)  # every fixture once before any repeats
    assert plan[0] == ("a_plus_rsa_hsts-001", "a_plus_rsa_hsts")


def test_a_fleet_needs_a_server_and_two_distinct_ports_per_server():
    with pytest.raises(ValueError, match="at least one server"):
        allocate(0)
    with pytest.raises(ValueError, match="need 4 distinct ports"):
        fleet_servers(plan_fleet(2), [1000, 1001, 1002])
    with pytest.raises(ValueError, match="need 4 distinct ports"):
        fleet_servers(plan_fleet(2), [1000, 1001, 1001, 1002])


@pytest.fixture(scope="module")
def fleet():
    require_nginx()
    with start_fleet(100) as running:
        yield running


def test_the_generated_nginx_conf_has_an_https_and_an_http_block_per_server(fleet):
    conf = (fleet.directory / "nginx.conf").read_text()
    https = re.findall(r"listen 127\.0\.0\.1:(\d+) ssl;", conf)
    http = re.findall(r"listen 127\.0\.0\.1:(\d+);", conf)
    assert len(https) == len(http) == 100
    assert len(set(https) | set(http)) == 200
    assert {int(p) for p in https} == {s.port for s in fleet.servers}
    assert conf.count("ssl_protocols TLSv1;") == allocate(100)["c_tls10_only"]


def test_every_server_of_the_fleet_accepts_connections(fleet):
    for server in fleet.servers:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            pass


def test_a_copy_serves_its_fixtures_certificate_and_page_trusted_by_the_fleet_ca(fleet):
    server = next(s for s in fleet.servers if s.name == "a_plus_rsa_hsts-002")
    context = ssl.create_default_context(cafile=str(fleet.ca_file))
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    assert b"Strict-Transport-Security: max-age=31536000" in answer
    assert b"<h1>a_plus_rsa_hsts-002</h1>" in answer


def test_the_incomplete_chain_copies_point_their_aia_at_a_port_that_serves_the_intermediate(fleet):
    copies = [s for s in fleet.servers if s.fixture == "b_incomplete_chain"]
    assert len(copies) == MIX["b_incomplete_chain"]
    for server in copies:
        leaf = peer_certificate(server.port)
        aia = leaf.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
        url = urlsplit(next(d.access_location.value for d in aia
                            if d.access_method == AuthorityInformationAccessOID.CA_ISSUERS))
        with socket.create_connection((url.hostname, url.port), timeout=5) as raw:
            raw.sendall(f"GET {url.path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
            answer = b""
            while chunk := raw.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert x509.load_der_x509_certificate(body).subject == leaf.issuer


def peer_certificate(port: int) -> x509.Certificate:
    """The leaf a server sends, without verifying it (the chain is incomplete on purpose)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
