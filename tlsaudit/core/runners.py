"""Which operating-system process runs a claimed row, and whether that process still exists.

A claim records `this_process()`: the host, its boot, the pid namespace, the pid and the process's
start time. Another process that sees the same pid namespace on the same boot of the same host can
then tell for certain that the run's process is gone (no such pid, a zombie, or the pid reused by a
younger process): `is_gone`. From anywhere else (another machine, another container) it cannot tell,
and only the heartbeat's lease decides. Linux only (/proc); elsewhere nothing is recorded.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

PROC = Path("/proc")


def this_process() -> str:
    """"host boot-id pid-namespace pid start-time" of the calling process, or "" without /proc."""
    pid = os.getpid()
    space, started = pid_space(), start_time(pid)
    return f"{space} {pid} {started}" if space and started is not None else ""


def is_gone(runner: str) -> bool:
    """True only when `runner` is certainly dead: recorded in this pid space and no longer there.
    False while it lives, and whenever this process cannot see its pid space."""
    parts = runner.rsplit(" ", 2)
    if len(parts) != 3 or parts[0] != pid_space() or not parts[1].isdigit():
        return False
    return start_time(int(parts[1])) != int(parts[2])


def pid_space() -> str:
    """The host, its boot and the pid namespace: pids mean the same process only within one."""
    try:
        boot = (PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink(PROC / "self/ns/pid")
    except OSError:
        return ""
    return f"{socket.gethostname()} {boot} {namespace}"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when it is gone or a zombie (dead,
    waiting for its parent to collect it)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    fields = stat.rpartition(")")[2].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])
