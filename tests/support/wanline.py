"""The WAN lab's delay line: one process, one TUN device, one emulated link (stdlib only).

Started by tests/support/wan.py (`python wanline.py --rtt-ms 50 ...`); not imported by the suite.

How a packet crosses the link (the kernel's TCP runs unchanged at both ends):
1. Setup claims a link number N (the first free TUN name `tlwN`, N < 256) and adds two /32 routes
   to the root namespace's *local* table, through that device, with source 127.0.0.1:
   127.77.N.2 (the far end, what tests connect to) and 127.77.N.1 (the client's alias, where the
   backend's answers go). They beat the `local 127.0.0.0/8 dev lo` route by prefix length;
   `route_localnet` on the device lets 127/8 packets cross it. Everything lives and dies with the
   device, which the kernel removes when this process exits, however it exits.
2. A client's packet to 127.77.N.2:p leaves through the device and is read here. Its addresses are
   rewritten (source 127.0.0.1 -> 127.77.N.1, destination -> the backend, 127.0.0.1 by default,
   same port); it waits RTT/2 (+ jitter, + serialisation at the bandwidth cap) and is written
   back into the device, so the kernel delivers it to the backend's socket.
3. The backend answers 127.77.N.1, which routes out through the device again: rewritten back
   (source -> 127.77.N.2, destination -> 127.0.0.1), held RTT/2, written back, delivered to the client.
So SYN, SYN-ACK, every ACK and every data segment each cross the delay once per direction: a TCP
connect costs one RTT and slow start, ACK clocking and retransmission behave as on a real path.
Addresses are rewritten statelessly (checksums patched by a constant per direction: RFC 1624).

The loop: with a fixed delay (no jitter, no bandwidth cap) this process execs wanline.c's loop once the
link is set up (compiled on first use into var/wanline/, keyed by the source's hash): the same rewrite,
delay and control in C, with a fifth of the Python loop's user CPU per packet (the system time, the
kernel delivering each packet into TCP, stays: without the link the endpoints pay it). Jitter, a bandwidth cap, no C compiler, or
WANLINE_PYTHON=1 keep the Python loop below. The ready line says which ("loop": "c" or "python").

More far ends (`--hosts K`, the Python loop): link N also stands for the backend at 127.77.N.(2k+2),
k = 1..K-1, each with its own alias 127.77.N.(2k+3), so K addresses (a fleet of sites on many IPs, #27)
share one delay line; the ready line lists them all ("hosts").

Control: one JSON line on stdout when ready ({"host", "client", "device", ...}); afterwards each
`stats` line on stdin is answered by one JSON line of counters; EOF on stdin ends the process.
"""

from __future__ import annotations

import argparse
import array
import collections
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
PR_SET_PDEATHSIG, PR_SET_TIMERSLACK = 1, 29
SUBNET = (127, 77)                 # 127.77.N.0/24 belongs to link N
MAX_HOSTS = 126                    # far ends per link: (far, alias) pairs .2/.1, then .4/.5 ... .252/.253
MAX_LINKS = 256
CLIENT_SIDE = "127.0.0.1"          # the source address clients use through the link (the routes' src)
READ_BATCH = 256                   # packets read per wake-up before due packets are written again
LATENESS_SAMPLES = 200_000         # a ring of how late packets left (µs), for stats
MAX_LEAD_S = 300e-6                # at most this early a wake-up is asked for (see Line.serve)
PROTO_TCP = 6


class SetupError(Exception):
    pass


# --- checksums (RFC 1624: HC' = ~(~HC + ~m + m') summed over the changed 16-bit words) ---------------

def ones_sum(data: bytes) -> int:
    return sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))


def checksum_delta(old: bytes, new: bytes) -> int:
    """What to add (ones' complement) to a checksum when the bytes `old` become `new`."""
    return ones_sum(new) + sum(0xFFFF - int.from_bytes(old[i:i + 2], "big") for i in range(0, len(old), 2))


def patch_checksum(packet: bytearray, offset: int, delta: int) -> None:
    total = (0xFFFF - int.from_bytes(packet[offset:offset + 2], "big")) + delta
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    packet[offset:offset + 2] = (0xFFFF - total).to_bytes(2, "big")


class Rewrite:
    """One direction's address swap: packets whose (src, dst) is `match` get `replace`."""

    def __init__(self, match: bytes, replace: bytes):
        self.match, self.replace = match, replace
        self.delta = checksum_delta(match, replace)  # same for the IP header and the TCP pseudo-header

    def apply(self, packet: bytearray) -> None:
        header = (packet[0] & 0x0F) * 4
        packet[12:20] = self.replace
        patch_checksum(packet, 10, self.delta)
        patch_checksum(packet, header + 16, self.delta)


# --- one direction of the link ---------------------------------------------------------------------

class Direction:
    """A FIFO of packets with their release times; order is kept, so the head is always due first."""

    def __init__(self, name: str, one_way_s: float, jitter_s: float, bandwidth_bps: float | None,
                 queue_bytes: int, rng: random.Random):
        self.name = name
        self.one_way_s, self.jitter_s = one_way_s, jitter_s
        self.bandwidth_bps, self.queue_bytes = bandwidth_bps, queue_bytes
        self.rng = rng
        self.fifo: collections.deque = collections.deque()
        self.last_release = 0.0
        self.wire_free_at = 0.0        # bandwidth cap: when the last accepted packet is fully serialised
        self.packets = self.bytes = self.dropped = self.max_fifo = 0

    def admit(self, packet: bytearray, now: float) -> None:
        """1. Serialise behind earlier packets at the cap (tail drop past `queue_bytes` waiting).
        2. Add the one-way delay and a jitter draw. 3. Never before the previous packet (order kept)."""
        start = now
        if self.bandwidth_bps:
            backlog_bytes = max(0.0, self.wire_free_at - now) * self.bandwidth_bps / 8
            if backlog_bytes + len(packet) > self.queue_bytes:
                self.dropped += 1
                return
            self.wire_free_at = max(self.wire_free_at, now) + len(packet) * 8 / self.bandwidth_bps
            start = self.wire_free_at
        delay = self.one_way_s
        if self.jitter_s:
            delay = max(0.0, delay + self.rng.uniform(-self.jitter_s, self.jitter_s))
        release = max(start + delay, self.last_release)
        self.last_release = release
        self.fifo.append((release, packet))
        self.packets += 1
        self.bytes += len(packet)
        if len(self.fifo) > self.max_fifo:
            self.max_fifo = len(self.fifo)

    def counters(self) -> dict:
        return {"packets": self.packets, "bytes": self.bytes, "dropped": self.dropped, "max_fifo": self.max_fifo,
                "queued": len(self.fifo)}


# --- setup -----------------------------------------------------------------------------------------

def run_ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def open_tun(name: str) -> int | None:
    """The TUN device `name`, created for this process; None if another process holds that name."""
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SetupError(f"cannot open /dev/net/tun ({exc.strerror}): the WAN lab needs TUN and root") from None
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EBUSY, errno.EEXIST, errno.EINVAL):
            return None
        raise SetupError(f"TUNSETIFF {name}: {exc.strerror} (the WAN lab needs CAP_NET_ADMIN)") from None
    return fd


def write_sysctl(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def pairs(hosts: int) -> list[tuple[int, int]]:
    """(far end, alias) last octets of each of a link's `hosts` addresses."""
    return [(2, 1)] + [(2 * k + 2, 2 * k + 3) for k in range(1, hosts)]


def claim_link(mtu: int, hosts: int = 1) -> tuple[int, int, str]:
    """1. Take the first free `tlwN` (the TUN name is the lock: no two processes get the same N).
    2. Bring it up with IPv6 off and route_localnet on. 3. Route each far end and alias through it."""
    start = os.getpid() % MAX_LINKS  # spread concurrent labs (other worktrees) over the range
    for step in range(MAX_LINKS):
        n = (start + step) % MAX_LINKS
        name = f"tlw{n}"
        fd = open_tun(name)
        if fd is None:
            continue
        ipv6 = f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6"
        if os.path.exists(ipv6):
            write_sysctl(ipv6, "1")  # no router solicitations or MLD through the delay line
        write_sysctl(f"/proc/sys/net/ipv4/conf/{name}/route_localnet", "1")
        steps = [("link", "set", "dev", name, "mtu", str(mtu), "up")]
        steps += [("route", "add", "table", "local", f"{SUBNET[0]}.{SUBNET[1]}.{n}.{host}/32", "dev", name,
                   "src", CLIENT_SIDE) for pair in pairs(hosts) for host in pair]
        for command in steps:
            done = run_ip(*command)
            if done.returncode != 0:
                os.close(fd)
                if "File exists" in done.stderr:
                    break  # a stale route of someone else's: try the next N
                raise SetupError(f"ip {' '.join(command)}: {done.stderr.strip()}")
        else:
            return n, fd, name
    raise SetupError(f"no free WAN link: tlw0..tlw{MAX_LINKS - 1} all taken")


def quit_with_parent() -> None:
    """SIGTERM if the parent dies (stdin's EOF says so too; this also covers a stuck parent)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    libc.prctl(PR_SET_TIMERSLACK, 1)  # wake-ups within ~1 µs of the timeout, not the default 50 µs


def use_realtime_priority() -> bool:
    """SCHED_FIFO (lowest RT priority): on a busy host the line's wake-ups stay on time. The kernel's
    RT throttling (95 %) keeps the machine usable even if this loop ever spun."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        return True
    except (OSError, AttributeError):
        return False


# --- the loop --------------------------------------------------------------------------------------

class Line:
    def __init__(self, fd: int, n: int, backend: str, args):
        self.fd = fd
        rng = random.Random(args.seed)
        one_way = args.rtt_ms / 2000.0
        jitter = args.jitter_ms / 1000.0
        client = bytes(int(x) for x in CLIENT_SIDE.split("."))
        back = bytes(int(x) for x in backend.split("."))
        self.outbound = Direction("to_server", one_way, jitter, args.bandwidth_bps, args.queue_bytes, rng)
        self.inbound = Direction("to_client", one_way, jitter, args.bandwidth_bps, args.queue_bytes, rng)
        self.routes = {}
        for far_octet, alias_octet in pairs(args.hosts):
            far, alias = bytes([*SUBNET, n, far_octet]), bytes([*SUBNET, n, alias_octet])
            self.routes[client + far] = (Rewrite(client + far, alias + back), self.outbound)
            self.routes[back + alias] = (Rewrite(back + alias, far + client), self.inbound)
        self.ignored = 0                # not IPv4 TCP between the client and the far end
        self.lateness = array.array("d", bytes(8 * LATENESS_SAMPLES))
        self.late_count = 0
        self.lead = 0.0                 # how late select() wakes up, on average (s): asked for that early

    def read_packets(self, now: float) -> None:
        routes, fd = self.routes, self.fd
        for _ in range(READ_BATCH):
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            if len(data) < 40 or data[0] >> 4 != 4 or data[9] != PROTO_TCP:
                self.ignored += 1
                continue
            route = routes.get(data[12:20])
            if route is None:
                self.ignored += 1
                continue
            packet = bytearray(data)
            route[0].apply(packet)
            route[1].admit(packet, now)

    def write_due(self, direction: Direction) -> None:
        fifo, fd = direction.fifo, self.fd
        now = time.perf_counter()
        due = now + self.lead
        while fifo and fifo[0][0] <= due:
            release, packet = fifo.popleft()
            try:
                os.write(fd, packet)
            except OSError:
                direction.dropped += 1
                continue
            self.lateness[self.late_count % LATENESS_SAMPLES] = (now - release) * 1e6
            self.late_count += 1

    def next_wake(self) -> float | None:
        """When to wake for the next release: `lead` early, as select() wakes that late on average."""
        heads = [d.fifo[0][0] for d in (self.outbound, self.inbound) if d.fifo]
        return min(heads) - self.lead if heads else None

    def learn_lead(self, wake: float) -> None:
        """A timed-out select() woke `late` after it was asked to: keep a slow average, bounded."""
        late = time.perf_counter() - wake
        self.lead = min(MAX_LEAD_S, max(0.0, self.lead + 0.05 * (late - self.lead)))

    def stats(self) -> dict:
        count = min(self.late_count, LATENESS_SAMPLES)
        late = sorted(self.lateness[:count])

        def pct(p: float) -> float | None:
            return round(late[min(count - 1, int(p * count))], 1) if count else None

        return {"to_server": self.outbound.counters(), "to_client": self.inbound.counters(), "ignored": self.ignored,
                "late_us": {"p50": pct(0.5), "p99": pct(0.99), "max": round(late[-1], 1) if count else None,
                            "samples": count}}

    def serve(self, control: int) -> None:
        """Until stdin closes: wait for packets or the next release, read, write what is due."""
        watched = [self.fd, control]
        while True:
            wake = self.next_wake()
            timeout = None if wake is None else max(0.0, wake - time.perf_counter())
            ready, _, _ = select.select(watched, [], [], timeout)
            if not ready and timeout:
                self.learn_lead(wake)
            if self.fd in ready:
                # Woken from a wait, a packet is read `lead` after it arrived (the same wake-up
                # latency as a timer's): date it back, so it spends the one-way delay on the link.
                arrived = time.perf_counter() - (self.lead if timeout is None or timeout > self.lead else 0.0)
                self.read_packets(arrived)
            self.write_due(self.outbound)
            self.write_due(self.inbound)
            if control in ready and not self.answer(control):
                return

    def answer(self, control: int) -> bool:
        data = os.read(control, 4096)
        if not data:
            return False
        for _ in data.decode(errors="replace").split("\n")[:-1]:
            print(json.dumps(self.stats()), flush=True)
        return True


def parse_args(argv: list[str]):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, required=True)
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +/- per packet and direction")
    parser.add_argument("--bandwidth-bps", type=float, default=None, help="cap per direction, bits/s")
    parser.add_argument("--queue-bytes", type=int, default=1 << 20, help="tail drop past this backlog (with a cap)")
    parser.add_argument("--backend", default="127.0.0.1", help="IPv4 address the far end stands for")
    parser.add_argument("--hosts", type=int, default=1, help=f"far-end addresses of the link (1..{MAX_HOSTS})")
    parser.add_argument("--mtu", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--no-realtime", action="store_true")
    args = parser.parse_args(argv)
    if args.rtt_ms < 0 or args.jitter_ms < 0 or (args.bandwidth_bps is not None and args.bandwidth_bps <= 0):
        parser.error("rtt and jitter must be >= 0 and bandwidth > 0")
    if not 1 <= args.hosts <= MAX_HOSTS:
        parser.error(f"hosts must be between 1 and {MAX_HOSTS}")
    if not 576 <= args.mtu <= 65535:
        parser.error("mtu must be between 576 and 65535")
    return args


def c_loop() -> str | None:
    """wanline.c's loop, compiled once per version of its source (None: no compiler, or it failed)."""
    source = Path(__file__).with_name("wanline.c")
    binary = (Path(__file__).resolve().parents[2] / "var" / "wanline"
              / f"wanline-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}")
    if binary.exists():
        return str(binary)
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    binary.parent.mkdir(parents=True, exist_ok=True)
    building = binary.with_name(f"{binary.name}.{os.getpid()}")
    done = subprocess.run([compiler, "-O2", "-o", str(building), str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"wanline.c did not compile, using the Python loop: {done.stderr[-500:]}", file=sys.stderr)
        return None
    os.replace(building, binary)  # atomic: concurrent labs never run a half-written binary
    return str(binary)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    quit_with_parent()
    fixed_delay = (not args.jitter_ms and args.bandwidth_bps is None and args.hosts == 1
                   and os.environ.get("WANLINE_PYTHON") != "1")
    binary = c_loop() if fixed_delay else None
    try:
        n, fd, device = claim_link(args.mtu, args.hosts)
    except SetupError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 2
    realtime = not args.no_realtime and use_realtime_priority()
    line = Line(fd, n, args.backend, args)
    print(json.dumps({"host": f"{SUBNET[0]}.{SUBNET[1]}.{n}.2", "client": f"{SUBNET[0]}.{SUBNET[1]}.{n}.1",
                      "hosts": [f"{SUBNET[0]}.{SUBNET[1]}.{n}.{far}" for far, _ in pairs(args.hosts)],
                      "device": device, "pid": os.getpid(), "realtime": realtime,
                      "loop": "c" if binary else "python"}), flush=True)
    if binary:  # same pid, device, routes, priority and parent-death signal: only the loop changes
        os.set_inheritable(fd, True)
        os.execv(binary, [binary, str(fd), repr(args.rtt_ms / 2000.0), CLIENT_SIDE, f"{SUBNET[0]}.{SUBNET[1]}.{n}.2",
                          f"{SUBNET[0]}.{SUBNET[1]}.{n}.1", args.backend])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    line.serve(sys.stdin.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
