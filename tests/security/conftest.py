"""Fixtures of the security tests: the other roles of Agency A, and a log reader."""

import pytest

from tests.alerts.conftest import webhook_receiver  # noqa: F401  (a real HTTP receiver on 127.0.0.1)
from tests.conftest import make_user
from tests.monitoring.conftest import done_audit  # noqa: F401  (graded audits from factory facts)
from tests.reports.conftest import no_chromium_left  # noqa: F401  (no Chromium may outlive a test)


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
