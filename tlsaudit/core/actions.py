"""The audit log's actions and their labels: plain data, so both the model (labels) and the
writer (core.auditlog) can import it without importing each other."""

ACTIONS = {
    "user.login": "Signed in",
    "user.login_failed": "Failed sign-in",
    "user.locked_out": "Locked out after failed sign-ins",
    "user.logout": "Signed out",
    "user.password_changed": "Password changed",
    "user.password_reset_requested": "Password reset requested",
    "user.password_reset": "Password reset",
    "member.invited": "Member invited",
    "member.invitation_revoked": "Invitation revoked",
    "member.joined": "Invitation accepted",
    "member.role_changed": "Member role changed",
    "member.removed": "Member removed",
    "org.created": "Organization created",
    "org.settings_changed": "Organization settings changed",
    "site.deleted": "Site deleted",
    "audits.waiting_cancelled": "Audits waiting for a free slot cancelled",
    "report.requested": "Digest sent now",
    "webhook.created": "Webhook created",
    "webhook.deleted": "Webhook deleted",
    "api_key.created": "API key created",
    "api_key.revoked": "API key revoked",
}


# Account events (sign-in, password) carry no organization; an owner sees those of the org's members.
ACCOUNT_ACTIONS = ("user.login", "user.login_failed", "user.locked_out", "user.logout",
                   "user.password_changed", "user.password_reset_requested", "user.password_reset")


def action_label(action: str) -> str:
    return ACTIONS.get(action, action)
