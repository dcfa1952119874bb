"""#28 item 3: session resumption by session ID, by TLS 1.2 ticket and by TLS 1.3 ticket (PSK), each
asserted against what `openssl s_client -sess_out/-sess_in` does with the same server.

sslyze's test reported no ticket resumption on Go's crypto/tls servers and never tests TLS 1.3; our
probe (workers/tls/resumption.py), which replaces it, resumes as a client does."""

import subprocess

import pytest

from tlsaudit.domain.findings import derive_findings
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, OK
from workers.tls.engine import run_scan
from workers.tls.probes import Endpoint
from workers.tls.resumption import probe_resumption


def s_client_resumes(port: int, version: str, tmp_path, tickets: bool = True) -> bool:
    """openssl s_client twice: a full handshake saving its session, then one offering it. Its stdin stays
    open a moment so a TLS 1.3 client reads the tickets sent after the handshake."""
    session = tmp_path / f"session-{version}-{tickets}.pem"
    base = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost", version,
            *([] if tickets else ["-no_ticket"])]

    def run(*extra: str) -> str:
        return subprocess.run(["sh", "-c", 'sleep 0.5 | "$@"', "sh", *base, *extra], capture_output=True,
                              text=True, timeout=30).stdout

    run("-sess_out", str(session))
    return "Reused, TLSv1." in run("-sess_in", str(session))


def statuses(port: int) -> tuple[str, str, str]:
    """Our probe's (session ID, TLS 1.2 ticket, TLS 1.3 ticket)."""
    probed = probe_resumption(Endpoint("localhost", "127.0.0.1", port, 3.0))
    return probed.session_id.status, probed.ticket.status, probed.tls13.status


def test_a_go_server_resumes_by_ticket_and_psk_but_keeps_no_session_id_cache(go_tls_server, test_pki, tmp_path):
    port = go_tls_server()
    real = (s_client_resumes(port, "-tls1_2", tmp_path, tickets=False), s_client_resumes(port, "-tls1_2", tmp_path),
            s_client_resumes(port, "-tls1_3", tmp_path))
    assert real == (False, True, True)
    assert statuses(port) == (BAD, OK, OK)
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(test_pki.root_file))
    checks = outcome.facts.checks
    assert (checks["session_id_resumption"].status, checks["session_ticket_resumption"].status,
            checks["tls13_resumption"].status) == (BAD, OK, OK)
    finding = {f.id: f for f in derive_findings(outcome.facts)}["perf.session_resumption"]
    assert (finding.status, finding.evidence) == (
        "pass", "resumption with session tickets and TLS 1.3 tickets; not with session IDs")


@pytest.mark.parametrize("server, expected", [
    ("load_session_cache", (OK, OK, OK)),          # a shared session cache and tickets
    ("load_no_resumption", (BAD, BAD, BAD)),       # ssl_session_cache off; ssl_session_tickets off
])
def test_nginx_resumes_exactly_as_s_client_finds(tls_lab, tmp_path, server, expected):
    port = tls_lab.port(server)
    real = (s_client_resumes(port, "-tls1_2", tmp_path, tickets=False), s_client_resumes(port, "-tls1_2", tmp_path),
            s_client_resumes(port, "-tls1_3", tmp_path))
    assert real == tuple(status == OK for status in expected)
    assert statuses(port) == expected
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(tls_lab.ca_file))
    checks = outcome.facts.checks
    assert tuple(checks[name].status for name in ("session_id_resumption", "session_ticket_resumption",
                                                  "tls13_resumption")) == expected


def test_a_tls13_only_server_is_judged_by_its_tls13_tickets(tls_lab, tmp_path):
    port = tls_lab.port("a_plus_ecdsa_tls13_hsts")
    assert s_client_resumes(port, "-tls1_3", tmp_path)
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2,
                       ca_file=str(tls_lab.ca_file))
    checks = outcome.facts.checks
    assert checks["session_id_resumption"].status == NOT_TESTED
    assert "only speaks TLS 1.3" in checks["session_id_resumption"].reason
    assert checks["tls13_resumption"].status == OK and "1 of 1 resumption with TLS 1.3 tickets" in \
        checks["tls13_resumption"].detail
    assert {f.id: f for f in derive_findings(outcome.facts)}["perf.session_resumption"].evidence == \
        "resumption with TLS 1.3 tickets"
