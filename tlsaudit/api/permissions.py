from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from tlsaudit.api import context
from tlsaudit.api.models import ApiKey
from tlsaudit.domain import roles


class ReadOnlyKey(exceptions.PermissionDenied):
    default_detail = "This key is read-only: create a read-write key in the dashboard to make changes."
    default_code = "read_only_key"


class OrgRolePermission(BasePermission):
    """Reads need membership; writes need a read-write key (or session role) allowing the
    view's `write_action` (a key in roles.PERMISSIONS, default "manage_sites")."""

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        org = context.resolve(request)
        if request.method in SAFE_METHODS:
            return True
        if isinstance(request.auth, ApiKey) and request.auth.read_only:
            raise ReadOnlyKey()
        action = getattr(view, "write_action", "manage_sites")
        if not roles.can(org.role, action):
            raise exceptions.PermissionDenied(f"Your role ({org.role}) cannot do this.")
        return True
