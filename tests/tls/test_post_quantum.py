"""Issue #18 item 2: post-quantum key exchange, probed with our own TLS 1.3 ClientHello against a
real Go crypto/tls server (tests/support/gotls: Go's defaults include the three hybrids)."""

import pytest

from tlsaudit.audits.textreport import render_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.scanfacts import BAD, OK, PQ_GROUPS
from workers.tls import hello
from workers.tls.engine import run_scan
from workers.tls.probes import Endpoint
from workers.tls.tls13 import probe_post_quantum


def endpoint(port: int) -> Endpoint:
    return Endpoint(host="localhost", ip="127.0.0.1", port=port, timeout=3.0)


@pytest.mark.parametrize("group, server_share", [("X25519MLKEM768", 1088 + 32), ("SecP256r1MLKEM768", 65 + 1088),
                                                 ("SecP384r1MLKEM1024", 97 + 1568)])
def test_go_answers_each_hybrid_share_with_its_own(go_tls_server, group, server_share):
    """Go checks our encapsulation key (FIPS 203 modulus check) and EC point before it answers:
    a ServerHello with the server's ciphertext + point means our share was valid and laid out right."""
    code = hello.GROUP_IDS[group]
    answer = hello.exchange(endpoint(go_tls_server()), hello.ClientHelloSpec(
        suites=[0x1301], groups=[code], key_share_groups=[code]))
    assert (answer.kind, answer.version_name, answer.group_name) == ("server_hello", "TLSv1.3", group)
    assert answer.server_share_bytes == server_share


def test_client_shares_have_the_lengths_the_draft_gives():
    assert [len(hello.key_share(hello.GROUP_IDS[g])) for g in (*PQ_GROUPS, "X25519Kyber768Draft00")] == [
        1184 + 32, 65 + 1184, 97 + 1568, 32 + 1184]


def test_a_go_server_with_default_groups_is_post_quantum_ready_and_prefers_it(go_tls_server):
    pq = probe_post_quantum(endpoint(go_tls_server()))
    assert pq.check.status == OK and pq.ready is True
    assert pq.accepted == PQ_GROUPS and pq.rejected == ()
    assert (pq.browser_choice, pq.prefers_pq, pq.draft_kyber) == ("X25519MLKEM768", True, False)


@pytest.mark.parametrize("groups, godebug", [("X25519,P256", ""), ("", "tlsmlkem=0,tlssecpmlkem=0")])
def test_a_go_server_without_hybrids_is_not_ready(go_tls_server, groups, godebug):
    pq = probe_post_quantum(endpoint(go_tls_server(groups=groups, godebug=godebug)))
    assert pq.check.status == BAD and pq.ready is False
    assert pq.accepted == () and pq.rejected == PQ_GROUPS
    assert pq.browser_choice == "x25519" and pq.prefers_pq is None


def test_a_server_taking_only_the_p384_hybrid_is_ready_but_browsers_get_x25519(go_tls_server):
    pq = probe_post_quantum(endpoint(go_tls_server(groups="SecP384r1MLKEM1024,X25519")))
    assert pq.ready is True and pq.accepted == ("SecP384r1MLKEM1024",)
    assert pq.browser_choice == "x25519" and pq.prefers_pq is None


def audit(port, test_pki):
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    assert outcome.error is None, outcome.error
    return outcome, build_report(outcome.facts, outcome.mozilla)


def test_the_audit_of_a_pq_server_says_ready_with_no_grade_change_and_no_advice(go_tls_server, test_pki):
    outcome, report = audit(go_tls_server(hsts="max-age=63072000"), test_pki)
    assert outcome.facts.post_quantum.ready is True
    finding = next(f for f in report.findings if f.id == "kx.post_quantum")
    assert finding.status == "pass" and "prefers it" in finding.evidence
    assert "kx.post_quantum" not in {r.id for r in report.recommendations}
    text = render_text(outcome.facts, report, outcome.duration_s)
    assert "post-quantum ready: yes" in text and "prefers X25519MLKEM768 over X25519: yes" in text


def test_the_audit_of_a_classical_server_recommends_x25519mlkem768_and_keeps_its_grade(go_tls_server, test_pki):
    outcome, report = audit(go_tls_server(groups="X25519,P256", hsts="max-age=63072000"), test_pki)
    finding = next(f for f in report.findings if f.id == "kx.post_quantum")
    assert finding.status == "info" and finding.title == "Not post-quantum ready"
    rec = next(r for r in report.recommendations if r.id == "kx.post_quantum")
    assert "ssl_ecdh_curve X25519MLKEM768:X25519:" in rec.change and "OpenSSL 3.5" in rec.change
    assert rec.predicted_grade == report.grade.grade
    assert "post-quantum ready: no" in render_text(outcome.facts, report, outcome.duration_s)
