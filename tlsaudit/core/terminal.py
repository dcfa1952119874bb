"""What the measuring commands (`loadtest`, `overhead`, `handshakes`) tell a person at a terminal.

- `startup_s()`: how long this process took to get from exec() to its first measurement (Python,
  settings, our imports). Reported apart from every figure, which it is not part of.
- `Progress`: ab's heartbeat ("Completed 100 requests" at every tenth of the work) on stderr, only when
  stderr is a terminal and the output is not JSON: a pipe or a script gets the result and nothing else.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

# The SSRF guard's refusal, at a terminal: the person may be testing their own machine on purpose.
PRIVATE_TARGET_HINT = ("To test a server on this machine or your own network, "
                       "set TLSAUDIT_ALLOW_PRIVATE_TARGETS=1 (never on a public deployment).")


def failure_text(code: str, message: str) -> str:
    """A command's error message; a refused loopback/private target says which variable allows it."""
    return f"{message} {PRIVATE_TARGET_HINT}" if code == "private_target" else message


def process_age_s() -> float | None:
    """Seconds since this process was started, from /proc (Linux; clock ticks of 10 ms); None elsewhere."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])   # field 22 of stat(5), counted after the ")" that ends comm
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime_s - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def startup_s() -> float | None:
    """The process's own start-up so far (call it just before the first measurement)."""
    age = process_age_s()
    return round(age, 3) if age is not None else None


def startup_line(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"Start-up:               {seconds:.3f} seconds (process start to the first measurement; in no figure)"


class Progress:
    """ab's heartbeat: "Completed N <unit>" at each tenth of `total`, then "Finished N <unit>".
    Silent unless `enabled` (a terminal on stderr, no --json)."""

    def __init__(self, stream, enabled: bool, unit: str = "requests"):
        self.stream, self.enabled, self.unit = stream, enabled, unit
        self.shown = 0           # tenths already printed
        self.started = time.monotonic()

    @classmethod
    def for_command(cls, command, as_json: bool, unit: str = "requests") -> "Progress":
        stream = command.stderr
        return cls(stream, enabled=not as_json and stream.isatty(), unit=unit)

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        tenths = min(10, done * 10 // total)
        while self.shown < tenths:
            self.shown += 1
            if self.shown < 10:
                self.line(f"Completed {total * self.shown // 10} {self.unit}")

    def note(self, text: str) -> None:
        """A line of its own (e.g. which run of a sweep starts), on the same terms."""
        if self.enabled:
            self.line(text)

    def finish(self, done: int) -> None:
        if self.enabled:
            self.line(f"Finished {done} {self.unit} in {time.monotonic() - self.started:.1f} s")

    def line(self, text: str) -> None:
        if hasattr(self.stream, "style_func"):   # Django's OutputWrapper: no ERROR red on a heartbeat
            self.stream.write(text, style_func=str)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
