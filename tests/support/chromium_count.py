"""Chromium processes below this test process: descendants whose command name starts with "chrom"
(Playwright's driver is our child, Chromium its child), as tests/e2e/conftest.py counts them."""

import os
import re

from tests.support.processes import process_table


def chromium_processes() -> list[int]:
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        if re.match(r"chrom", table[pid][1]):
            found.append(pid)
        stack.extend(children.get(pid, []))
    return sorted(found)
