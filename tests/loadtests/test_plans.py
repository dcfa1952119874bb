"""Steps and agent shares of a run (pure functions, no database)."""

import pytest

from tlsaudit.loadtests.plans import agent_shares, handshake_steps, split, sweep_steps

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


def test_a_sweep_interleaves_http_and_https_per_level_and_mode():
    steps = sweep_steps({"levels": [1, 20], "requests": 50, "modes": ["new", "keepalive"], "path": "/"}, PORTS)
    assert [(s["scheme"], s["level"], s["mode"], s["port"]) for s in steps] == [
        ("http", 1, "new", 8080), ("https", 1, "new", 8443), ("http", 1, "keepalive", 8080),
        ("https", 1, "keepalive", 8443), ("http", 20, "new", 8080), ("https", 20, "new", 8443),
        ("http", 20, "keepalive", 8080), ("https", 20, "keepalive", 8443)]


def test_handshake_cells_skip_a_version_without_suites_and_add_resumed_cells():
    params = {"versions": ["1.2", "1.3"], "agents_levels": [10, 25], "per_agent": 10, "resume": True}
    steps = handshake_steps(params, {"1.2": [], "1.3": ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"]})
    assert [(s["version"], s["suite"], s["agents"], s["resume"]) for s in steps] == [
        ("1.3", "TLS_AES_128_GCM_SHA256", 10, False), ("1.3", "TLS_AES_256_GCM_SHA384", 10, False),
        ("1.3", "TLS_AES_128_GCM_SHA256", 25, False), ("1.3", "TLS_AES_256_GCM_SHA384", 25, False),
        ("1.3", "TLS_AES_128_GCM_SHA256", 10, True)]
    assert agent_shares(steps[2], 2) == [{"agents": 13}, {"agents": 12}]
