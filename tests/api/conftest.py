"""API personas: a read-write and a read-only key of Agency A, a read-write key of Agency B."""

import pytest

from tests.support.api import client_with, make_key
from tlsaudit.api import keys


@pytest.fixture
def rw_key(org_a):
    return make_key(org_a, keys.READ_WRITE, "agency-a write")


@pytest.fixture
def ro_key(org_a):
    return make_key(org_a, keys.READ_ONLY, "agency-a read")


@pytest.fixture
def api(rw_key):
    """Agency A with a read-write key."""
    return client_with(rw_key[1])


@pytest.fixture
def api_ro(ro_key):
    """Agency A with a read-only key."""
    return client_with(ro_key[1])


@pytest.fixture
def api_b(org_b):
    """Agency B with a read-write key: every Agency A object must answer 404 to it."""
    return client_with(make_key(org_b, keys.READ_WRITE, "agency-b write")[1])
