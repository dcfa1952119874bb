"""Sixteen hostile targets x {audit, load test, browser probe}, and seven of them x handshake run, each
through the real worker path, with the engines' deadlines shortened through their settings
(`short_deadlines`).

The cases run path by path, on one real Celery worker (one thread) per path's queue and, for the probe
path, one Chromium. The path's first case has the worker run a normal task first (warm-up: its database
and broker connections, its Chromium); every case then queues the hostile one, which must end failed
(or done, where the server's TLS is real and its hostility elsewhere: the report says what could not
be read) within 60 s of being queued, with a message that names the cause in a site owner's words;
then the same worker runs a normal task to success, whose state is the next case's starting point
(chained from case to case). Meanwhile nothing leaks:
- no client socket towards the hostile port is left open, in the worker or its Chromium;
- the worker's descriptor count after the last task is at most FD_SLACK above the count after the
  warm-up (with one worker thread, the warm-up opened every connection the worker keeps; the slack
  covers one more pooled Redis connection, which kombu may open for a chord or a retry);
- the probe path keeps one browser: every Chromium process belongs to it, no more than before;
- no thread of sslyze's is left running.
"""

from __future__ import annotations

import time

import pytest

from tests.support import waiting
from tests.support.hostile_targets import (
    CONNECTION_S,
    PAGE_S,
    TARGETS,
    chromium_pids,
    client_sockets_to,
    foreign_chromium,
    hostile_target,
    open_fds,
    sslyze_threads,
)
from tests.support.loadtests import verify
from tests.support.sites import added_site
from tests.support.waiting import settled
from tlsaudit.sites.models import Site

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
BOUND_S = 60          # the promise: every bad target ends within a minute
FD_SLACK = 2
# 20 requests, 2 at a time, 1 s each: 20 s on a one-thread worker (its two agents run one after the other)
# if every request waited out its timeout; the stall bound ends each agent after 6 s (1 s + 5).
LOAD_PARAMS = {"requests": 20, "concurrency": 2, "timeout_s": 1, "path": "/health"}
HANDSHAKE_PARAMS = {"versions": ["1.3"], "agents_levels": [1], "per_agent": 2}
PROBE_PARAMS = {"runs": 1, "variants": ["https"]}

# (status, error code, words the message must contain) per target; "*" = every path, else per path.
TLS_SILENT = ("failed", "timeout", ["never answers the TLS handshake"])
TRICKLE = ("failed", "timeout", ["sent only", "never finished it", "too slowly"])
NO_TLS_OTHER = ("failed", "no_tls", ["does not speak TLS", "another protocol"])
DONE = ("done", "", [])
PAGE_TIMEOUT = ("failed", "timeout", [f"The page did not finish loading within {PAGE_S} s."])
LOAD_STALLED = ("failed", "stalled", ["Every request to https://localhost:", "timed out",
                                      "a few bytes at a time"])
# A run is bounded as a whole by its organization's maximum duration (MAX_DURATION_S here, see below).
MAX_DURATION_S = 30
RUN_MAX_DURATION = ("failed", "max_duration", [f"maximum duration of {MAX_DURATION_S} s",
                                               "steps that finished are kept"])
EXPECTED = {
    "tarpit": {"*": TLS_SILENT},
    "reset": {"*": ("failed", "connection_failed", ["accepted the connection, then reset it"])},
    "plain_http": {"*": ("failed", "no_tls", ["does not speak TLS", "plain HTTP"])},
    "garbage": {"*": NO_TLS_OTHER},
    "drip": {"*": TRICKLE},
    "drip_record": {"*": TRICKLE},
    "drip_noise": {"*": NO_TLS_OTHER},
    "drip_server_hello": {"*": TRICKLE},
    "trickle_every": {   # real TLS, but one connection in three trickles its ServerHello
        "audit": ("failed", "timeout", ["of our connections", f"still unfinished after {CONNECTION_S} s",
                                        "Nothing was graded"]),
        # the requests (handshakes) that landed on a stalled connection timed out after 1 s (3 s), the others
        # were measured: done, or cut at the run's maximum duration
        "load": [DONE, RUN_MAX_DURATION],
        "handshakes": [DONE, RUN_MAX_DURATION],
        "probe": "either",  # done, or the page's connection was a stalled one: PAGE_TIMEOUT
    },
    "slow_http": {"audit": DONE, "load": LOAD_STALLED, "handshakes": DONE, "probe": PAGE_TIMEOUT},
    "slow_subresource": {"audit": DONE, "load": DONE, "handshakes": DONE, "probe": PAGE_TIMEOUT},
    "big_chain": {"*": ("failed", "tls_handshake_failed", ["certificate chain larger than TLS clients accept"])},
    "wrong_sni": {"*": ("failed", "tls_handshake_failed", ["does not serve localhost", "unrecognized name"])},
    "handshake_then_hang": {
        "audit": DONE,   # TLS is fine: the audit grades it, and says why HSTS was not read
        "load": LOAD_STALLED,
        "handshakes": DONE,
        "probe": PAGE_TIMEOUT,
    },
    "nxdomain": {"*": ("failed", "dns", ["nxdomain.hostile.test does not resolve"])},
    "blackhole": {"*": ("failed", "timeout", ["No answer from 127.0.0.1:", "filtered or the server is down"])},
}


def expected(target: str, path: str):
    cases = EXPECTED[target]
    return cases.get(path, cases.get("*"))


# --- the three paths ----------------------------------------------------------------------------

def wait_finished(row, timeout: float = BOUND_S + 30):
    return waiting.wait_finished(row, timeout, interval=0.1)


def queue_audit(site, user):
    from tlsaudit.audits import services

    return services.queue_audit(site, user=user)[0]


def queue_load(site, user):
    from tlsaudit.loadtests import services

    verify(site)
    return services.queue_run(site, "load", {**LOAD_PARAMS, "scheme": "https"}, user=user)


def queue_handshakes(site, user):
    from tlsaudit.loadtests import services

    verify(site)
    return services.queue_run(site, "handshakes", HANDSHAKE_PARAMS, user=user)


def queue_probe(site, user):
    from tlsaudit.probes import services

    return services.queue_probe(site, PROBE_PARAMS, user=user)


PATHS = {"audit": ("scan", queue_audit, "a_plus_rsa_hsts"),
         "load": ("load", queue_load, "load_no_resumption"),
         "handshakes": ("load", queue_handshakes, "load_no_resumption"),
         "probe": ("browser", queue_probe, "a_plus_rsa_hsts")}


def normal_site(org, tls_lab, lab_name: str) -> Site:
    site, _ = Site.objects.get_or_create(organization=org, hostname="localhost", https_port=tls_lab.port(lab_name),
                                         defaults={"http_port": tls_lab.http_port(lab_name),
                                                   "pinned_ip": "127.0.0.1", "name": "Normal"})
    return site


def run_normal(path: str, org, tls_lab, user):
    _, queue, lab_name = PATHS[path]
    done = wait_finished(queue(normal_site(org, tls_lab, lab_name), user))
    assert done.status == "done", f"the normal {path} after a hostile one failed: {done.error_message}"
    return done


# --- the matrix -----------------------------------------------------------------------------------

# A handshake run's task opens like a load run's (the same pre-flight): the handshake path adds the servers
# that get past it, or were built for this issue.
HANDSHAKE_TARGETS = ("drip_record", "drip_noise", "drip_server_hello", "trickle_every", "slow_http",
                     "slow_subresource", "handshake_then_hang")
CASES = [(target, path) for path in PATHS for target in TARGETS
         if path != "handshakes" or target in HANDSHAKE_TARGETS]


@pytest.mark.parametrize("target, path", CASES)
def test_a_hostile_target_ends_explained_within_a_minute_and_the_worker_goes_on(
        target, path, one_worker, chained, generous_limits, short_deadlines, alice, lab_org, tls_lab, settings,
        tmp_path):
    from tlsaudit.loadtests.models import LoadLimits

    queue_name, queue, _ = PATHS[path]
    LoadLimits.objects.filter(pk=LoadLimits.for_org(lab_org).pk).update(max_duration_s=MAX_DURATION_S)
    worker = one_worker(queue_name)
    # Given a warmed-up worker (its connections open, for a probe its Chromium running): the path's last
    # case left it so, or a normal task does it now
    start = chained.pop(path, None)   # put back only when this case passes: a failed one leaves no baseline
    if start is None or start["worker"] is not worker:
        run_normal(path, lab_org, tls_lab, alice)
        start = {"worker": worker, "browsers": chromium_pids()}
    # Counted now, with the worker consuming again: resuming it sends control messages, whose pooled
    # broker connections live in this process too.
    fds_before, browsers_before = open_fds(), start["browsers"]

    # When a hostile target is queued
    with hostile_target(target, tls_lab.pki, tmp_path, settings) as hostile:
        site = added_site(organization=lab_org, hostname=hostile.hostname, pinned_ip=hostile.pinned_ip,
                                   https_port=hostile.port or 443, http_port=hostile.port or 80, name=target)
        started = time.monotonic()
        row = wait_finished(queue(site, alice))
        elapsed = time.monotonic() - started
        left_open = [] if hostile.port is None else settled(
            lambda: client_sockets_to(hostile.port, hostile.own_sockets), lambda v: not v)
        settings.DNS_RESOLVER = None

    # Then it ends within a minute, in a state that says why, in words a site owner understands
    outcome = expected(target, path)
    if outcome == "either":
        outcome = DONE if row.status == "done" else PAGE_TIMEOUT
    if isinstance(outcome, list):   # the first of the allowed outcomes the row matches, else the first
        outcome = next((o for o in outcome if o[:2] == (row.status, row.error_code)), outcome[0])
    status, code, words = outcome
    print(f"\nhostile {target} via {path}: {elapsed:.1f} s, {row.status} {row.error_code}")  # -s: the figures
    assert elapsed < BOUND_S, f"{target} via {path} took {elapsed:.1f} s"
    assert (row.status, row.error_code) == (status, code), row.error_message
    assert all(word in row.error_message for word in words), row.error_message
    if (target, path) in (("handshake_then_hang", "audit"), ("slow_http", "audit")):
        hsts = row.findings.get(finding_id="hsts.missing")
        # slow_http: cut at the connection's lifetime, or at the audit's 20 s if that comes first
        why = "did not answer our HTTP request" if target == "handshake_then_hang" else "got no complete answer"
        assert hsts.status == "not_tested" and why in hsts.reason, hsts.reason
    assert settled(sslyze_threads, lambda names: not names) == [], "sslyze threads still running"
    # And no connection to it is left open
    assert left_open == [], f"sockets still connected to the hostile port: {left_open}"

    # And the same worker runs the next task normally, holding no more than it did
    run_normal(path, lab_org, tls_lab, alice)
    fds_after = settled(open_fds, lambda fds: len(fds) <= len(fds_before) + FD_SLACK)
    grown = {fd: link for fd, link in fds_after.items() if fds_before.get(fd) != link}
    assert len(fds_after) <= len(fds_before) + FD_SLACK, f"descriptors grew by {len(fds_after) - len(fds_before)}: " \
                                                         f"{grown}"
    if path == "probe":
        from workers.browser.host import HOST

        assert settled(lambda: foreign_chromium(HOST.browser.token), lambda pids: not pids) == [], \
            "a Chromium process of another browser is left"
        browsers_after = settled(chromium_pids, lambda pids: len(pids) <= len(browsers_before))
        assert len(browsers_after) <= len(browsers_before), (browsers_before, browsers_after)
        start["browsers"] = browsers_after
    chained[path] = start
