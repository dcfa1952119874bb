"""`python -m workers.supervised CMD ...`: run CMD in a process group of its own and hand it SIGTERM and SIGINT.

`make run`'s honcho ends each Procfile entry by signalling the entry's whole process group. A Celery
worker's pool children are in that group, so they died of the signal before their master could stop
them, and the master logged each one as an error ("exited with 'signal 15 (SIGTERM)'"), which is what a
user saw after every Ctrl-C. Signalled alone, the master stops its pool itself, quietly. CMD dies with
this process if it is killed outright (honcho's SIGKILL after its grace), so nothing is left behind.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def exit_status(returncode: int) -> int:
    """The shell's convention: a child ended by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m workers.supervised COMMAND [ARG ...]", file=sys.stderr)
        return 2
    child = subprocess.Popen(argv, process_group=0, preexec_fn=die_with_parent)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _frame: child.send_signal(received))
    return exit_status(child.wait())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
