"""Issue 18 item 4: each leaf's revocation status, from a real CA's real OCSP responder and CRL.

The lab: a root and an intermediate CA made with `cryptography`; leaves whose AIA names an OCSP
responder and/or whose CRL distribution point names a CRL on http://127.0.0.1:PORT; Debian's
`openssl ocsp` answering from an index file (signed by the intermediate), a small HTTP server
serving the intermediate's CRL, and `openssl s_server` presenting each leaf (once with a stapled
response from that same responder). Audits run end to end (run_scan), then grade, findings, the
JSON (validated against the published schema) and the text report read the result.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema
import pki
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID, SignatureAlgorithmOID

from tests import hostile
from tests.support.tls_servers import launch_nginx, nginx_conf, require_nginx, wait_for_ports
from tlsaudit.audits.jsonreport import audit_json
from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.scanfacts import CRL, GOOD, NOT_TESTED, OCSP_RESPONDER, REVOKED, STAPLED_OCSP
from workers.tls import revocation
from workers.tls.engine import run_scan

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "audit-report.schema.json").read_text())
REVOKED_AT = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=3)


@dataclass
class Leaf:
    issued: pki.Issued
    cert_file: Path
    key_file: Path


@dataclass
class Lab:
    root_file: Path
    intermediate: pki.Issued
    intermediate_file: Path
    responder: str                          # http://127.0.0.1:PORT/ of `openssl ocsp`
    leaves: dict[str, Leaf] = field(default_factory=dict)
    hanging_port: int = 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_responder(index: Path, port: int, signer: Path, signer_key: Path, ca: Path, *options: str) -> subprocess.Popen:
    """`openssl ocsp` answering from `index` on `port`, once it says it listens. (Not by connecting to
    it: a connection closed without a request leaves its one-at-a-time loop stuck.)"""
    process = subprocess.Popen(["openssl", "ocsp", "-index", str(index), "-port", str(port), "-rsigner", str(signer),
                                "-rkey", str(signer_key), "-CA", str(ca), "-ndays", "1", *options],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said = b""
    while b"waiting for OCSP client connections" not in said:
        line = process.stderr.readline()
        if not line:
            raise RuntimeError(f"openssl ocsp did not start: {said.decode(errors='replace')}")
        said += line
    threading.Thread(target=process.stderr.read, daemon=True).start()     # keep its log from filling the pipe
    return process


def ocsp_at(url: str) -> x509.AuthorityInformationAccess:
    return x509.AuthorityInformationAccess([x509.AccessDescription(AuthorityInformationAccessOID.OCSP,
                                                                   x509.UniformResourceIdentifier(url))])


def crl_at(url: str) -> x509.CRLDistributionPoints:
    return x509.CRLDistributionPoints([x509.DistributionPoint([x509.UniformResourceIdentifier(url)], None, None,
                                                              None)])


def index_line(leaf: pki.Issued, revoked_reason: str | None = None) -> str:
    """One row of `openssl ca`'s index, which `openssl ocsp -index` answers from (subjects must differ)."""
    serial = f"{leaf.cert.serial_number:X}"
    serial = serial if len(serial) % 2 == 0 else "0" + serial
    expiry = leaf.cert.not_valid_after_utc.strftime("%y%m%d%H%M%SZ")
    if revoked_reason is None:
        return f"V\t{expiry}\t\t{serial}\tunknown\t/CN=localhost/serialNumber={serial}\n"
    return (f"R\t{expiry}\t{REVOKED_AT:%y%m%d%H%M%SZ},{revoked_reason}\t{serial}\tunknown\t"
            f"/CN=localhost/serialNumber={serial}\n")


def signed_crl(issuer: pki.Issued, revoked: list[tuple[pki.Issued, x509.ReasonFlags]]) -> bytes:
    now = datetime.now(timezone.utc)
    builder = (x509.CertificateRevocationListBuilder().issuer_name(issuer.cert.subject)
               .last_update(now - timedelta(minutes=1)).next_update(now + timedelta(days=1)))
    for leaf, reason in revoked:
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder().serial_number(leaf.cert.serial_number).revocation_date(REVOKED_AT)
            .add_extension(x509.CRLReason(reason), critical=False).build())
    return builder.sign(issuer.key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def serve_bytes(routes: dict[str, bytes]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The CA, its responder, its CRL server, and one leaf per case."""
    folder = tmp_path_factory.mktemp("revocation")
    root = pki.make_ca("Revocation Test Root")
    intermediate = pki.make_ca("Revocation Test Intermediate", issuer=root)
    responder_port, closed_port = free_port(), free_port()
    responder = f"http://127.0.0.1:{responder_port}/"
    crl_routes: dict[str, bytes] = {}
    crl_server = serve_bytes(crl_routes)
    crl_url = f"http://127.0.0.1:{crl_server.server_address[1]}/intermediate.crl"
    with hostile.trap("127.0.0.1") as (hanging_port, _):
        targets = {"good": (ocsp_at(responder), crl_at(crl_url)), "revoked": (ocsp_at(responder),),
                   "crl_revoked": (crl_at(crl_url),), "down": (ocsp_at(f"http://127.0.0.1:{closed_port}/ocsp"),),
                   "hanging": (ocsp_at(f"http://127.0.0.1:{hanging_port}/"),),
                   "stapled": (ocsp_at(f"http://127.0.0.1:{closed_port}/ocsp"),)}
        lab = Lab(root_file=pki.write_pem(folder / "root.pem", root), intermediate=intermediate,
                  intermediate_file=pki.write_pem(folder / "intermediate.pem", intermediate), responder=responder,
                  hanging_port=hanging_port)
        for name, extensions in targets.items():
            issued = pki.issue_leaf(intermediate, extensions=extensions)
            lab.leaves[name] = Leaf(issued, pki.write_pem(folder / f"{name}.pem", issued),
                                    pki.write_key(folder / f"{name}.key", issued))
        crl_routes["/intermediate.crl"] = signed_crl(
            intermediate, [(lab.leaves["crl_revoked"].issued, x509.ReasonFlags.superseded)])
        index = folder / "index.txt"
        index.write_text(index_line(lab.leaves["good"].issued)
                         + index_line(lab.leaves["revoked"].issued, "keyCompromise")
                         + index_line(lab.leaves["stapled"].issued))
        key_file = pki.write_key(folder / "intermediate.key", intermediate)
        process = start_responder(index, responder_port, lab.intermediate_file, key_file, lab.intermediate_file)
        try:
            yield lab
        finally:
            process.terminate()
            process.wait(timeout=10)
            crl_server.shutdown()
            crl_server.server_close()


def stapled_response(lab: Lab, leaf: Leaf) -> Path:
    """The DER response the server staples, asked of the responder by `openssl ocsp` as a server would."""
    path = leaf.cert_file.with_suffix(".ocsp.der")
    subprocess.run(["openssl", "ocsp", "-issuer", str(lab.intermediate_file), "-cert", str(leaf.cert_file),
                    "-url", lab.responder, "-respout", str(path), "-noverify"],
                   check=True, capture_output=True, timeout=20)
    return path


def audit(s_server, lab: Lab, name: str, *server_args: str):
    leaf = lab.leaves[name]
    port = s_server("-cert_chain", str(lab.intermediate_file), *server_args, send_intermediate=False,
                    cert=leaf.cert_file, key=leaf.key_file)
    return audit_port(lab, port)


def audit_port(lab: Lab, port: int):
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(lab.root_file))
    assert outcome.error is None, outcome.error
    return outcome


def reports(facts):
    report = build_report(facts)
    document = audit_json(facts, report, facts.duration_s)
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)
    return report, document, render_text(facts, report, facts.duration_s)


def test_a_good_leaf_is_good_by_its_ocsp_responder_and_the_crl_is_not_asked(s_server, lab):
    outcome = audit(s_server, lab, "good")

    (deployment,) = outcome.facts.certificates
    assert deployment.revocation.status == GOOD
    assert (deployment.revocation.method, deployment.revocation.source) == (OCSP_RESPONDER, lab.responder)
    report, document, text = reports(outcome.facts)
    assert report.grade.grade == "A" and "trust.revoked" not in {n.rule_id for n in report.grade.not_tested}
    assert document["certificates"][0]["revocation"]["status"] == "good"
    assert f"revocation: good, according to the OCSP responder {lab.responder}" in text


def test_a_revoked_leaf_grades_t_with_the_reason_on_every_report(s_server, lab):
    outcome = audit(s_server, lab, "revoked")

    revoked = outcome.facts.certificates[0].revocation
    assert (revoked.status, revoked.revocation_reason, revoked.revoked_at) == (REVOKED, "key_compromise", REVOKED_AT)
    report, document, text = reports(outcome.facts)
    assert (report.grade.grade, report.grade.grade_ignoring_trust) == ("T", "A")   # A: s_server sends no HSTS
    words = (f"revoked on {REVOKED_AT:%Y-%m-%d %H:%M} UTC (key compromise), according to the OCSP responder "
             f"{lab.responder}")
    assert [(t.rule_id, t.reason) for t in report.grade.trust_issues] == [
        ("trust.revoked", f"The certificate for CN=localhost,O=TLS Audit tests has been {words}")]
    assert {f.id: (f.status, f.evidence) for f in report.findings}["cert.revoked"] == ("fail", words)
    json_revocation = document["certificates"][0]["revocation"]
    assert (json_revocation["status"], json_revocation["revocation_reason"]) == ("revoked", "key_compromise")
    assert document["grade"] == "T" and f"revocation: {words}" in text
    assert any(r["id"] == "cert.replace" for r in document["recommendations"])


def test_a_leaf_with_only_a_crl_is_judged_by_the_crl(s_server, lab):
    outcome = audit(s_server, lab, "crl_revoked")

    revoked = outcome.facts.certificates[0].revocation
    assert (revoked.status, revoked.method, revoked.revocation_reason) == (REVOKED, CRL, "superseded")
    assert revoked.source.endswith("/intermediate.crl") and revoked.revoked_at == REVOKED_AT
    assert reports(outcome.facts)[0].grade.grade == "T"


def test_a_responder_that_is_down_leaves_revocation_not_checked_and_the_audit_complete(s_server, lab):
    outcome = audit(s_server, lab, "down")

    revocation_ = outcome.facts.certificates[0].revocation
    assert (revocation_.status, revocation_.why) == (NOT_TESTED, "unreachable")
    assert revocation_.reason.startswith("the OCSP responder could not be reached")
    report, document, _ = reports(outcome.facts)
    assert report.grade.grade == "A"
    assert {n.rule_id: n.reason for n in report.grade.not_tested}["trust.revoked"].startswith(
        "Revocation of CN=localhost,O=TLS Audit tests: not checked: the OCSP responder could not be reached")
    assert document["certificates"][0]["revocation"]["why"] == "unreachable"


def test_a_responder_that_hangs_costs_the_revocation_budget_and_no_more(s_server, lab):
    outcome = audit(s_server, lab, "hanging")

    revocation_ = outcome.facts.certificates[0].revocation
    assert (revocation_.status, revocation_.why) == (NOT_TESTED, "timeout")
    assert revocation_.reason == "the OCSP responder timed out (revocation checks get 4 s in all)"
    assert outcome.timings["revocation"] < revocation.BUDGET_S + 1
    # asked beside our own probes, it took no time from them
    assert all(p.enforced is not None for p in outcome.facts.preferences.values())


def test_a_stapled_response_answers_without_asking_anyone(s_server, lab):
    """The stapled leaf's own responder URL is a closed port: only the staple can say good."""
    outcome = audit(s_server, lab, "stapled", "-status_file", str(stapled_response(lab, lab.leaves["stapled"])))

    (deployment,) = outcome.facts.certificates
    assert deployment.ocsp_stapled.status == "ok"
    assert (deployment.revocation.status, deployment.revocation.method) == (GOOD, STAPLED_OCSP)
    assert "revocation: good, according to the OCSP response the server staples" in reports(outcome.facts)[2]


def test_nginx_stapling_from_a_file_answers_too(lab, tmp_path):
    """nginx's `ssl_stapling_file` (no resolver needed): the response `openssl ocsp` gave, sent in the handshake."""
    require_nginx()
    leaf, port = lab.leaves["stapled"], free_port()
    fullchain = tmp_path / "fullchain.pem"
    fullchain.write_bytes(leaf.cert_file.read_bytes() + lab.intermediate_file.read_bytes())
    block = f"""
    server {{
        listen 127.0.0.1:{port} ssl;
        access_log off;
        ssl_certificate {fullchain};
        ssl_certificate_key {leaf.key_file};
        ssl_stapling on;
        ssl_stapling_file {stapled_response(lab, leaf)};
        location / {{ return 200 "stapled\\n"; }}
    }}
"""
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_conf(tmp_path, [block], workers=1))
    process = launch_nginx(tmp_path, conf)
    try:
        wait_for_ports(process, [port], tmp_path / "error.log", timeout=10)
        outcome = audit_port(lab, port)
    finally:
        process.terminate()
        process.wait(timeout=10)

    (deployment,) = outcome.facts.certificates
    assert deployment.ocsp_stapled.status == "ok"
    assert (deployment.revocation.status, deployment.revocation.method) == (GOOD, STAPLED_OCSP)


def test_a_responder_or_crl_on_a_private_address_is_never_asked(lab):
    """With private targets refused (production), a certificate naming a responder inside is not followed."""
    leaf = lab.leaves["good"].issued.cert
    with hostile.trap("127.0.0.2") as (port, trap):
        answers = [revocation.ask_responder(f"http://127.0.0.2:{port}/", leaf, lab.intermediate.cert,
                                            allow_private=False, timeout=2, deadline=revocation.budget(None)),
                   revocation.read_crl(f"http://2130706434:{port}/ca.crl", leaf, lab.intermediate.cert,
                                       allow_private=False, timeout=2, deadline=revocation.budget(None))]

    assert [(a.status, a.why) for a in answers] == [(NOT_TESTED, "blocked")] * 2
    assert all("127.0.0.2" in a.reason and "loopback" in a.reason for a in answers)
    assert trap.accepted == 0


def test_an_answer_signed_by_anyone_but_the_issuer_is_refused(lab, tmp_path):
    """A responder signing with the root's key (the leaf's issuer is the intermediate, which delegated
    nothing): the answer says good, and is not believed."""
    root_key = tmp_path / "root.key"
    root = pki.make_ca("Not The Issuer")
    pki.write_key(root_key, root)
    port = free_port()
    index = tmp_path / "index.txt"
    index.write_text(index_line(lab.leaves["good"].issued))
    process = start_responder(index, port, pki.write_pem(tmp_path / "other.pem", root), root_key,
                              lab.intermediate_file)
    try:
        answer = revocation.ask_responder(f"http://127.0.0.1:{port}/", lab.leaves["good"].issued.cert,
                                          lab.intermediate.cert, allow_private=True, timeout=2,
                                          deadline=revocation.budget(None))
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert (answer.status, answer.why) == (NOT_TESTED, "bad_signature")


def test_an_answer_signed_with_rsa_pss_is_believed(tmp_path):
    """The outside review: a responder signing with RSASSA-PSS (OpenSSL's -rsigopt rsa_padding_mode:pss)
    was reported as a bad signature, since only PKCS#1 v1.5 was verified. (The lab's CAs are EC: this
    one is RSA.)"""
    issuer = pki.make_ca("PSS Responder CA", key="rsa2048")
    leaf = pki.issue_leaf(issuer)
    port = free_port()
    index = tmp_path / "index.txt"
    index.write_text(index_line(leaf))
    issuer_file = pki.write_pem(tmp_path / "issuer.pem", issuer)
    process = start_responder(index, port, issuer_file, pki.write_key(tmp_path / "issuer.key", issuer), issuer_file,
                              "-rsigopt", "rsa_padding_mode:pss", "-rsigopt", "rsa_pss_saltlen:digest")
    url = f"http://127.0.0.1:{port}/"
    fetch = {"allow_private": True, "timeout": 2, "deadline": revocation.budget(None)}
    request = ocsp.OCSPRequestBuilder().add_certificate(leaf.cert, issuer.cert, hashes.SHA1()).build()
    try:
        raw = revocation.fetch_url(url, post=request.public_bytes(serialization.Encoding.DER),
                                   content_type="application/ocsp-request", max_bytes=revocation.MAX_OCSP_BYTES,
                                   **fetch)
        answer = revocation.ask_responder(url, leaf.cert, issuer.cert, **fetch)
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert ocsp.load_der_ocsp_response(raw).signature_algorithm_oid == SignatureAlgorithmOID.RSASSA_PSS
    assert (answer.status, answer.method) == (GOOD, OCSP_RESPONDER), answer


def test_an_answer_without_a_next_update_is_trusted_only_while_recent():
    """The outside review: with no nextUpdate an old stapled "good" (from before a revocation) never went
    stale. Now such an answer older than MAX_UNDATED_AGE is not trusted; dated ones keep their own rule."""
    now = datetime.now(timezone.utc)
    assert revocation.staleness(now - timedelta(days=1), None) == ""
    assert revocation.staleness(now - revocation.MAX_UNDATED_AGE - timedelta(hours=1), None).startswith(
        "too old to trust")
    assert revocation.staleness(now - timedelta(days=30), now + timedelta(days=1)) == ""
    assert revocation.staleness(now - timedelta(days=3), now - timedelta(days=1)).startswith(
        "out of date")


def delegated_answer(issuer: pki.Issued, leaf: pki.Issued, not_before: datetime, not_after: datetime):
    """A "good" answer about `leaf` signed by an OCSP-signing certificate `issuer` delegated, valid
    from `not_before` to `not_after` (RFC 6960 4.2.2.2)."""
    key = pki.make_key("rsa2048")
    responder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                                                      "Delegated Responder")]))
                 .issuer_name(issuer.cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
                 .not_valid_before(not_before).not_valid_after(not_after)
                 .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.OCSP_SIGNING]), critical=False)
                 .sign(issuer.key, hashes.SHA256()))
    now = datetime.now(timezone.utc)
    return (ocsp.OCSPResponseBuilder()
            .add_response(cert=leaf.cert, issuer=issuer.cert, algorithm=hashes.SHA1(),
                          cert_status=ocsp.OCSPCertStatus.GOOD, this_update=now - timedelta(minutes=1),
                          next_update=now + timedelta(days=1), revocation_time=None, revocation_reason=None)
            .responder_id(ocsp.OCSPResponderEncoding.HASH, responder).certificates([responder])
            .sign(key, hashes.SHA256()))


def test_a_delegated_responder_speaks_for_the_issuer_only_while_its_certificate_is_valid(lab):
    """The outside review: an expired delegated OCSP-signing certificate was still believed."""
    leaf, issuer = lab.leaves["good"].issued, lab.intermediate
    now = datetime.now(timezone.utc)
    valid = delegated_answer(issuer, leaf, now - timedelta(days=1), now + timedelta(days=30))
    expired = delegated_answer(issuer, leaf, now - timedelta(days=60), now - timedelta(days=1))
    assert revocation.ocsp_signed_by_ca(valid, issuer.cert) is True
    assert revocation.ocsp_signed_by_ca(expired, issuer.cert) is False


def test_a_complete_answer_is_read_without_waiting_for_the_server_to_close():
    """The outside review: the fetch read until the server closed, so a responder that keeps the
    connection open after a complete answer cost the whole revocation budget (then a timeout)."""
    body = b"\x30\x03\x0a\x01\x06"      # an OCSP response's DER; any bytes do for the fetch
    answer = b"HTTP/1.0 200 OK\r\nContent-Type: application/ocsp-response\r\nContent-Length: 5\r\n\r\n" + body
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        held = []

        def answer_and_hold():
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.sendall(answer)
            held.append(conn)          # never closed until the test ends

        server = threading.Thread(target=answer_and_hold, daemon=True)
        server.start()
        try:
            fetched = revocation.fetch_url(f"http://127.0.0.1:{listener.getsockname()[1]}/", allow_private=True,
                                           timeout=2, deadline=revocation.budget(None))
        finally:
            server.join(timeout=5)
            for conn in held:
                conn.close()

    assert fetched == body
