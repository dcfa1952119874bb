"""The scan pool's engine side (issue #16): many audits in one process, each on its own thread, as the
threads-pool scan worker and the batch CLI run them. Real lab servers, real sslyze.

- concurrent audits never mix their results up;
- a target that stalls does not hold the others up;
- the process's connection gates (workers/net/deadline.py) hold: at most `per_ip` connections open
  at once to one address, counted at the servers by a relay in front of them.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests import hostile
from tests.support.relay import counting_relay
from tlsaudit.domain.audit_report import build_report
from workers.net import deadline as deadline_module
from workers.net.deadline import configure_gates
from workers.tls.engine import run_scan

MIXED = ("a_plus_rsa_hsts", "b_tls10_enabled", "t_expired", "m_wrong_name", "a_minus_tls12_only", "b_cbc_only")


@pytest.fixture
def gates():
    """gates(per_ip, total): this process's limits for one test, the previous ones back after it."""
    before = deadline_module.gates()
    yield lambda per_ip, total=256: configure_gates(per_ip, total)
    deadline_module._gates = before


def audit(tls_lab, port: int, ip: str = "127.0.0.1", deadline_s: float = 50.0):
    outcome = run_scan("localhost", port, ip=ip, ca_file=str(tls_lab.ca_file), allow_private=True,
                       network_timeout=3, max_retries=1, deadline_s=deadline_s)
    return outcome, time.monotonic()


def grades(outcome) -> tuple[str, str]:
    grade = build_report(outcome.facts, outcome.mozilla).grade
    return grade.grade, grade.grade_ignoring_trust


def test_six_concurrent_audits_in_one_process_each_get_their_own_servers_results(tls_lab, gates):
    gate = gates(per_ip=30)

    with ThreadPoolExecutor(len(MIXED)) as pool:
        outcomes = list(pool.map(lambda name: audit(tls_lab, tls_lab.port(name))[0], MIXED))

    for name, outcome in zip(MIXED, outcomes):
        spec = tls_lab.spec(name)
        assert outcome.error is None, (name, outcome.error)
        assert (outcome.facts.port, outcome.facts.host) == (tls_lab.port(name), "localhost")
        assert grades(outcome) == (spec.grade, spec.grade_ignoring_trust), name
        nginx_names = [{"TLSv1": "TLSv1.0"}.get(p, p) for p in spec.protocols]
        assert [p for p in outcome.facts.protocols if outcome.facts.supports(p)] == nginx_names, name
    # They did overlap: more connections were open at once than one audit opens (sslyze's 5).
    assert gate.peak_per_ip["127.0.0.1"] > 5
    assert gate.open_now() == 0  # every connection gave its slot back


def test_a_stalling_target_does_not_hold_up_the_audits_beside_it(tls_lab, gates):
    gates(per_ip=5)
    good = ("a_plus_rsa_hsts", "b_tls10_enabled", "a_minus_tls12_only")
    # Given a server on another address that stalls every other connection, a byte a second
    with hostile.trickle_every(tls_lab.pki, nth=2, ip="127.0.0.2") as stalling_port:
        with ThreadPoolExecutor(1 + len(good)) as pool:
            # When it is audited (deadline 20 s) together with three good servers
            stalled = pool.submit(audit, tls_lab, stalling_port, "127.0.0.2", 20.0)
            audits = [pool.submit(audit, tls_lab, tls_lab.port(name)) for name in good]
            results = [future.result() for future in audits]
            stalled_outcome, stalled_at = stalled.result()
    # Then each good audit is graded right and done before the stalled one gives up
    for name, (outcome, finished_at) in zip(good, results):
        assert outcome.error is None, (name, outcome.error)
        assert grades(outcome) == (tls_lab.spec(name).grade, tls_lab.spec(name).grade_ignoring_trust)
        assert finished_at < stalled_at, name
    assert stalled_outcome.error is not None and stalled_outcome.error.code == "timeout", stalled_outcome.error


def test_one_process_never_opens_more_than_per_ip_connections_to_one_address(tls_lab, gates):
    gate = gates(per_ip=2)
    names = ("a_plus_rsa_hsts", "b_tls10_enabled", "a_minus_tls12_only")
    # Given three servers on one address, each audit allowed sslyze's 5 connections
    with counting_relay([tls_lab.port(name) for name in names]) as relay:
        # When the three are audited at once
        with ThreadPoolExecutor(len(names)) as pool:
            outcomes = list(pool.map(lambda name: audit(tls_lab, relay.port(tls_lab.port(name)))[0], names))
    # Then the address never had more than 2 of our connections open: counted by the process, and at
    # the servers within the one connection in flight (without the gate: 3 audits x 5 = 15 at once)
    assert relay.total > 250  # three full audits went through the relay (~100 connections each)
    assert gate.peak_per_ip["127.0.0.1"] == 2
    assert relay.peak <= 2 + 1
    for name, outcome in zip(names, outcomes):
        assert outcome.error is None, (name, outcome.error)
        assert grades(outcome) == (tls_lab.spec(name).grade, tls_lab.spec(name).grade_ignoring_trust)


def test_alpn_and_hsts_are_probed_while_sslyze_runs_not_after(tls_lab, gates):
    gates(per_ip=5)
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def record(name: str, status: str) -> None:
        with lock:
            events.append((name, status))

    outcome = run_scan("localhost", tls_lab.port("a_plus_rsa_hsts"), ip="127.0.0.1", ca_file=str(tls_lab.ca_file),
                       allow_private=True, network_timeout=3, on_progress=record)

    assert outcome.error is None
    assert outcome.facts.hsts.max_age == 31536000 and outcome.facts.alpn_check.tested
    order = [event for event in events if event[1] == "done"]
    assert order.index(("alpn", "done")) < order.index(("sslyze", "done"))
    assert order.index(("hsts", "done")) < order.index(("sslyze", "done"))
