"""sslyze connectivity failures -> codes and words a site owner understands."""

import pytest

from workers.net.errors import TargetError
from workers.net.reach_errors import classify_connectivity_error
from workers.tls.probes import classify_first_bytes

NOT_SUPPORTED = "TLS probing failed: could not find a TLS version and cipher suite supported by the server"


@pytest.mark.parametrize("exc_type,message,wire,code,words", [
    ("ServerRejectedConnection", "Server rejected the connection", None, "refused",
     "Port 443 on 1.2.3.4 refused the connection: nothing is listening there."),
    ("ConnectionToServerTimedOut", "Connection to the server timed out", None, "timeout",
     "No answer from 1.2.3.4:443 within 5 s: the port is filtered or the server is down."),
    ("ServerTlsConfigurationNotSupported", NOT_SUPPORTED, "silent", "timeout",
     "No answer from 1.2.3.4:443 within 5 s: the port accepts connections but never answers the TLS handshake"),
    ("ServerTlsConfigurationNotSupported", NOT_SUPPORTED, "http", "no_tls",
     "The server on port 443 does not speak TLS (is it plain HTTP?)."),
    ("ServerTlsConfigurationNotSupported", NOT_SUPPORTED, "other", "no_tls", "another protocol"),
    ("ServerTlsConfigurationNotSupported", NOT_SUPPORTED, "tls", "tls_handshake_failed", "no TLS handshake"),
    ("ServerTlsConfigurationNotSupported", NOT_SUPPORTED, "closed", "tls_handshake_failed", "no TLS handshake"),
    ("ServerTlsConfigurationNotSupported", "WARNING: Server only supports SSL 2.0 and is ...", None, "sslv2_only",
     "SSL 2.0"),
    ("ServerRejectedOpportunisticTlsNegotiation", "SMTP STARTTLS rejected", None, "starttls_rejected", "STARTTLS"),
    ("ConnectionToServerFailed", "Connection to the server failed", None, "connection_failed", "failed"),
])
def test_it_names_the_failure(exc_type, message, wire, code, words):
    error = classify_connectivity_error(exc_type, message, ip="1.2.3.4", port=443, timeout=5.0, wire=wire)
    assert isinstance(error, TargetError)
    assert error.code == code
    assert words in error.message
    assert exc_type in error.detail


def test_ipv6_addresses_are_bracketed_in_messages():
    error = classify_connectivity_error("ConnectionToServerTimedOut", "", ip="2001:db8::1", port=8443, timeout=2)
    assert "[2001:db8::1]:8443 within 2 s" in error.message


def test_transient_errors_are_marked_for_retry():
    timeout = classify_connectivity_error("ConnectionToServerTimedOut", "", ip="1.2.3.4", port=443, timeout=5)
    refused = classify_connectivity_error("ServerRejectedConnection", "", ip="1.2.3.4", port=443, timeout=5)
    assert timeout.transient and not refused.transient
    assert refused.to_dict()["code"] == "refused"


@pytest.mark.parametrize("first,wire", [(b"HTTP/1.0 400 Bad", "http"), (b"\x15\x03\x03\x00\x02\x02\x46", "tls"),
                                        (b"\x16\x03\x01", "tls"), (b"SSH-2.0-OpenSSH", "other"), (b"", "closed")])
def test_first_bytes_tell_what_a_port_speaks(first, wire):
    assert classify_first_bytes(first) == wire
