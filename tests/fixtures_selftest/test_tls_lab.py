"""The TLS lab serves what its catalogue claims: checked from the client side, fixture by fixture.

No sslyze and no grading here (the grade matrix lives with the scanner); only facts a TLS client
can observe: protocols, suites, keys, chains, HSTS, resumption.
"""

import datetime
import http.client
import signal
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_parameters
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.support import pki as pki_module
from tests.support import probe
from tests.support.tls_servers import FIXTURES, HOSTNAME, ServerSpec, lab_death, require_nginx, start_lab

ALL_NAMES = list(FIXTURES)
TRUSTED = [n for n, s in FIXTURES.items() if s.trusted]
TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
PROTOCOL_RANK = {"SSLv3": 0, "TLSv1.0": 1, "TLSv1": 1, "TLSv1.1": 2, "TLSv1.2": 3, "TLSv1.3": 4}
# Python's ssl verify codes (OpenSSL X509_V_ERR_*).
CERT_HAS_EXPIRED, SELF_SIGNED_LEAF, NO_LOCAL_ISSUER, HOSTNAME_MISMATCH = 10, 18, 20, 62


def suites_usable_at(spec: ServerSpec, version: str) -> set[str]:
    """The spec's suites a client can negotiate at `version` (SHA-256/GCM suites need TLS 1.2)."""
    minimum = {c["name"]: c["protocol"] for c in probe.permissive_context(None, probe.EVERY_SUITE).get_ciphers()}
    return {c for c in spec.ciphers if PROTOCOL_RANK[minimum[c]] <= PROTOCOL_RANK[version]}


def leaf_of(tls_lab, name: str) -> x509.Certificate:
    return x509.load_der_x509_certificate(probe.handshake(tls_lab.port(name), probe.permissive_context()).leaf_der)


def san_of(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return san.get_values_for_type(x509.DNSName), [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]


# --- the catalogue itself -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NAMES)
def test_catalogue_totals_follow_the_weighting_of_section_2_4(name):
    protocol, key_exchange, cipher, total = FIXTURES[name].score
    weighted = protocol * 30 // 100 + key_exchange * 30 // 100 + cipher * 40 // 100
    assert total == (0 if 0 in (protocol, key_exchange, cipher) else weighted)


def test_catalogue_covers_every_required_grade():
    grades = {s.grade for s in FIXTURES.values()}
    assert {"A+", "A", "A-", "B", "C", "F", "T", "M"} <= grades
    assert len([s for s in FIXTURES.values() if s.role == "grade"]) >= 12


@pytest.mark.parametrize("name", ALL_NAMES)
def test_only_trust_fixtures_differ_from_their_grade_ignoring_trust(name):
    spec = FIXTURES[name]
    if spec.leaf == "good":
        assert spec.grade == spec.grade_ignoring_trust
    else:
        assert spec.grade in {"T", "M"} and spec.trust


# --- what each server offers ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NAMES)
def test_it_offers_exactly_the_spec_protocols(tls_lab, name):
    assert probe.accepted_versions(tls_lab.port(name)) == FIXTURES[name].protocols


@pytest.mark.parametrize("name", ALL_NAMES)
def test_it_offers_exactly_the_spec_suites(tls_lab, name):
    spec = FIXTURES[name]
    for version in spec.protocols:
        if version == "TLSv1.3":
            chosen = probe.handshake(tls_lab.port(name), probe.permissive_context(version))
            assert chosen.cipher in TLS13_SUITES
        else:
            assert probe.accepted_suites(tls_lab.port(name), version) == suites_usable_at(spec, version), version


@pytest.mark.parametrize("name", ALL_NAMES)
def test_it_serves_the_spec_key(tls_lab, name):
    spec = FIXTURES[name]
    public_key = leaf_of(tls_lab, name).public_key()
    expected_class = ec.EllipticCurvePublicKey if spec.key_type == "EC" else rsa.RSAPublicKey
    assert isinstance(public_key, expected_class)
    assert public_key.key_size == spec.key_bits


@pytest.mark.parametrize("name", ALL_NAMES)
def test_it_serves_a_page_with_the_spec_hsts_header(tls_lab, name):
    status, headers, body = probe.get_page(tls_lab.port(name), probe.permissive_context())
    assert status == 200
    assert name.encode() in body and body.startswith(b"<!doctype html>")
    assert headers.get("Strict-Transport-Security") == FIXTURES[name].hsts


@pytest.mark.parametrize(
    "name, version, cipher, temp_key",
    [
        ("b_dh1024", "TLSv1.2", "DHE-RSA-AES128-GCM-SHA256", "DH, 1024 bits"),
        ("a_plus_rsa_dhe2048_hsts", "TLSv1.2", "DHE-RSA-AES128-GCM-SHA256", "DH, 2048 bits"),
        ("a_plus_ecdsa_p384_only", "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDH, secp384r1, 384 bits"),
        ("a_plus_ecdsa_p384_only", "TLSv1.3", "DEFAULT", "ECDH, secp384r1, 384 bits"),
        ("c_tls10_only", "TLSv1", "ECDHE-RSA-AES128-SHA", "X25519, 253 bits"),
    ],
)
def test_it_uses_the_spec_ephemeral_key(tls_lab, name, version, cipher, temp_key):
    assert probe.server_temp_key(tls_lab.port(name), version, cipher) == temp_key


@pytest.mark.parametrize("name", ["b_dh1024", "a_plus_rsa_dhe2048_hsts"])
def test_it_prefers_ecdhe_over_its_dhe_suite(tls_lab, name):
    chosen = probe.handshake(tls_lab.port(name), probe.permissive_context("TLSv1.2"))
    assert chosen.cipher.startswith("ECDHE-")


# --- certificates and chains ----------------------------------------------------------------------


@pytest.mark.parametrize("name", TRUSTED)
def test_good_chains_validate_against_the_ca_file(tls_lab, name):
    chain = probe.sent_chain(tls_lab.port(name))
    assert len(chain) == 2  # leaf + intermediate; the root stays in ca_file
    assert probe.verify_error(tls_lab.port(name), str(tls_lab.ca_file)) is None
    assert probe.verify_like_sslyze(chain, str(tls_lab.ca_file)) is None


@pytest.mark.parametrize("name", [n for n, s in FIXTURES.items() if s.leaf != "wrong_name"])
def test_leaves_name_localhost_and_127_0_0_1(tls_lab, name):
    assert san_of(leaf_of(tls_lab, name)) == (["localhost"], ["127.0.0.1"])


def test_expired_leaf_expired_in_2021(tls_lab):
    leaf = leaf_of(tls_lab, "t_expired")
    assert leaf.not_valid_before_utc.year == 2020 and leaf.not_valid_after_utc.year == 2021
    assert probe.verify_error(tls_lab.port("t_expired"), str(tls_lab.ca_file))[0] == CERT_HAS_EXPIRED
    chain = probe.sent_chain(tls_lab.port("t_expired"))
    assert "not valid at validation time" in probe.verify_like_sslyze(chain, str(tls_lab.ca_file))


def test_self_signed_leaf_is_self_issued_and_not_a_ca(tls_lab):
    chain = probe.sent_chain(tls_lab.port("t_self_signed"))
    leaf = chain[0]
    assert len(chain) == 1 and leaf.issuer == leaf.subject
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    leaf.verify_directly_issued_by(leaf)  # raises unless it signed itself
    assert probe.verify_error(tls_lab.port("t_self_signed"), str(tls_lab.ca_file))[0] == SELF_SIGNED_LEAF
    assert probe.verify_like_sslyze(chain, str(tls_lab.ca_file)) is not None


def test_wrong_name_leaf_is_trusted_but_names_only_www_example_org(tls_lab):
    chain = probe.sent_chain(tls_lab.port("m_wrong_name"))
    assert san_of(chain[0]) == (["www.example.org"], [])
    assert probe.verify_error(tls_lab.port("m_wrong_name"), str(tls_lab.ca_file))[0] == HOSTNAME_MISMATCH
    assert "no matching subjectAltName" in probe.verify_like_sslyze(chain, str(tls_lab.ca_file))
    assert probe.verify_like_sslyze(chain, str(tls_lab.ca_file), hostname="www.example.org") is None


def test_incomplete_chain_sends_the_leaf_alone_and_its_aia_url_completes_it(tls_lab):
    # Given a server that omits its intermediate
    chain = probe.sent_chain(tls_lab.port("b_incomplete_chain"))
    assert len(chain) == 1 and chain[0].issuer != chain[0].subject
    assert probe.verify_error(tls_lab.port("b_incomplete_chain"), str(tls_lab.ca_file))[0] == NO_LOCAL_ISSUER
    # When a client fetches the caIssuers URL from the leaf's AIA extension
    aia = chain[0].extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    (url,) = [d.access_location.value for d in aia if d.access_method == x509.AuthorityInformationAccessOID.CA_ISSUERS]
    assert url == f"http://127.0.0.1:{tls_lab.http_port('b_incomplete_chain')}/ca/intermediate.der"
    with urllib.request.urlopen(url, timeout=5) as response:
        intermediate = x509.load_der_x509_certificate(response.read())
    # Then the completed chain validates
    assert probe.verify_like_sslyze(chain + [intermediate], str(tls_lab.ca_file)) is None


def test_ca_file_is_the_self_signed_root_with_the_profile_sslyze_needs(tls_lab):
    (root,) = x509.load_pem_x509_certificates(Path(tls_lab.ca_file).read_bytes())
    constraints = root.extensions.get_extension_for_class(x509.BasicConstraints)
    usage = root.extensions.get_extension_for_class(x509.KeyUsage)
    assert root.issuer == root.subject and constraints.critical and constraints.value.ca
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign
    root.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)


@pytest.mark.parametrize("name", ["a_plus_rsa_hsts", "a_plus_ecdsa_tls13_hsts"])
def test_leaf_profile_is_a_server_end_entity(tls_lab, name):
    leaf = leaf_of(tls_lab, name)
    extensions = leaf.extensions
    assert extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert ExtendedKeyUsageOID.SERVER_AUTH in extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    usage = extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and usage.key_encipherment == (FIXTURES[name].key_type == "RSA")
    assert leaf.signature_hash_algorithm.name == "sha256"
    extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
    extensions.get_extension_for_class(x509.SubjectKeyIdentifier)


# --- plain HTTP and the load-test pair ------------------------------------------------------------


def test_plain_http_port_redirects_to_https_and_has_a_health_page(tls_lab):
    connection = http.client.HTTPConnection("127.0.0.1", tls_lab.http_port("a_plus_rsa_hsts"), timeout=5)
    connection.request("GET", "/some/page")
    response = connection.getresponse()
    response.read()
    assert response.status == 301
    assert response.getheader("Location") == f"https://{HOSTNAME}:{tls_lab.port('a_plus_rsa_hsts')}/some/page"
    connection.request("GET", "/health")
    assert connection.getresponse().read() == b"ok\n"
    connection.close()


@pytest.mark.parametrize("name, resumes, logged", [("load_session_cache", True, "r"),
                                                   ("load_no_resumption", False, "."),
                                                   ("load_tls12_no_resumption", False, ".")])
def test_load_pair_resumes_sessions_only_with_the_cache(tls_lab, name, resumes, logged):
    # Other tests hit the same server: wait for the row this probe adds, not any row.
    before = len(wait_for_log_rows(tls_lab, name, 0))
    assert probe.resumes_session(tls_lab.port(name)) is resumes
    last = wait_for_log_rows(tls_lab, name, before + 1)[-1]
    assert last["ssl_session_reused"] == logged and last["ssl_protocol"] == "TLSv1.2"


def test_access_log_counts_requests_per_keepalive_connection(tls_lab):
    name = "load_no_resumption"
    before = len(tls_lab.read_access_log(name)) if tls_lab.access_log(name).exists() else 0
    connection = http.client.HTTPSConnection(HOSTNAME, tls_lab.port(name), context=probe.strict_context(
        str(tls_lab.ca_file)), timeout=5)
    for _ in range(3):
        connection.request("GET", "/")
        connection.getresponse().read()
    connection.close()
    rows = wait_for_log_rows(tls_lab, name, before + 3)[before:]
    assert [r["connection_requests"] for r in rows] == ["1", "2", "3"]
    assert len({r["connection"] for r in rows}) == 1
    assert rows[0]["ssl_cipher"] == "TLS_AES_256_GCM_SHA384" and rows[0]["status"] == "200"


def wait_for_log_rows(tls_lab, name: str, count: int, timeout: float = 2.0) -> list[dict[str, str]]:
    """nginx writes the log line after the response is sent, so give it a moment."""
    deadline = time.monotonic() + timeout
    while True:
        rows = tls_lab.read_access_log(name) if tls_lab.access_log(name).exists() else []
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.02)


# --- PKI pieces and lab lifecycle -----------------------------------------------------------------


def is_probable_prime(n: int) -> bool:
    """Miller-Rabin with fixed bases: plenty to catch a mistyped or mis-derived group."""
    if n % 2 == 0:
        return n == 2
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for base in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        x = pow(base, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


@pytest.mark.parametrize("group, bits", [("dh1024", 1024), ("dh2048", 2048)])
def test_dh_groups_are_safe_primes_of_the_right_size(group, bits):
    p = load_pem_parameters(pki_module.dh_params_pem(group)).parameter_numbers().p
    assert p.bit_length() == bits
    assert is_probable_prime(p) and is_probable_prime((p - 1) // 2)


def test_dh2048_is_openssls_named_ffdhe2048_group():
    named = subprocess.run(["openssl", "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048"],
                           capture_output=True, check=True).stdout
    assert load_pem_parameters(named).parameter_numbers().p == pki_module.rfc7919_ffdhe2048_prime()


def test_dh1024_is_the_rfc_2409_oakley_group_2():
    head = "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    assert f"{pki_module.rfc2409_group2_prime():X}".startswith(head)


def test_pki_issues_each_key_kind(tmp_path):
    test_pki = pki_module.TestPki(tmp_path)
    for kind, (key_class, bits) in {"rsa1024": (rsa.RSAPublicKey, 1024), "rsa4096": (rsa.RSAPublicKey, 4096),
                                    "ec384": (ec.EllipticCurvePublicKey, 384)}.items():
        leaf = test_pki.issue_leaf(kind, key=kind).certificate
        assert isinstance(leaf.public_key(), key_class) and leaf.public_key().key_size == bits
        leaf.verify_directly_issued_by(test_pki.intermediate)
    assert (tmp_path / "rsa4096.key").stat().st_mode & 0o077 == 0  # keys are private


def test_a_second_lab_starts_fast_and_stops_cleanly(tmp_path):
    # Given the session's keys are already cached (the tls_lab fixture or the test above made them)
    started = time.monotonic()
    lab = start_lab(tmp_path / "lab")
    elapsed = time.monotonic() - started
    try:
        assert elapsed < 5, f"lab took {elapsed:.2f}s to start"
        status, _, _ = probe.get_page(lab.port("a_plus_rsa_hsts"), probe.strict_context(str(lab.ca_file)))
        assert status == 200
    finally:
        lab.stop()
    lab.assert_stopped()
    assert not (tmp_path / "lab" / "nginx.pid").exists()


def test_a_lab_killed_mid_session_is_reported_in_nginx_words_and_started_again_on_its_ports(tmp_path):
    lab = start_lab(tmp_path / "lab")
    try:
        assert lab_death(lab) is None
        before = lab.process.pid
        lab.process.send_signal(signal.SIGTERM)   # as a stray kill would
        lab.process.wait(timeout=10)
        death = lab_death(lab)
        assert death.startswith("the session's TLS lab (nginx) exited with 0 during this test")  # a clean stop
        assert "signal 15 (SIGTERM) received" in death     # nginx's notice names the signal (and the sender)
        assert lab.process.pid != before and lab_death(lab) is None
        status, _, _ = probe.get_page(lab.port("a_plus_rsa_hsts"), probe.strict_context(str(lab.ca_file)))
        assert status == 200
    finally:
        lab.stop()


def test_missing_nginx_fails_with_a_hint_to_run_make_test():
    with pytest.raises(pytest.fail.Exception, match="make test"):
        require_nginx(Path("/nonexistent/nginx"))


def test_certificates_are_current(tls_lab):
    now = datetime.datetime.now(datetime.timezone.utc)
    leaf = leaf_of(tls_lab, "a_plus_rsa_hsts")
    assert leaf.not_valid_before_utc < now < leaf.not_valid_after_utc


def test_tls13_only_server_refuses_tls12_with_a_protocol_version_alert(tls_lab):
    with pytest.raises(ssl.SSLError, match="PROTOCOL_VERSION"):
        with probe.ssl_connection(tls_lab.port("a_plus_ecdsa_tls13_hsts"), probe.permissive_context("TLSv1.2")):
            pass


def test_an_nginx_whose_port_another_process_holds_is_not_taken_for_started(tmp_path):
    # Two xdist workers starting their labs at once were once given the same port: the second nginx
    # retried its bind for 2.5 s and exited while the other's socket made every port look open.
    import socket

    from tests.support import tls_servers

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    [free] = tls_servers.kernel_ports(1)
    run_dir = tmp_path / "nginx"
    run_dir.mkdir()
    blocks = [f"server {{ listen 127.0.0.1:{port}; return 204; }}" for port in (free, taken)]
    conf = run_dir / "nginx.conf"
    conf.write_text(tls_servers.nginx_conf(run_dir, blocks, workers=1))
    process = tls_servers.launch_nginx(run_dir, conf)
    try:
        with pytest.raises(RuntimeError, match="taken by another process"):
            tls_servers.wait_for_ports(process, [free, taken], run_dir / "error.log", timeout=10)
        assert process.poll() is None   # still retrying its bind: by the ports alone it looked started
    finally:
        process.kill()
        process.wait()
        squatter.close()


def test_each_xdist_worker_draws_its_lab_ports_from_its_own_range(monkeypatch):
    from tests.support import tls_servers

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    ports = tls_servers.free_ports(40)
    assert len(set(ports)) == 40 and all(23_000 <= p < 26_000 for p in ports)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert all(20_000 <= p < 23_000 for p in tls_servers.free_ports(5))
