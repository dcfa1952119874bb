from django.utils import timezone

from tlsaudit.api import keys
from tlsaudit.api.models import ApiKey


def live_keys_of(user, org):
    """The keys `user` created in `org` that still work."""
    return ApiKey.objects.filter(organization=org, created_by=user, revoked_at__isnull=True)


def revoke_keys_of(user, org) -> list[ApiKey]:
    """Revoke the keys `user` created in `org` (they leave it: their keys go with them); the revoked."""
    keys_ = list(live_keys_of(user, org))
    ApiKey.objects.filter(pk__in=[key.pk for key in keys_]).update(revoked_at=timezone.now())
    return keys_


def create_key(org, *, name: str, scope: str, created_by=None, rate_per_minute: int | None = None):
    """(row, plaintext): the plaintext exists only in the caller's hands from here on."""
    new = keys.generate(scope)
    key = ApiKey.objects.create(organization=org, name=name, scope=scope, rate_per_minute=rate_per_minute,
                                lookup=new.lookup, digest=new.digest, created_by=created_by)
    return key, new.plaintext
