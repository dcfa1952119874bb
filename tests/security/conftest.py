"""Fixtures of the security tests: the other roles of Agency A, and a log reader."""

import pytest

from tests.support.audits import finished_audit
from tests.support.personas import make_user


@pytest.fixture
def done_audit():
    """done_audit(site, at=datetime, **make_facts kwargs) -> a graded, finished Audit (no network)."""
    return finished_audit


@pytest.fixture
def dora(org_a):
    """Dora is an admin of Agency A."""
    from tlsaudit.orgs.models import Membership

    user = make_user("dora@agency-a.test", full_name="Dora Admin")
    Membership.objects.create(organization=org_a, user=user, role="admin")
    return user


@pytest.fixture
def mel(org_a):
    """Mel is a member of Agency A."""
    from tlsaudit.orgs.models import Membership

    user = make_user("mel@agency-a.test", full_name="Mel Member")
    Membership.objects.create(organization=org_a, user=user, role="member")
    return user


@pytest.fixture
def log_of():
    """log_of(action) -> the audit-log entries of that action, oldest first."""
    from tlsaudit.core.models import AuditLogEntry

    return lambda action: list(AuditLogEntry.objects.filter(action=action).order_by("created_at", "id"))
