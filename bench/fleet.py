"""A fleet of N local TLS servers for the throughput and memory benchmarks: one nginx, N server blocks.

The configurations are the graded fixtures of the TLS lab (tests/support/tls_servers.py), in a mix
weighted towards A/A+ with a tail of B, C, T, M and F (`MIX`, our guess at a typical portfolio, not a
survey), interleaved so that neighbours in the queue differ. Every server keeps its fixture's expected
grade, so a benchmark can check that every audit it timed was also right. One leaf certificate per
fixture is shared by its copies (issuing 100 RSA keys would take longer than the audits); the
incomplete-chain leaf's AIA URL points at the first copy's HTTP port, and every HTTP block serves the
intermediate there.

    with start_fleet(100) as fleet:
        for server in fleet.servers: ...   # server.name, server.fixture, server.port, server.http_port
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from tests.support.pki import TestPki, write_dh_params, write_file
from tests.support.tls_servers import (
    FIXTURES,
    ServerSpec,
    free_ports,
    issue_leaf_for,
    launch_nginx,
    nginx_conf,
    server_blocks,
    tls_directives,
    wait_for_ports,
)

# fixture -> weight (they add up to 100: with 100 servers, the weight is the number of copies).
MIX: dict[str, int] = {
    "a_plus_rsa_hsts": 12, "a_tls12_13_no_hsts": 12, "b_tls10_enabled": 10, "a_minus_tls12_only": 8,
    "a_plus_ecdsa_tls13_hsts": 6, "a_hsts_short": 6, "b_incomplete_chain": 5, "t_expired": 5,
    "a_plus_ecdsa_p384_only": 4, "a_plus_rsa_dhe2048_hsts": 4, "b_cbc_only": 4, "t_self_signed": 4,
    "a_minus_hsts_zero": 3, "b_no_forward_secrecy": 3, "b_dh1024": 3, "m_wrong_name": 3,
    "b_rsa1024": 2, "c_tls10_only": 2, "c_tls10_tls11": 2, "f_null_cipher": 1, "f_anon_ecdh": 1,
}


@dataclass(frozen=True)
class FleetServer:
    name: str          # "b_tls10_enabled-007"
    fixture: str       # "b_tls10_enabled"
    port: int
    http_port: int

    @property
    def spec(self) -> ServerSpec:
        return FIXTURES[self.fixture]


def allocate(count: int, mix: dict[str, int] = MIX) -> dict[str, int]:
    """Copies per fixture for `count` servers, proportional to the weights (largest remainder;
    ties go to the earlier fixture, so the result is deterministic)."""
    if count < 1:
        raise ValueError(f"a fleet needs at least one server, got {count}")
    total = sum(mix.values())
    exact = {name: count * weight / total for name, weight in mix.items()}
    copies = {name: int(share) for name, share in exact.items()}
    by_remainder = sorted(mix, key=lambda name: (-(exact[name] - copies[name]), list(mix).index(name)))
    for name in by_remainder[:count - sum(copies.values())]:
        copies[name] += 1
    return {name: n for name, n in copies.items() if n}


def plan_fleet(count: int, mix: dict[str, int] = MIX) -> list[tuple[str, str]]:
    """(server name, fixture) for `count` servers, round-robin over the fixtures so neighbours differ."""
    remaining = allocate(count, mix)
    plan, index = [], {name: 0 for name in remaining}
    while len(plan) < count:
        for fixture in list(remaining):
            if remaining[fixture]:
                index[fixture] += 1
                plan.append((f"{fixture}-{index[fixture]:03d}", fixture))
                remaining[fixture] -= 1
    return plan


def fleet_servers(plan: list[tuple[str, str]], ports: list[int]) -> list[FleetServer]:
    if len(ports) != 2 * len(plan) or len(set(ports)) != len(ports):
        raise ValueError(f"need {2 * len(plan)} distinct ports for {len(plan)} servers, got {len(set(ports))}")
    return [FleetServer(name, fixture, ports[2 * i], ports[2 * i + 1]) for i, (name, fixture) in enumerate(plan)]


def fleet_conf(servers: list[FleetServer], tls_lines: dict[str, list[str]], run_dir: Path, workers: int) -> str:
    """nginx.conf text: an HTTPS and an HTTP block per server (the lab's blocks, renamed per copy)."""
    blocks = [server_blocks(replace(s.spec, name=s.name), s.port, s.http_port, tls_lines[s.fixture], run_dir)
              for s in servers]
    return nginx_conf(run_dir, blocks, workers)


def issue_leaves(pki: TestPki, servers: list[FleetServer], dh_files: dict[str, Path]) -> dict[str, list[str]]:
    """One leaf per fixture in the fleet; returns the TLS directives per fixture."""
    first_http_port: dict[str, int] = {}
    for s in servers:
        first_http_port.setdefault(s.fixture, s.http_port)
    lines = {}
    for fixture, port in first_http_port.items():
        leaf = issue_leaf_for(pki, FIXTURES[fixture], f"http://127.0.0.1:{port}/ca/intermediate.der")
        lines[fixture] = tls_directives(FIXTURES[fixture], leaf, dh_files)
    return lines


class Fleet:
    def __init__(self, run_dir: Path, pki: TestPki, servers: list[FleetServer], process):
        self.directory, self.pki, self.servers, self.process = run_dir, pki, servers, process
        self.ca_file = pki.ca_file

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_fleet(count: int, workers: int = 1, attempts: int = 3) -> Fleet:
    """Write the PKI and nginx.conf for `count` servers, start nginx, wait until every port accepts."""
    run_dir = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    (run_dir / "logs").mkdir()
    run_dir.chmod(0o755)  # as root, nginx workers run as "nobody" and must read the AIA file
    pki = TestPki(run_dir / "pki")
    (run_dir / "pki").chmod(0o755)
    dh_files = {g: write_dh_params(run_dir / "pki", g) for g in ("dh1024", "dh2048")}
    plan = plan_fleet(count)
    for attempt in range(1, attempts + 1):
        servers = fleet_servers(plan, free_ports(2 * count))
        conf = write_file(run_dir / "nginx.conf",
                          fleet_conf(servers, issue_leaves(pki, servers, dh_files), run_dir, workers).encode())
        process = launch_nginx(run_dir, conf)
        try:
            wait_for_ports(process, [p for s in servers for p in (s.port, s.http_port)], run_dir / "error.log", 20)
            return Fleet(run_dir, pki, servers, process)
        except RuntimeError:
            process.kill()
            process.wait()
            if attempt == attempts:
                shutil.rmtree(run_dir, ignore_errors=True)
                raise
    raise AssertionError("unreachable")
