"""Organization roles and what each may do. Pure: the views ask `can(role, action)`."""

OWNER, ADMIN, MEMBER, VIEWER = "owner", "admin", "member", "viewer"
ROLES = (OWNER, ADMIN, MEMBER, VIEWER)
ROLE_CHOICES = [(OWNER, "Owner"), (ADMIN, "Admin"), (MEMBER, "Member"), (VIEWER, "Viewer")]

# Each action lists the roles allowed to perform it.
PERMISSIONS = {
    "view": {OWNER, ADMIN, MEMBER, VIEWER},
    "manage_sites": {OWNER, ADMIN, MEMBER},   # add, edit, delete sites; run audits
    "run_audits": {OWNER, ADMIN, MEMBER},
    # A PDF of what the role can already see: the report an agency's client (a viewer) asks for most.
    "request_reports": {OWNER, ADMIN, MEMBER, VIEWER},
    "manage_members": {OWNER, ADMIN},         # invite, change roles, remove members
    "manage_org": {OWNER, ADMIN},             # name, custom CA, schedules, alerts
    # webhook URLs (a Slack or Teams URL is itself the credential) and alert recipients: not for a client
    "see_alert_targets": {OWNER, ADMIN, MEMBER},
    "delete_org": {OWNER},
    "view_audit_log": {OWNER},                # who signed in, changed roles, deleted sites, …
}


def lesser(first: str, second: str) -> str:
    """The role that may do less of the two (ROLES runs from most to least)."""
    return max(first, second, key=ROLES.index)


def can(role: str | None, action: str) -> bool:
    return role in PERMISSIONS[action]


def can_assign(actor_role: str, new_role: str) -> bool:
    """Admins manage members and viewers; only owners create or demote owners and admins."""
    if actor_role == OWNER:
        return new_role in ROLES
    if actor_role == ADMIN:
        return new_role in (MEMBER, VIEWER)
    return False
