"""Monitoring fixtures: finished audits built from factory facts (no network), at chosen times."""

import pytest

from tests.support.audits import finished_audit


@pytest.fixture
def done_audit():
    """done_audit(site, at=datetime, trigger="schedule", **make_facts kwargs) -> a graded, finished Audit."""
    return finished_audit
