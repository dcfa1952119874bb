"""What each organization role may do: tlsaudit.domain.roles, tested as tables (pure, no database)."""

import pytest

from tlsaudit.domain import roles
from tlsaudit.domain.roles import ADMIN, MEMBER, OWNER, VIEWER

# role -> the actions it may perform; every other action is refused.
ALLOWED = {
    OWNER: {"view", "manage_sites", "run_audits", "manage_members", "manage_org", "delete_org", "view_audit_log",
            "see_alert_targets", "request_reports"},
    ADMIN: {"view", "manage_sites", "run_audits", "manage_members", "manage_org", "see_alert_targets",
            "request_reports"},
    MEMBER: {"view", "manage_sites", "run_audits", "see_alert_targets", "request_reports"},
    VIEWER: {"view", "request_reports"},
}
ACTIONS = sorted(roles.PERMISSIONS)

# actor role -> the roles it may give to (or take from) someone.
ASSIGNABLE = {
    OWNER: {OWNER, ADMIN, MEMBER, VIEWER},
    ADMIN: {MEMBER, VIEWER},
    MEMBER: set(),
    VIEWER: set(),
}


def test_it_knows_exactly_the_actions_this_table_covers():
    assert set(ACTIONS) == {"view", "manage_sites", "run_audits", "manage_members", "manage_org", "delete_org",
                            "view_audit_log", "see_alert_targets", "request_reports"}
    assert set(roles.ROLES) == set(ALLOWED) == {value for value, _label in roles.ROLE_CHOICES}


@pytest.mark.parametrize("role", roles.ROLES)
@pytest.mark.parametrize("action", ACTIONS)
def test_it_allows_each_role_exactly_its_actions(role, action):
    assert roles.can(role, action) is (action in ALLOWED[role])


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("outsider", [None, "", "superuser", "OWNER"])
def test_it_allows_nothing_to_someone_without_a_known_role(outsider, action):
    # charlie has no membership in agency A: his role there is None.
    assert roles.can(outsider, action) is False


def test_it_fails_loudly_on_an_action_nobody_defined():
    with pytest.raises(KeyError):
        roles.can(OWNER, "launch_missiles")


@pytest.mark.parametrize("actor", roles.ROLES)
@pytest.mark.parametrize("new_role", roles.ROLES)
def test_it_lets_each_role_assign_exactly_the_roles_below_it(actor, new_role):
    assert roles.can_assign(actor, new_role) is (new_role in ASSIGNABLE[actor])


@pytest.mark.parametrize("actor", [OWNER, ADMIN])
def test_it_refuses_to_assign_a_role_that_does_not_exist(actor):
    assert roles.can_assign(actor, "emperor") is False
    assert roles.can_assign(None, MEMBER) is False
