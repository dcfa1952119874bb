"""One Redis database and one var/ folder per pytest-xdist worker (saleor's habit: a cache prefix per worker).

Loaded with `-p tests.support.worker_env` (pyproject.toml's addopts), so it runs before pytest-django
reads the Django settings, which take REDIS_URL and TLSAUDIT_VAR_DIR from the environment. PostgreSQL
needs nothing here: pytest-django already gives worker gwN its own test database (test_tlsaudit_gwN).

Worker gwN uses Redis database `base - WORKER_DB_OFFSET - N` (the Makefile's 15 gives gw0 11, gw1 10),
so two workers never purge each other's queues or reset each other's rate limits, and `make bench`
(database 14) and a run outside xdist (15) keep theirs.
"""

from __future__ import annotations

import os
import re

WORKER_DB_OFFSET = 4
MAX_WORKERS = 8


def worker_number(name: str | None) -> int | None:
    """"gw3" -> 3; None outside xdist (or for the controller)."""
    match = re.fullmatch(r"gw(\d+)", name or "")
    return int(match.group(1)) if match else None


def redis_url_for(url: str, number: int) -> str:
    """The same server with the worker's own database number."""
    match = re.fullmatch(r"(redis://[^/]+)(?:/(\d+))?", url)
    if not match:
        raise ValueError(f"REDIS_URL {url!r}: expected redis://host:port/db")
    database = int(match.group(2) or 0) - WORKER_DB_OFFSET - number
    if database < 0:
        raise ValueError(f"REDIS_URL {url!r} leaves no database for xdist worker gw{number}: use /15")
    return f"{match.group(1)}/{database}"


def isolate_worker(environ=os.environ) -> None:
    number = worker_number(environ.get("PYTEST_XDIST_WORKER"))
    if number is None:
        return
    if number >= MAX_WORKERS:
        raise ValueError(f"at most {MAX_WORKERS} xdist workers (each needs its own Redis database)")
    if environ.get("REDIS_URL"):
        environ["REDIS_URL"] = redis_url_for(environ["REDIS_URL"], number)
    if environ.get("TLSAUDIT_VAR_DIR"):
        environ["TLSAUDIT_VAR_DIR"] = os.path.join(environ["TLSAUDIT_VAR_DIR"], f"gw{number}")


isolate_worker()
