"""Issue #18 item 7: what the report says about trust, chains and HSTS must match what is wrong.

Real servers on 127.0.0.1 (openssl s_server, a Python HTTPS server), scanned by the engine."""

import os
import re
import subprocess

import pki
import pytest

from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.snippets import config_snippets
from workers.tls.engine import run_scan


def scan_local(host, port, **kwargs):
    # sslyze's own 5 s: openssl s_server answers one connection at a time, and on a busy machine a queued
    # handshake waited past 2 s (the scan then failed as a slow server's would)
    kwargs.setdefault("network_timeout", 5)
    return run_scan(host, port, ip="127.0.0.1", allow_private=True, **kwargs)


def test_a_name_mismatch_leaves_the_custom_ca_trust_of_a_valid_chain_ok(s_server, test_pki):
    """Given a good chain to our root, scanned under a name the leaf does not carry."""
    outcome = scan_local("wrong.example", s_server(), ca_file=str(test_pki.root_file))
    (deployment,) = outcome.facts.certificates
    custom = {t.store: t for t in deployment.trust}["Custom CA"]
    assert deployment.hostname_matches is False
    assert (custom.trusted, custom.error) == (True, "")
    report = build_report(outcome.facts, outcome.mozilla)
    assert report.grade.grade == "M"
    text = render_text(outcome.facts, report, outcome.duration_s)
    trust_line = next(line for line in text.splitlines() if line.strip().startswith("trust:"))
    assert "name matches: False" in text and "trusted by" in trust_line and "Custom CA" in trust_line.split(";")[0]


def test_a_name_mismatch_does_not_hide_an_unknown_root(s_server, test_pki, tmp_path):
    """cryptography reports the name first even when the root is unknown: the chain must still be judged."""
    stranger = pki.make_ca("Somebody Else's Root")
    outcome = scan_local("wrong.example", s_server(), ca_file=str(pki.write_pem(tmp_path / "other.pem", stranger)))
    (deployment,) = outcome.facts.certificates
    custom = {t.store: t for t in deployment.trust}["Custom CA"]
    assert custom.trusted is False and custom.error and "host name" not in custom.error
    report = build_report(outcome.facts, outcome.mozilla)
    assert {t.kind for t in report.grade.trust_issues} == {"T", "M"}
    assert report.grade.grade == "T"


@pytest.fixture(scope="module")
def sha1_leaf_from_root(tmp_path_factory):
    """An RSA leaf signed with SHA-1 straight by a root (no intermediate exists). cryptography refuses
    to sign SHA-1, so the OpenSSL command line signs it."""
    folder = tmp_path_factory.mktemp("sha1")
    root = pki.make_ca("SHA-1 Test Root", key="rsa2048")
    leaf = pki.issue_leaf(root)
    root_file, root_key = pki.write_pem(folder / "root.pem", root), pki.write_key(folder / "root.key", root)
    leaf_key = pki.write_key(folder / "leaf.key", leaf)
    (folder / "ext.cnf").write_text(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    env = {**os.environ, "OPENSSL_CONF": "/dev/null"}
    run = lambda *args: subprocess.run(["openssl", *args], check=True, capture_output=True, env=env)  # noqa: E731
    run("req", "-new", "-key", str(leaf_key), "-subj", "/CN=localhost", "-out", str(folder / "leaf.csr"))
    run("x509", "-req", "-in", str(folder / "leaf.csr"), "-CA", str(root_file), "-CAkey", str(root_key),
        "-set_serial", "7", "-sha1", "-days", "30", "-extfile", str(folder / "ext.cnf"), "-out", str(folder / "leaf.pem"))
    return root_file, folder / "leaf.pem", leaf_key


def test_a_sha1_leaf_issued_by_the_root_is_not_called_incomplete(s_server, sha1_leaf_from_root):
    root_file, leaf_file, leaf_key = sha1_leaf_from_root
    port = s_server("-cipher", "DEFAULT:@SECLEVEL=0", send_intermediate=False, cert=leaf_file, key=leaf_key)
    outcome = scan_local("localhost", port, ca_file=str(root_file))
    (deployment,) = outcome.facts.certificates
    assert deployment.leaf.signature_hash == "sha1"
    assert deployment.chain_complete is True            # nothing is missing between the leaf and its root
    assert deployment.chain_has_sha1 is True
    report = build_report(outcome.facts, outcome.mozilla)
    assert "trust.sha1" in {t.rule_id for t in report.grade.trust_issues}
    assert "cap.incomplete_chain" not in {c.rule_id for c in report.grade.caps}
    failing = {f.id for f in report.findings if f.status == "fail"}
    assert "cert.sha1" in failing and "cert.chain_incomplete" not in failing
    certificate_fix = next(r for r in report.recommendations if r.id == "cert.replace")
    assert "SHA-1" in certificate_fix.why and "intermediate" not in certificate_fix.why


def test_the_recommended_nginx_hsts_header_passes_our_own_hsts_checks(http_server, test_pki):
    """Serve exactly the header our nginx snippet recommends, scan it, and read the HSTS verdicts."""
    snippet = config_snippets("intermediate")["nginx"]
    header = re.search(r'add_header Strict-Transport-Security "([^"]+)" always;', snippet).group(1)
    port = http_server({"/": (200, {"Strict-Transport-Security": header})})
    outcome = scan_local("localhost", port, ca_file=str(test_pki.root_file))
    report = build_report(outcome.facts, outcome.mozilla)
    hsts = {f.id: f.status for f in report.findings if f.id.startswith("hsts.")}
    assert hsts["hsts.missing"] == "pass" and hsts["hsts.short_max_age"] == "pass"
    assert "fail" not in hsts.values(), hsts
    assert not [r for r in report.recommendations if r.id.startswith("hsts.")]


def leaf_straight_from(root, folder, aia_url: str | None = None):
    from cryptography import x509
    from cryptography.x509.oid import AuthorityInformationAccessOID

    extensions = () if aia_url is None else (x509.AuthorityInformationAccess([x509.AccessDescription(
        AuthorityInformationAccessOID.CA_ISSUERS, x509.UniformResourceIdentifier(aia_url))]),)
    leaf = pki.issue_leaf(root, extensions=extensions)
    return pki.write_pem(folder / "leaf.pem", leaf), pki.write_key(folder / "leaf.key", leaf)


def test_a_leaf_a_private_root_signed_directly_is_not_called_incomplete_before_its_ca_is_set(s_server, tmp_path):
    """#30 item 5: a private root signs the leaf itself; scanned before the organization sets its CA, the
    chain cannot be told from one missing an intermediate, so no B and no "serve the chain" advice beside T."""
    root = pki.make_ca("Agency Private Root")
    cert, key = leaf_straight_from(root, tmp_path)
    outcome = scan_local("localhost", s_server(send_intermediate=False, cert=cert, key=key))
    (deployment,) = outcome.facts.certificates
    assert deployment.trusted_by_any is False and deployment.chain_complete is None
    report = build_report(outcome.facts, outcome.mozilla)
    assert report.grade.grade == "T"
    assert "cap.incomplete_chain" not in {c.rule_id for c in report.grade.caps}
    assert report.grade.grade_ignoring_trust != "B"
    assert not any("complete certificate chain" in r.title.lower() for r in report.recommendations)

    # With its CA set, the same server is complete and trusted: nothing was ever missing.
    trusted = scan_local("localhost", s_server(send_intermediate=False, cert=cert, key=key),
                         ca_file=str(pki.write_pem(tmp_path / "root.pem", root)))
    (deployment,) = trusted.facts.certificates
    assert deployment.trusted_by_any is True and deployment.chain_complete is True


def test_a_leaf_naming_its_issuer_url_and_sent_alone_is_still_incomplete(s_server, tmp_path):
    """A leaf that names where its issuer is published (as public CAs' leaves do), sent without it and
    the URL unreachable: the missing certificate is an intermediate, and the cap stays."""
    root = pki.make_ca("Issuing CA")
    cert, key = leaf_straight_from(root, tmp_path, aia_url="http://127.0.0.1:9/issuer.der")
    outcome = scan_local("localhost", s_server(send_intermediate=False, cert=cert, key=key))
    (deployment,) = outcome.facts.certificates
    assert deployment.chain_complete is False
    report = build_report(outcome.facts, outcome.mozilla)
    assert "cap.incomplete_chain" in {c.rule_id for c in report.grade.caps}


def test_a_leaf_whose_issuer_url_gives_a_private_root_is_complete(s_server, tmp_path):
    """A single-tier private CA that names its root's URL in the leaves (as AD CS does): the URL gives a
    self-signed root, so nothing was missing between the leaf and it; the T stays, with no chain cap."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from cryptography.hazmat.primitives.serialization import Encoding

    root = pki.make_ca("Single-tier Private Root")

    class RootFile(BaseHTTPRequestHandler):
        def do_GET(self):
            body = root.cert.public_bytes(Encoding.DER)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), RootFile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cert, key = leaf_straight_from(root, tmp_path, aia_url=f"http://127.0.0.1:{server.server_port}/root.der")
        outcome = scan_local("localhost", s_server(send_intermediate=False, cert=cert, key=key))
    finally:
        server.shutdown()
        server.server_close()
    (deployment,) = outcome.facts.certificates
    assert deployment.trusted_by_any is False and deployment.chain_complete is True
    report = build_report(outcome.facts, outcome.mozilla)
    assert report.grade.grade == "T"
    assert "cap.incomplete_chain" not in {c.rule_id for c in report.grade.caps}
