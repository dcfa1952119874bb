"""The scale tests' clock: their history starts here (tests/perf/conftest.py)."""

from datetime import datetime, timezone

T0 = datetime(2026, 2, 1, 2, 0, tzinfo=timezone.utc)
