"""`python -m workers.supervised CMD ...`: run CMD in a process group of its own and hand it SIGTERM and SIGINT.

`make run`'s honcho ends each Procfile entry by signalling the entry's whole process group. A Celery
worker's pool children are in that group, so they died of the signal before their master could stop
them, and the master logged each one as an error ("exited with 'signal 15 (SIGTERM)'"), which is what a
user saw after every Ctrl-C. Signalled alone, the master starts its warm shutdown and stops its pool
itself. CMD dies with this process if it is killed outright (honcho's SIGKILL after its 5 s grace, which
a Celery worker on the filesystem broker often needs: its pool then dies with it, silently, and a task
it was running is delivered again at the next start), so nothing is left behind. SIGHUP and SIGQUIT
are not passed on: they end this process, and so CMD.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int):
    """For the child, before exec: be killed when this process dies, and not start at all if it already has."""
    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:   # died between fork and prctl: the signal will never come
            os._exit(1)
    return arm


def exit_status(returncode: int) -> int:
    """The shell's convention: a child ended by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m workers.supervised COMMAND [ARG ...]", file=sys.stderr)
        return 2
    started: list[subprocess.Popen] = []
    early: list[int] = []

    def forward(received: int, _frame) -> None:
        if started:
            started[0].send_signal(received)
        else:                      # before the child exists: passed on as soon as it does
            early.append(received)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    child = subprocess.Popen(argv, process_group=0, preexec_fn=die_with_parent(os.getpid()))
    started.append(child)
    for received in early:
        child.send_signal(received)
    return exit_status(child.wait())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
