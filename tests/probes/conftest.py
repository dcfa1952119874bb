"""The browser-probe tests' own fixture: a marker in the environment of every process a test starts, so its
Chromium processes can be counted (tests/support/probes.py)."""

import uuid

import pytest

from tests.support.probes import MARKER


@pytest.fixture(autouse=True)
def chromium_marker(monkeypatch):
    """Every process started from here on inherits this test's marker in its environment, so the
    Chromium processes it starts can be found even after they were re-parented."""
    token = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, token)
    return token
