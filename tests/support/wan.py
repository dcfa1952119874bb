"""The latency lab: local servers seen through an emulated WAN link (RTT, jitter, bandwidth cap).

This kernel has no netem, so the delay is a userspace delay line at packet level
(tests/support/wanline.py: a TUN device, every packet of both directions held for RTT/2):

    with start_wan(rtt_ms=50) as link:            # link.host is 127.77.N.2 ("N" is the link number)
        sock = socket.create_connection((link.host, port))   # reaches 127.0.0.1:port, 1 RTT later

`link.host` stands for the backend address (127.0.0.1 unless `backend=` says otherwise) on every
port. TCP's own handshake crosses the link too, so a connect costs one RTT as on a real network.
Pytest: the `wan` fixture (`wan(50)` -> a WanLink closed after the test) and `wan_links` (one
session-wide link per RTT in LAB_RTTS_MS, for the nginx TLS lab: `wan_links[50].host` +
`tls_lab.port(name)`). Bench scripts use `start_wan` the same way.

Needs root (CAP_NET_ADMIN) and /dev/net/tun; the CI and development machines run as root. Traffic
stays on 127.0.0.0/8: the link's addresses are 127.77.N.1 and 127.77.N.2.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["LAB_RTTS_MS", "WanError", "WanLink", "start_wan", "wan", "wan_links"]

LINE = Path(__file__).with_name("wanline.py")
LAB_RTTS_MS = (0, 20, 50, 150)
READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0


class WanError(RuntimeError):
    """The link could not be set up (no TUN, not root, no free link) or its process died."""


@dataclass
class WanLink:
    """A running delay line. `host` replaces the backend's address in URLs and connects."""
    rtt_ms: float
    jitter_ms: float
    bandwidth_bps: float | None
    backend: str
    host: str
    client: str
    device: str
    realtime: bool
    process: subprocess.Popen = field(repr=False)
    loop: str = "python"        # "c": wanline.c's loop (a fixed delay), else wanline.py's
    hosts: list[str] = field(default_factory=list)   # every far end (start_wan's `hosts`): `host` first

    def address(self, port: int) -> tuple[str, int]:
        return self.host, port

    def stats(self) -> dict:
        """Counters of the line: packets/bytes/drops per direction, how late packets left (µs)."""
        self._check_alive()
        self.process.stdin.write(b"stats\n")
        self.process.stdin.flush()
        line = read_line(self.process, READY_TIMEOUT_S)
        return json.loads(line)

    def close(self) -> None:
        """EOF on the line's stdin ends it; the kernel then removes its device and routes."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        for stream in (self.process.stdin, self.process.stdout):
            if stream and not stream.closed:
                stream.close()

    def is_gone(self) -> bool:
        """True once the process has exited and its device is removed (the routes go with it)."""
        return self.process.poll() is not None and not Path(f"/sys/class/net/{self.device}").exists()

    def _check_alive(self) -> None:
        if self.process.poll() is not None:
            raise WanError(f"the delay line of {self.host} exited with {self.process.returncode}")

    def __enter__(self) -> WanLink:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_line(process: subprocess.Popen, timeout_s: float) -> bytes:
    """One line of the child's stdout within `timeout_s` (the pipe is ours alone: no partial reads)."""
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    if not ready:
        raise WanError(f"the delay line did not answer within {timeout_s:.0f} s")
    line = process.stdout.readline()
    if not line:
        raise WanError(f"the delay line exited with {process.wait()}")
    return line


def start_wan(rtt_ms: float, jitter_ms: float = 0.0, bandwidth_bps: float | None = None, *,
              backend: str = "127.0.0.1", mtu: int = 1500, queue_bytes: int = 1 << 20,
              seed: int | None = None, realtime: bool = True, hosts: int = 1) -> WanLink:
    """Start a delay line (its own process) and return once its routes are in place.

    rtt_ms: added round trip (half each way); jitter_ms: uniform +/- per packet and direction,
    order kept; bandwidth_bps: cap per direction (tail drop past `queue_bytes` waiting); mtu: of
    the link (1500 as on Ethernet, so slow start counts real segments); hosts: how many addresses
    stand for the backend behind the one line (`link.hosts`; up to 126), as a fleet's many IPs.
    """
    command = [sys.executable, str(LINE), "--rtt-ms", str(rtt_ms), "--jitter-ms", str(jitter_ms),
               "--backend", backend, "--mtu", str(mtu), "--queue-bytes", str(queue_bytes), "--hosts", str(hosts)]
    if bandwidth_bps is not None:
        command += ["--bandwidth-bps", str(bandwidth_bps)]
    if seed is not None:
        command += ["--seed", str(seed)]
    if not realtime:
        command.append("--no-realtime")
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                               env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        ready = json.loads(read_line(process, READY_TIMEOUT_S))
    except BaseException:
        process.kill()
        process.wait()
        raise
    if "error" in ready:
        process.wait(timeout=STOP_TIMEOUT_S)
        raise WanError(ready["error"])
    return WanLink(rtt_ms=rtt_ms, jitter_ms=jitter_ms, bandwidth_bps=bandwidth_bps, backend=backend,
                   host=ready["host"], client=ready["client"], device=ready["device"],
                   realtime=ready["realtime"], process=process, loop=ready.get("loop", "python"),
                   hosts=ready.get("hosts", [ready["host"]]))


@pytest.fixture
def wan():
    """wan(rtt_ms, jitter_ms=0, bandwidth_bps=None, **options) -> WanLink; every link closed (and
    checked gone: process exited, device removed) when the test ends."""
    links: list[WanLink] = []

    def make(rtt_ms: float, jitter_ms: float = 0.0, bandwidth_bps: float | None = None, **options) -> WanLink:
        link = start_wan(rtt_ms, jitter_ms, bandwidth_bps, **options)
        links.append(link)
        return link

    yield make
    for link in links:
        link.close()
    stuck = [link.device for link in links if not wait_gone(link)]
    assert not stuck, f"delay lines not gone after the test: {stuck}"


@pytest.fixture(scope="session")
def wan_links():
    """{rtt_ms: WanLink} for 0, 20, 50 and 150 ms, to 127.0.0.1 (so to the nginx TLS lab on every port)."""
    links = {}
    try:
        for rtt in LAB_RTTS_MS:
            links[rtt] = start_wan(rtt)
        yield links
    finally:
        for link in links.values():
            link.close()


def wait_gone(link: WanLink, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while not link.is_gone():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def main() -> None:
    """`python -m tests.support.wan 50`: a link until Ctrl-C, for trying tools by hand."""
    rtt = float(sys.argv[1]) if len(sys.argv) > 1 else 50.0
    with start_wan(rtt) as link:
        print(f"{link.host} is 127.0.0.1 behind {rtt:g} ms RTT (device {link.device}); Ctrl-C to stop")
        try:
            link.process.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
