"""#28 item 2: signature algorithms offered as browsers and OpenSSL offer them. An Ed25519 server speaks
TLS 1.2 to `openssl s_client -tls1_2`; sslyze's per-suite test offers its TLS 1.2 ECDSA suites through
OpenSSL 1.0.2, which has no Ed25519 signature, so TLS 1.2 looked refused ("Only TLS 1.3 is supported")."""

import subprocess

import pki
import pytest

from workers.tls.engine import run_scan

ECDSA_GCM = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"


@pytest.fixture(scope="module")
def ed25519_files(test_pki, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ed25519")
    leaf = pki.issue_leaf(test_pki.intermediate, key="ed25519")
    return pki.write_pem(folder / "ed.pem", leaf), pki.write_key(folder / "ed.key", leaf)


def s_client_tls12(port: int) -> str:
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
                           "-tls1_2"], input="", capture_output=True, text=True, timeout=30)
    return next((line.split(":", 1)[1].strip() for line in done.stdout.splitlines()
                 if line.strip().startswith("Cipher    :")), "")


def test_an_ed25519_server_has_its_tls12_suites_found_as_openssl_negotiates_them(s_server, test_pki, ed25519_files):
    cert, key = ed25519_files
    port = s_server("-cipher", ECDSA_GCM, cert=cert, key=key)
    assert s_client_tls12(port) == "ECDHE-ECDSA-AES256-GCM-SHA384"
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    facts = outcome.facts
    assert facts.certificates[0].leaf.key_type == "Ed25519"
    assert facts.supports("TLSv1.2") and facts.supports("TLSv1.3")
    assert sorted(s.name for s in facts.suites_for("TLSv1.2")) == [
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]
    # The simulated clients offer what they offer: Chromium lists no Ed25519 signature and fails, as the
    # real Chromium does on an Ed25519-only server; curl and GnuTLS list it and get TLS 1.3.
    sims = {c.client: c for c in facts.client_simulation}
    assert sims["chromium"].protocol is None and sims["firefox"].protocol is None
    assert sims["curl"].protocol == "TLSv1.3" and sims["gnutls"].protocol == "TLSv1.3"
