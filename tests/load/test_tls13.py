"""workers.load.tls13: TLS 1.3 suites forced through ctypes (and the OPENSSL_CONF subprocess fallback),
verified by what nginx logged for the connection."""

from __future__ import annotations

import socket
import ssl

import pytest

from workers.load import tls13
from workers.load.handshake import run_handshakes, run_in_subprocess
from workers.load.spec import HandshakeSpec

SERVER = "load_no_resumption"


def new_rows(lab, name, before):
    return lab.read_access_log(name)[before:]


def test_it_finds_the_libssl_that_ssl_links_and_passes_its_self_check():
    assert tls13.ctypes_path_available(), tls13._load_error()
    assert tls13.tls13_forcing_works() is True


@pytest.mark.parametrize("suite", tls13.TLS13_SUITES)
def test_it_forces_each_tls13_suite_as_nginx_sees_it(tls_lab, suite):
    # given a client context restricted to one TLS 1.3 suite
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    tls13.set_tls13_suites(ctx, suite)
    before = len(tls_lab.read_access_log(SERVER))
    # when it connects and sends one request
    with socket.create_connection(("127.0.0.1", tls_lab.port(SERVER)), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        negotiated = tls.cipher()[0]
        tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        while tls.recv(65536):
            pass
    # then both ends agree on that suite
    assert negotiated == suite
    [row] = new_rows(tls_lab, SERVER, before)
    assert (row["ssl_protocol"], row["ssl_cipher"], row["status"]) == ("TLSv1.3", suite, "200")


def test_it_refuses_what_is_not_a_tls13_suite_list():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    with pytest.raises(ValueError, match="not a colon-separated list"):
        tls13.set_tls13_suites(ctx, "ECDHE-RSA-AES128-GCM-SHA256")
    with pytest.raises(ValueError, match="OpenSSL refused"):
        tls13.set_tls13_suites(ctx, "TLS_NOT_A_SUITE")
    with pytest.raises(TypeError):
        tls13.set_tls13_suites(object(), "TLS_AES_128_GCM_SHA256")


def test_it_leaves_the_context_options_as_they_were_after_the_layout_check():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.options |= ssl.OP_NO_TICKET
    options = ctx.options
    tls13.set_tls13_suites(ctx, "TLS_AES_256_GCM_SHA384")
    assert ctx.options == options


def test_the_openssl_conf_fallback_forces_the_suite_in_a_child_process(tls_lab):
    before = len(tls_lab.read_access_log(SERVER))
    spec = HandshakeSpec(host="localhost", port=tls_lab.port(SERVER), ip="127.0.0.1", version="1.3",
                         suite="TLS_CHACHA20_POLY1305_SHA256", agents=2, per_agent=2)
    result = run_in_subprocess(spec, http_probe=True)
    assert result["method"] == "openssl_conf"
    assert (result["count"], result["suite"], result["failures"], result["flagged"]) == (
        4, "TLS_CHACHA20_POLY1305_SHA256", {}, {})
    rows = new_rows(tls_lab, SERVER, before)
    assert [(r["ssl_protocol"], r["ssl_cipher"]) for r in rows] == [("TLSv1.3", "TLS_CHACHA20_POLY1305_SHA256")] * 4


def test_the_in_process_path_is_the_one_used_here(tls_lab):
    spec = HandshakeSpec(host="localhost", port=tls_lab.port(SERVER), ip="127.0.0.1", version="1.3",
                         suite="TLS_AES_128_GCM_SHA256", agents=1, per_agent=1)
    assert run_handshakes(spec)["method"] == "ctypes"
