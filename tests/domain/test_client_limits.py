"""#28 item 4: a simulated client ends the handshake as its real client would, with its own minimum
signature and key sizes (measured from curl and Python here: tlsaudit/domain/data/client_profiles.json)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.domain.factories import ca_cert, deployment, ec_cert, rsa_cert
from tlsaudit.domain.client_limits import ClientLimits, enforce_limits
from tlsaudit.domain.scanfacts import ClientHandshake

PROFILES = json.loads((Path(__file__).resolve().parents[2] / "tlsaudit" / "domain" / "data" /
                       "client_profiles.json").read_text())
OPENSSL_L2 = ClientLimits.from_profile(PROFILES["curl"])
SIGALGS = PROFILES["curl"]["signature_algorithms"]


def row(protocol="TLSv1.2", suite="TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", dh_bits=None) -> ClientHandshake:
    return ClientHandshake("curl", "curl 7.88 / OpenSSL 3.0", protocol=protocol, suite=suite, dh_bits=dh_bits)


def ended(r: ClientHandshake, deps=None, limits=OPENSSL_L2) -> ClientHandshake:
    return enforce_limits(r, limits, deps if deps is not None else [deployment()], SIGALGS)


def test_curl_and_python_carry_openssl_level_2_limits_and_the_browsers_none_measured_yet():
    assert OPENSSL_L2 == ClientLimits(True, 2048, 2048, "OpenSSL 3.0 at Debian's security level 2")
    assert ClientLimits.from_profile(PROFILES["python"]) == OPENSSL_L2
    assert ClientLimits.from_profile(PROFILES["gnutls"]) == ClientLimits()


def test_a_signed_tls10_or_11_key_exchange_is_refused_and_rsa_key_exchange_is_not():
    for protocol in ("TLSv1.0", "TLSv1.1"):
        refused = ended(row(protocol, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"))
        assert refused.protocol is None and refused.suite is None
        assert refused.error == (f"refuses the SHA-1/MD5 signature TLS {protocol[-3:]} puts on the server's key "
                                 "exchange (legacy sigalg disallowed) (OpenSSL 3.0 at Debian's security level 2)")
        assert ended(row(protocol, "TLS_DHE_RSA_WITH_AES_128_CBC_SHA")).protocol is None
        kept = row(protocol, "TLS_RSA_WITH_AES_128_CBC_SHA")
        assert ended(kept) == kept
    assert ended(row("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")).protocol == "TLSv1.2"


def test_a_dh_group_under_the_minimum_is_refused():
    assert "1024-bit DH group, under its minimum of 2048 bits" in ended(
        row(suite="TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", dh_bits=1024)).error
    assert ended(row(suite="TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", dh_bits=2048)).protocol == "TLSv1.2"


def test_a_short_rsa_key_anywhere_in_the_sent_chain_is_refused_roots_aside():
    leaf_1024 = deployment(rsa_cert(bits=1024))
    assert "refuses the certificate CN=localhost: its RSA key has 1024 bits" in ended(row(), [leaf_1024]).error
    weak_intermediate = deployment(chain=(rsa_cert(), ca_cert(bits=1024)))
    error = ended(row(), [weak_intermediate]).error
    assert error.startswith("refuses the intermediate CN=Test Intermediate CA") and "1024 bits" in error
    weak_root_sent = deployment(chain=(rsa_cert(), ca_cert(), rsa_cert(bits=1024, self_signed=True)))
    assert ended(row(), [weak_root_sent]).protocol == "TLSv1.2"


def test_the_certificate_judged_is_the_one_the_suite_or_the_clients_first_sigalg_gets():
    dual = [deployment(rsa_cert(bits=1024)), deployment(ec_cert())]
    assert ended(row(suite="TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), dual).protocol == "TLSv1.2"
    assert ended(row(), dual).protocol is None                     # an RSA suite gets the RSA-1024 leaf
    assert ended(row("TLSv1.3", "TLS_AES_128_GCM_SHA256"), dual).protocol == "TLSv1.3"   # curl lists ECDSA first


def test_a_failed_row_or_a_client_without_limits_is_left_as_it_was():
    failed = ClientHandshake("curl", "curl", error="no protocol version in common")
    assert ended(failed) == failed
    legacy = row("TLSv1.0", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")
    assert ended(legacy, limits=ClientLimits()) == legacy


def test_a_weak_certificate_off_the_leafs_path_is_not_judged():
    """OpenSSL checks the chain it builds: a leftover 1024-bit certificate that rides along (chain_extra)
    does not make curl refuse."""
    from dataclasses import replace

    stray = ca_cert("CN=Stray CA", bits=1024)
    with_stray = replace(deployment(chain=(rsa_cert(), ca_cert(), stray)), chain_extra=("CN=Stray CA",))
    assert ended(row(), [with_stray]).protocol == "TLSv1.2"
