"""Telling a run's dead process from a live one (tlsaudit.core.runners), with real processes."""

import os
import subprocess
import sys

from tlsaudit.core import runners

SLEEPER = [sys.executable, "-c", "import sys; sys.stdin.read()"]


def identity_of(pid: int) -> str:
    return f"{runners.pid_space()} {pid} {runners.start_time(pid)}"


def test_it_records_this_process_in_its_pid_space():
    host, boot, namespace, pid, started = runners.this_process().split(" ")
    assert (int(pid), int(started)) == (os.getpid(), runners.start_time(os.getpid()))
    assert namespace.startswith("pid:[") and len(boot) == 36 and host


def test_a_live_process_is_not_gone_and_a_dead_one_is():
    with subprocess.Popen(SLEEPER, stdin=subprocess.PIPE) as process:
        runner = identity_of(process.pid)
        assert not runners.is_gone(runner)
        process.kill()
        process.wait()
    assert runners.is_gone(runner)


def test_a_zombie_is_gone():
    # Dead, not yet collected by its parent: the state a SIGKILLed pool child is in until billiard reaps it.
    process = subprocess.Popen(SLEEPER, stdin=subprocess.PIPE)
    runner = identity_of(process.pid)
    process.kill()
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # it has exited; leave it unreaped
    try:
        assert runners.is_gone(runner)
    finally:
        process.wait()


def test_a_pid_taken_by_a_younger_process_is_gone():
    # The pid was recycled: same number, another start time.
    this = runners.this_process().rsplit(" ", 1)[0]
    assert runners.is_gone(f"{this} {runners.start_time(os.getpid()) - 1}")


def test_it_cannot_tell_about_a_process_outside_its_pid_space_nor_a_malformed_record():
    pid, started = os.getpid(), runners.start_time(os.getpid())
    for runner in ("", "garbage", f"other-host 0 pid:[1] {pid + 10**7} 1", f"{runners.pid_space()} x y"):
        assert not runners.is_gone(runner), runner
    assert not runners.is_gone(f"{runners.pid_space()} {pid} {started}")
