"""DNS rebinding: the address checked is the address connected to.

REBIND answers 127.0.0.1 to its first A query and 127.0.0.2 to every later one, and the same port is
served on both: the real server on 127.0.0.1, a trap on 127.0.0.2 that counts connections. Private
targets are allowed here (the scanned server is on loopback), because the question is not the
policy (tests/ssrf/test_targets.py) but whether anything looks the name up again after the check:
if it did, the trap would see it. Every check resolves once; every connection uses that answer.
"""

from __future__ import annotations

import time

import pytest

from tests import hostile
from tests.support.loadtests import verify
from tests.support.sites import added_site
from tests.support.ssrf import REBIND


def test_an_audit_looks_a_rebinding_name_up_once_and_connects_only_to_that_address(rebinding_dns, tls_lab):
    from workers.tls.engine import run_scan

    port = hostile.twin_port()
    identity = hostile.issue_identity(tls_lab.pki, "rebind", names=(REBIND,))
    with hostile.trap("127.0.0.2", port) as (_, trap), \
            hostile.serve_tls(hostile.server_context(identity), hostile.answer_ok, port=port):
        outcome = run_scan(REBIND, port, ca_file=str(tls_lab.ca_file), allow_private=True, network_timeout=3,
                           resolver=rebinding_dns.address)

    assert outcome.ok, outcome.error
    # sslyze's hundreds of handshakes, our probes, the HSTS request: all to the one checked address
    assert outcome.facts.ip == "127.0.0.1" and outcome.facts.suites
    assert trap.accepted == 0
    assert rebinding_dns.asked(REBIND, "A") == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_load_test_resolves_once_in_the_task_and_every_agent_loads_that_address(
        rebinding_dns, start_worker_on, alice, org_a, tls_lab):
    lab = "load_no_resumption"
    site = added_site(organization=org_a, hostname=REBIND, https_port=tls_lab.port(lab),
                               http_port=tls_lab.http_port(lab))
    verify(site)
    from tlsaudit.loadtests.services import queue_run

    with hostile.trap("127.0.0.2", tls_lab.port(lab)) as (_, trap):
        start_worker_on(("load",), concurrency=2)
        run = queue_run(site, "load", {"requests": 10, "concurrency": 2, "path": "/health"}, user=alice)
        deadline = time.monotonic() + 60
        while not run.is_finished and time.monotonic() < deadline:
            time.sleep(0.2)
            run.refresh_from_db()

    assert run.status == "done", run.error_message
    assert run.ip == "127.0.0.1" and run.results[0]["report"]["complete_requests"] == 10
    assert trap.accepted == 0
    assert rebinding_dns.asked(REBIND, "A") == 1


def test_a_webhook_posts_to_the_address_it_checked_and_checks_again_at_the_next_delivery(rebinding_dns, settings):
    from tlsaudit.alerts import webhooks

    port = hostile.twin_port()
    url = f"http://{REBIND}:{port}/hook"
    with hostile.recording_http("127.0.0.1", port) as (_, receiver), hostile.trap("127.0.0.2", port) as (_, trap):
        delivered = webhooks.post(url, b'{"n": 1}', "secret", 0)
        # The next delivery looks the name up again (it may have moved), and judges the new answer.
        settings.ALLOW_PRIVATE_TARGETS = False
        refused = webhooks.post(url, b'{"n": 2}', "secret", 0)

    assert delivered.ok and len(receiver.requests) == 1
    assert f"Host: {REBIND}:{port}".encode() in receiver.requests[0]
    assert (refused.ok, refused.transient) == (False, False)
    assert refused.error.startswith(f"{REBIND} points to 127.0.0.2, a loopback address")
    assert trap.accepted == 0
    assert rebinding_dns.asked(REBIND, "A") == 2
