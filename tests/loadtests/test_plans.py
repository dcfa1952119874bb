"""Steps and agent shares of a run (pure functions, no database)."""

import pytest

from tlsaudit.loadtests.plans import agent_shares, handshake_steps, load_steps, split, sweep_steps

PORTS = {"http": 8080, "https": 8443}


@pytest.mark.parametrize("total, parts, shares", [(5, 2, [3, 2]), (1, 4, [1]), (100, 3, [34, 33, 33])])
def test_split_gives_near_equal_positive_shares(total, parts, shares):
    assert split(total, parts) == shares and sum(shares) == total


def test_each_agent_runs_no_more_connections_than_requests():
    for n, c in ((3, 3), (5, 4), (20, 7), (100, 100)):
        step = {"engine": "load", "level": c, "requests": n}
        shares = agent_shares(step, 3)
        assert sum(s["concurrency"] for s in shares) == c and sum(s["requests"] for s in shares) == n
        assert all(s["requests"] >= s["concurrency"] >= 1 for s in shares)


def test_a_sweep_warms_up_then_interleaves_http_and_https_in_rounds_alternating_which_goes_first():
    steps = sweep_steps({"levels": [1, 20], "requests": 50, "modes": ["new", "keepalive"], "path": "/",
                         "repeats": 2}, PORTS)
    warmups = [s for s in steps if s["warmup"]]
    assert [(s["scheme"], s["level"], s["mode"], s["requests"]) for s in warmups] == [
        ("http", 10, "new", 50), ("https", 10, "new", 50), ("http", 10, "keepalive", 50),
        ("https", 10, "keepalive", 50)]
    assert steps[:4] == warmups and all("warm-up (discarded)" in s["label"] for s in warmups)
    assert [(s["repeat"], s["scheme"], s["level"], s["mode"], s["port"]) for s in steps[4:]] == [
        (0, "http", 1, "new", 8080), (0, "https", 1, "new", 8443),
        (0, "http", 1, "keepalive", 8080), (0, "https", 1, "keepalive", 8443),
        (0, "http", 20, "new", 8080), (0, "https", 20, "new", 8443),
        (0, "http", 20, "keepalive", 8080), (0, "https", 20, "keepalive", 8443),
        (1, "https", 1, "new", 8443), (1, "http", 1, "new", 8080),
        (1, "https", 1, "keepalive", 8443), (1, "http", 1, "keepalive", 8080),
        (1, "https", 20, "new", 8443), (1, "http", 20, "new", 8080),
        (1, "https", 20, "keepalive", 8443), (1, "http", 20, "keepalive", 8080)]
    assert steps[-1]["label"] == "HTTP c=20 n=50 (keep-alive), repeat 2/2"


def test_a_load_test_warms_up_with_at_most_its_own_concurrency_and_requests():
    steps = load_steps({"scheme": "https", "requests": 30, "concurrency": 4, "keepalive": True, "path": "/",
                        "repeats": 3}, PORTS)
    assert [(s["warmup"], s["repeat"], s["level"], s["requests"], s["mode"]) for s in steps] == [
        (True, 0, 4, 30, "keepalive"), (False, 0, 4, 30, "keepalive"), (False, 1, 4, 30, "keepalive"),
        (False, 2, 4, 30, "keepalive")]


def test_handshake_cells_skip_a_version_without_suites_and_add_resumed_cells():
    params = {"versions": ["1.2", "1.3"], "agents_levels": [10, 25], "per_agent": 10, "resume": True}
    steps = handshake_steps(params, {"1.2": [], "1.3": ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"]})
    assert [(s["version"], s["suite"], s["agents"], s["per_agent"], s["warmup"]) for s in steps[:1]] == [
        ("1.3", "TLS_AES_128_GCM_SHA256", 2, 5, True)]
    assert [(s["version"], s["suite"], s["agents"], s["resume"]) for s in steps[1:]] == [
        ("1.3", "TLS_AES_128_GCM_SHA256", 10, False), ("1.3", "TLS_AES_256_GCM_SHA384", 10, False),
        ("1.3", "TLS_AES_128_GCM_SHA256", 25, False), ("1.3", "TLS_AES_256_GCM_SHA384", 25, False),
        ("1.3", "TLS_AES_128_GCM_SHA256", 10, True)]
    assert agent_shares(steps[3], 2) == [{"agents": 13}, {"agents": 12}]


def test_handshake_rounds_alternate_which_version_goes_first():
    params = {"versions": ["1.2", "1.3"], "agents_levels": [10], "per_agent": 10, "repeats": 3}
    steps = handshake_steps(params, {"1.2": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
                                     "1.3": ["TLS_AES_128_GCM_SHA256"]})
    assert [(s["repeat"], s["version"]) for s in steps if not s["warmup"]] == [
        (0, "1.2"), (0, "1.3"), (1, "1.3"), (1, "1.2"), (2, "1.2"), (2, "1.3")]
