"""This machine's process table, read from /proc, for the tests that count the processes a test left."""

import os
from pathlib import Path


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        table[int(entry.name)] = (int(stat[stat.rindex(")") + 2:].split()[1]), stat[stat.index("(") + 1:stat.rindex(")")])
    return table
