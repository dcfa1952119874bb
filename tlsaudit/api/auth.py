"""Who is calling, and for which organization.

A key belongs to one organization: read-write keys act with the admin role (everything except
member management and deleting the organization), read-only keys with the viewer role. A
dashboard session acts with the user's own role in the organization named by `X-Organization`
(its slug), or else the one they last used.
"""

from datetime import timedelta

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header

from tlsaudit.api import keys
from tlsaudit.api.models import ApiKey
from tlsaudit.domain import roles
from tlsaudit.orgs.models import Membership

LAST_USED_RESOLUTION = timedelta(minutes=1)   # one UPDATE a minute per key, not one per request


class KeyPrincipal:
    """Stands in for `request.user` when a key authenticates: keys are not people."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = is_superuser = False
    pk = id = None

    def __init__(self, key: ApiKey):
        self.key = key
        self.email = f"API key “{key.name}” ({key.display_prefix}…)"

    def __str__(self):
        return self.email


class ApiKeyAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Send the key as `Authorization: Bearer <key>`.")
        plaintext = header[1].decode("latin-1")
        key = find_key(plaintext)
        touch(key)
        return KeyPrincipal(key), key

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class CsrfSessionAuthentication(SessionAuthentication):
    """The dashboard's own calls: the session cookie plus Django's CSRF check on writes."""


def find_key(plaintext: str) -> ApiKey:
    parsed = keys.parse(plaintext)
    key = None
    if parsed:
        key = ApiKey.objects.select_related("organization").filter(lookup=parsed[1]).first()
    if key is None or not keys.matches(plaintext, key.digest):
        raise exceptions.AuthenticationFailed("This API key is not valid.")
    if not key.is_active:
        raise exceptions.AuthenticationFailed("This API key was revoked.")
    return key


def touch(key: ApiKey) -> None:
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now


def role_of_key(key: ApiKey) -> str:
    """A read-only key acts as a viewer, a read-write one as an admin, but never as more than its creator
    may do now: an admin demoted to viewer leaves keys that only read. A key whose creator left (kept by
    an owner or admin when removing them) acts with its scope's role."""
    scope_role = roles.VIEWER if key.read_only else roles.ADMIN
    if key.created_by_id is None:
        return scope_role
    creator_role = (Membership.objects.filter(organization_id=key.organization_id, user_id=key.created_by_id)
                    .values_list("role", flat=True).first())
    return roles.lesser(scope_role, creator_role) if creator_role else scope_role
